/**
 * Stateless scoring has its own sandbox: a client's batch of runaway code in POST /score queues
 * behind itself, and an episode's tool call made meanwhile runs at once and correctly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import jsCode from "../../envs/js-code/index.ts";
import { TASKS } from "../../envs/js-code/tasks.ts";
import mathTools from "../../envs/math-tools/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { post } from "../helpers/http.ts";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer([mathTools, jsCode], { port: 0 });
});
afterAll(() => server?.close());

describe("sandbox fairness", () => {
  it("keeps an episode's tool call out of the queue of a /score flood", async () => {
    const fizz = TASKS.find((t) => t.id === "fizzbuzz")!;
    const loop = "```javascript\nfunction fizzBuzz(n) { while (true) {} }\n```";
    // Four runs at their 1.5 s limit on the run clock (QuickJS, the default, counts the time a run
    // ran, not the time it waited for a CPU: on a loaded machine each takes several times that).
    const flood = post(`${server.url}/envs/js-code/score`, {
      items: Array.from({ length: 4 }, () => ({ completion: loop, info: { task_id: fizz.id }, args: { timeout_ms: 1500 } })),
    });
    await new Promise((r) => setTimeout(r, 200)); // the flood holds every scoring slot now
    const reset = await post(`${server.url}/envs/math-tools/reset`, { seed: 1 });
    const step = await post(`${server.url}/envs/math-tools/step`, {
      episode_id: reset.body.episode_id,
      action: { content: null, tool_calls: [{ id: "t", type: "function", function: { name: "javascript", arguments: JSON.stringify({ code: "1 + 1" }) } }] },
    });
    expect(step.status).toBe(200);
    expect(step.body.observation.messages[0].content).not.toMatch(/^Error/);
    expect(step.body.observation.messages[0].content).toMatch(/2/);
    const scored = await flood;
    expect(scored.status).toBe(200);
    for (const r of scored.body.results) expect(r.reward).toBe(0);
  }, 180_000);
});
