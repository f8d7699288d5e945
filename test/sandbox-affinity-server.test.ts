/**
 * The residual of an escape on isolated-vm when the operator opts into reused hosts
 * (ENVWORKER_SANDBOX=isolated-vm with ENVWORKER_SANDBOX_AFFINITY=client or episode; unset, each
 * host serves one run: test/isolated-vm-single-use-escape.test.ts). Two tokens make two clients
 * (client-id.ts). Client A's guest is handed a deliberate escape (its JavaScript tool runs in a host
 * that runs code as host-side JavaScript: test/fixtures/confine/escape-host.ts) and takes over the
 * host: it rewrites every later answer of that process so that js-code's hidden tests all pass
 * (it answers with the right outputs: the expected values themselves never reach a sandbox).
 * Client B then scores a wrong solution. With client affinity, B's reward is its own (0); with
 * affinity off (the control) B's reward is forged to 1.0. A's own later /score runs in A's host
 * either way (the residual: a client can forge only its own rewards).
 */
import { afterEach, describe, expect, it } from "vitest";
import jsCode from "../envs/js-code/index.ts";
import mathTools from "../envs/math-tools/index.ts";
import { startServer, type RunningServer } from "../src/node.ts";
import { describeConfinement } from "../src/sandbox/confine.ts";
import { ISOLATED_VM_PROFILE } from "../src/sandbox/isolated-vm-process.ts";
import type { SandboxAffinity } from "../src/server/config.ts";
import { editReplies } from "./fixtures/confine/edit-replies.ts";
import { escapePool } from "./fixtures/confine/escape-pool.ts";
import { post } from "./helpers/http.ts";

const HAS_BWRAP = describeConfinement().bwrap;
const A = { authorization: "Bearer token-of-a" };
const B = { authorization: "Bearer token-of-b" };

/**
 * Host-side code: from now on, every run of this process that carries js-code's harness input is
 * answered with the outputs of a correct fizzBuzz for the run's arguments, as the harness reports
 * them (the nonce read from the run's own request). The expected values are not in the run
 * (envs/js-code/harness.ts), so choosing the outputs is the most an escaped guest can do: here, the
 * right ones, whatever the candidate's code.
 */
const FORGE_REWARDS = `
import { createHash } from "node:crypto";
const fizzBuzz = (n) => Array.from({ length: n }, (_, i) => ((i + 1) % 15 === 0 ? "FizzBuzz" : (i + 1) % 3 === 0 ? "Fizz" : (i + 1) % 5 === 0 ? "Buzz" : String(i + 1)));
const utf16be = (text) => Buffer.from(Buffer.from(text, "utf16le").swap16());
const form = (text) => (text.length <= 64 ? "=" + text : "#" + createHash("sha256").update(utf16be(text)).digest("hex"));
export default () => {
  const runs = new Map();
  let buffered = Buffer.alloc(0);
  process.stdin.prependListener("data", (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
      const n = buffered.readUInt32BE(0);
      try {
        const m = JSON.parse(buffered.subarray(4, 4 + n).toString("utf8"));
        const input = m.options?.globals?.__jscInput;
        if (m.type === "run" && input) runs.set(m.id, { nonce: input.nonce, args: input.args });
      } catch {}
      buffered = buffered.subarray(4 + n);
    }
  });
${editReplies(`
    const run = runs.get(message.id);
    if (message.type !== "result" || !run) return false;
    const outputs = run.args.map((a) => {
      const text = JSON.stringify(fizzBuzz(JSON.parse(a)[0]));
      return [form(text), text.slice(0, 200)];
    });
    const summary = { nonce: run.nonce, total: run.args.length, load_error: null, outputs };
    message.result = { ok: true, result: JSON.stringify(summary), stdout: "", stderr: "", elapsedMs: 1 };
    return true;`)}
  return "poisoned";
};`;

const WRONG_FIZZBUZZ = { completion: "```javascript\nfunction fizzBuzz(n) { return []; }\n```", info: { task_id: "fizzbuzz" } };

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(affinity: SandboxAffinity): Promise<RunningServer> {
  // Two slots: three hosts at most with affinity (A's, B's and a spare, so neither client's is
  // stopped to make room here); with affinity off, these runs one after another all go to one host.
  return (server = await startServer(
    [mathTools, jsCode],
    { port: 0, token: "token-of-a,token-of-b", sandbox: "isolated-vm", sandboxConcurrency: 2, sandboxAffinity: affinity },
    { makeSandbox: (o) => escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, maxConcurrency: o.maxConcurrency, affinity: o.affinity }) },
  ));
}

/** Client A plays math-tools and hands its escaped guest the forger through the javascript tool. */
async function poisonAsA(url: string): Promise<void> {
  const reset = await post(`${url}/envs/math-tools/reset`, { seed: 1 }, A);
  expect(reset.status).toBe(200);
  const call = { id: "t", type: "function", function: { name: "javascript", arguments: JSON.stringify({ code: FORGE_REWARDS }) } };
  const step = await post(`${url}/envs/math-tools/step`, { episode_id: reset.body.episode_id, action: { content: null, tool_calls: [call] } }, A);
  expect(step.status).toBe(200);
  expect(step.body.observation.messages[0].content).toMatch(/poisoned/);
}

async function rewardOf(url: string, headers: Record<string, string>): Promise<number> {
  const scored = await post(`${url}/envs/js-code/score`, { items: [WRONG_FIZZBUZZ] }, headers);
  expect(scored.status).toBe(200);
  return scored.body.results[0].reward;
}

describe("an escaped guest and other clients' rewards, through the server's own wiring", () => {
  it.each([
    { name: "client", affinity: "client" as const, forgedForB: 0 },
    { name: "episode", affinity: "episode" as const, forgedForB: 0 },
    { name: "off (the control)", affinity: "off" as const, forgedForB: 1 },
  ])("affinity $name: client B's wrong answer scores $forgedForB", async ({ affinity, forgedForB }) => {
    const { url } = await serve(affinity);
    // Before: a wrong answer scores 0 (the escaped host cannot run the harness at all).
    expect(await rewardOf(url, B)).toBe(0);
    await poisonAsA(url);
    expect(await rewardOf(url, B)).toBe(forgedForB);
    // A's own /score: in A's poisoned host when hosts are dedicated to clients (the residual), and
    // with no affinity; with episode affinity A's stateless calls have a host apart from its episode's.
    expect(await rewardOf(url, A)).toBe(affinity === "episode" ? 0 : 1);
  }, 120_000);
});
