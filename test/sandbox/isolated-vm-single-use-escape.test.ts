/**
 * "No run can change another run's outcome", for isolated-vm on Node as the server sets it up when
 * an operator chooses it (ENVWORKER_SANDBOX=isolated-vm, ENVWORKER_SANDBOX_AFFINITY unset): each
 * host process serves one run and is killed, so a guest that broke V8 owns a process no later run
 * uses. Run N of a client is handed a deliberate escape (its `javascript` tool call runs as
 * host-side JavaScript in its sandbox process: test/fixtures/confine/escape-host.ts, started
 * through the real launcher with isolated-vm's profile) and hooks every reply that process will
 * send: later tool calls answered "forged", js-code's harness runs answered with a correct
 * fizzBuzz's outputs. Run N+1 of the same client (a tool call) and its reward (a js-code /score of
 * a wrong answer) are unaffected. The control: the same with affinity "client" (the operator's
 * explicit opt-in, which the server warns about at start): both are forged.
 */
import { afterEach, describe, expect, it } from "vitest";
import jsCode from "../../envs/js-code/index.ts";
import mathTools from "../../envs/math-tools/index.ts";
import { startServer, type RunningServer } from "../../src/node/server.ts";
import { describeConfinement } from "../../src/wall/confine.ts";
import type { HostPoolSandbox } from "../../src/sandbox/host/host-pool.ts";
import { ISOLATED_VM_PROFILE } from "../../src/sandbox/engines/isolated-vm/isolated-vm-process.ts";
import type { SandboxAffinity } from "../../src/server/config.ts";
import { createLogger, logger, setLogger } from "../../src/server/log.ts";
import { escapePool } from "../fixtures/confine/escape-pool.ts";
import { forgeJsCode } from "../fixtures/confine/forge-js-code.ts";
import { post } from "../helpers/http.ts";

const HAS_BWRAP = describeConfinement().bwrap;

/** Host-side code hooking every later reply of its process: js-code's harness runs answered as a correct fizzBuzz, any other run "forged". */
const HIJACK = forgeJsCode({ forgeOthers: true });

const WRONG_FIZZBUZZ = { completion: "```javascript\nfunction fizzBuzz(n) { return []; }\n```", info: { task_id: "fizzbuzz" } };

let server: RunningServer | undefined;
const realLogger = logger();
afterEach(async () => {
  setLogger(realLogger);
  await server?.close();
  server = undefined;
});

/** A server as an operator who chose isolated-vm gets it (affinity: unset, or the opt-in), on hosts with the escape; its warnings. */
async function serve(affinity: SandboxAffinity | undefined): Promise<{ url: string; pool: () => HostPoolSandbox; warnings: string[] }> {
  const warnings: string[] = [];
  setLogger(createLogger("warn", (line) => warnings.push(line)));
  let pool: HostPoolSandbox | undefined;
  server = await startServer(
    [mathTools, jsCode],
    { port: 0, sandbox: "isolated-vm", sandboxConcurrency: 2, ...(affinity ? { sandboxAffinity: affinity } : {}) },
    {
      makeSandbox: (o) => {
        // The affinity the server chose for isolated-vm is what the escape's pool gets.
        expect(o.affinity).toBe(affinity ?? "run");
        return (pool = escapePool(ISOLATED_VM_PROFILE, { bwrap: HAS_BWRAP, maxConcurrency: o.maxConcurrency, affinity: o.affinity }));
      },
    },
  );
  return { url: server.url, pool: () => pool!, warnings };
}

/** One `javascript` tool call in an episode of this client: the tool's answer. */
async function toolCall(url: string, episode: string, code: string): Promise<string> {
  const call = { id: "t", type: "function", function: { name: "javascript", arguments: JSON.stringify({ code }) } };
  const step = await post(`${url}/envs/math-tools/step`, { episode_id: episode, action: { content: null, tool_calls: [call] } });
  expect(step.status).toBe(200);
  return step.body.observation.messages[0].content as string;
}

async function episode(url: string): Promise<string> {
  const reset = await post(`${url}/envs/math-tools/reset`, { seed: 1 });
  expect(reset.status).toBe(200);
  return reset.body.episode_id as string;
}

async function rewardOfWrongAnswer(url: string): Promise<number> {
  const scored = await post(`${url}/envs/js-code/score`, { items: [WRONG_FIZZBUZZ] });
  expect(scored.status).toBe(200);
  return scored.body.results[0].reward as number;
}

describe("isolated-vm: a guest that took over its host process, and the same client's next runs", () => {
  it.each([
    { name: "unset (single-use hosts, the default)", affinity: undefined, forged: false },
    { name: "client (the operator's opt-in; the control)", affinity: "client" as const, forged: true },
  ])("affinity $name: run N+1 and its reward forged: $forged", async ({ affinity, forged }) => {
    const { url, pool, warnings } = await serve(affinity);
    const ep = await episode(url);
    // Before: a wrong answer scores 0 (the escape host cannot run js-code's harness at all).
    expect(await rewardOfWrongAnswer(url)).toBe(0);
    // Run N: the escape, and the hook on every later reply of its process.
    expect(await toolCall(url, ep, HIJACK)).toMatch(/poisoned/);
    // Run N+1 of the same client and episode, then its reward.
    expect(await toolCall(url, ep, "export default () => 6 * 7;")).toMatch(forged ? /forged/ : /42/);
    expect(await rewardOfWrongAnswer(url)).toBe(forged ? 1 : 0);
    if (!forged) {
      // Every run had a process of its own, killed after it (not counted as a replacement).
      expect(pool().started).toBeGreaterThanOrEqual(4);
      expect(pool().replaced).toBe(0);
      expect(warnings).toEqual([]);
    } else {
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/ENVWORKER_SANDBOX_AFFINITY=client with isolated-vm: .* later runs of its own client/);
    }
  }, 180_000);
});
