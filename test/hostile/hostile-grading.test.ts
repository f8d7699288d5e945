/**
 * Grading under attack, against a live server (issue 29): comparisons that cost more than their
 * input (py-code's stdout comparison was quadratic in a line of spaces) must not hold the
 * environment threads, and the operator's judge must be neither a relay nor an amplifier. Another
 * client (its own token) plays reverse-text throughout and must be served promptly
 * (test/helpers/hostile.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectServed, startLiveServer, underAttack, type LiveServer } from "../helpers/hostile.ts";
import { judgeEnv, startMockJudge, type MockJudge } from "../helpers/mock-judge.ts";

const PROBE_TOKEN = "grading-probe-token";
const ATTACKER_TOKEN = "grading-attacker-token";

const post = (server: LiveServer, path: string, body: unknown, token = ATTACKER_TOKEN) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.status, headers: r.headers, body: (await r.json()) as any }),
  );

/** The probe is another client: its own token (ENVWORKER_TOKEN=a,b makes each a client). */
const asProbe = (server: LiveServer): LiveServer => ({ ...server, headers: { authorization: `Bearer ${PROBE_TOKEN}` } });

describe("py-code's stdout comparison is linear", () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startLiveServer({ ENVWORKER_TOKEN: `${PROBE_TOKEN},${ATTACKER_TOKEN}` });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("eight gradings of a line of 100,000 spaces then `x`, at once, while another client's reverse-text steps are served", async () => {
    const line = " ".repeat(100_000) + "x";
    const item = (expected: string) => ({
      completion: "```python\nprint(' ' * 100000 + 'x')\n```",
      info: { tests: [{ input: "", output: expected }], timeout_ms: 5000 },
    });
    // Start the Python interpreters first: their start-up is not the attack's cost.
    const warmUp = () => post(server, "/envs/py-code/score", { items: [{ completion: "```python\nprint(1)\n```", info: { tests: [{ input: "", output: "1" }] } }] });
    const outcome = await underAttack(
      asProbe(server),
      () =>
        // Half expect the same line (its comparison also reads the expected text), half just `x`.
        Promise.all(Array.from({ length: 8 }, (_, i) => post(server, "/envs/py-code/score", { items: [item(i % 2 === 0 ? line : "x")] }))),
      { warmUp },
    );
    expectServed("py-code stdout of 100,000 spaces then x", outcome);
    for (const [i, r] of outcome.result.entries()) {
      expect(r.status).toBe(200);
      // Still graded right: the same line passes, `x` alone does not.
      expect(r.body.results[0].reward).toBe(i % 2 === 0 ? 1 : 0);
    }
  }, 180_000);
});

describe("the operator's judge is not an amplifier", () => {
  const BUDGET = 32;
  let server: LiveServer;
  let judge: MockJudge;
  beforeAll(async () => {
    judge = await startMockJudge();
    server = await startLiveServer({
      ENVWORKER_TOKEN: `${PROBE_TOKEN},${ATTACKER_TOKEN}`,
      ...judgeEnv(judge, { ENVWORKER_JUDGE_CLIENT_CALLS_PER_MIN: String(BUDGET), ENVWORKER_JUDGE_CACHE_ENTRIES: "0" }),
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await judge?.close();
  });

  it("one request of 1,024 judged items makes at most the client's budget of judge calls and is refused (429), while another client is served", async () => {
    judge.delayMs = 50; // a model takes a while to answer
    const ids = Array.from({ length: 48 }, (_, i) => `q${String(i + 1).padStart(2, "0")}`);
    // About 100 KB: the request of the issue.
    const items = Array.from({ length: 1024 }, (_, i) => ({ completion: `Explanation: guess ${i}.\nExact Answer: ${"x".repeat(40)} ${i}\nConfidence: 1%`, info: { id: ids[i % ids.length] } }));
    expect(JSON.stringify({ items }).length).toBeGreaterThan(95_000);
    const before = judge.calls.length;
    const outcome = await underAttack(asProbe(server), () => post(server, "/envs/open-qa/score", { items }));
    judge.delayMs = 0;
    expectServed("1,024 judged items in one request", outcome);
    const refused = outcome.result;
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: "CAPACITY_REACHED", details: { reason: "JUDGE_BUDGET", retry_after_s: expect.any(Number) } });
    expect(judge.calls.length - before).toBeLessThanOrEqual(BUDGET);
    // The other client's own judged items are scored: its budget is its own.
    const other = await post(server, "/envs/open-qa/score", { items: items.slice(0, 2) }, PROBE_TOKEN);
    expect(other.status).toBe(200);
    expect(other.body.results.map((r: { metrics: Record<string, number> }) => r.metrics.judge_calls)).toEqual([1, 1]);
  }, 180_000);
});
