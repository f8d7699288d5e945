/**
 * The residual of an escape on isolated-vm when the operator opts into reused hosts
 * (ENVWORKER_SANDBOX=isolated-vm with ENVWORKER_SANDBOX_AFFINITY=client or episode; unset, each
 * host serves one run: test/sandbox/isolated-vm-single-use-escape.test.ts). Two tokens make two clients
 * (client-id.ts). Client A's guest is handed a deliberate escape (its JavaScript tool runs in a host
 * that runs code as host-side JavaScript: test/fixtures/confine/escape-host.ts) and takes over the
 * host: it rewrites every later answer of that process so that js-code's hidden tests all pass
 * (it answers with the right outputs: the expected values themselves never reach a sandbox).
 * Client B then scores a wrong solution. With client affinity, B's reward is its own (0); with
 * affinity off (the control) B's reward is forged to 1.0. A's own later /score runs in A's host
 * either way (the residual: a client can forge only its own rewards).
 */
import { afterEach, describe, expect, it } from "vitest";
import jsCode from "../../envs/js-code/index.ts";
import mathTools from "../../envs/math-tools/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { describeConfinement } from "../../src/wall/confine.ts";
import { ISOLATED_VM_PROFILE } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import type { SandboxAffinity } from "../../src/server/config.ts";
import { escapePool } from "../fixtures/confine/escape-pool.ts";
import { forgeJsCode } from "../fixtures/confine/forge-js-code.ts";
import { post } from "../helpers/http.ts";

const HAS_BWRAP = describeConfinement().bwrap;
const A = { authorization: "Bearer token-of-a" };
const B = { authorization: "Bearer token-of-b" };

const FORGE_REWARDS = forgeJsCode();

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
