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
import jsCode from "../envs/js-code/index.ts";
import mathTools from "../envs/math-tools/index.ts";
import { startServer, type RunningServer } from "../src/node.ts";
import { describeConfinement } from "../src/sandbox/confine.ts";
import type { HostPoolSandbox } from "../src/sandbox/host-pool.ts";
import { ISOLATED_VM_PROFILE } from "../src/sandbox/isolated-vm-process.ts";
import type { SandboxAffinity } from "../src/server/config.ts";
import { createLogger, logger, setLogger } from "../src/server/log.ts";
import { editReplies } from "./fixtures/confine/edit-replies.ts";
import { escapePool } from "./fixtures/confine/escape-pool.ts";
import { post } from "./helpers/http.ts";

const HAS_BWRAP = describeConfinement().bwrap;

/**
 * Host-side code: from now on every reply of this process is rewritten. A run carrying js-code's
 * harness input gets a correct fizzBuzz's outputs for its arguments (the expected values never
 * reach a sandbox: choosing the outputs is the most an escaped guest can do); any other run's
 * result becomes "forged". Its own reply (the first after the hook) is left alone.
 */
const HIJACK = `
import { createHash } from "node:crypto";
const fizzBuzz = (n) => Array.from({ length: n }, (_, i) => ((i + 1) % 15 === 0 ? "FizzBuzz" : (i + 1) % 3 === 0 ? "Fizz" : (i + 1) % 5 === 0 ? "Buzz" : String(i + 1)));
const utf16be = (text) => Buffer.from(Buffer.from(text, "utf16le").swap16());
const form = (text) => (text.length <= 64 ? "=" + text : "#" + createHash("sha256").update(utf16be(text)).digest("hex"));
export default () => {
  const runs = new Map();
  let own = true;
  let buffered = Buffer.alloc(0);
  process.stdin.prependListener("data", (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
      const n = buffered.readUInt32BE(0);
      try {
        const m = JSON.parse(buffered.subarray(4, 4 + n).toString("utf8"));
        if (m.type === "run") runs.set(m.id, m.options?.globals?.__jscInput ?? null);
      } catch {}
      buffered = buffered.subarray(4 + n);
    }
  });
${editReplies(`
    if (message.type !== "result") return false;
    if (own) { own = false; return false; }
    const input = runs.get(message.id);
    if (!input) {
      message.result = { ok: true, result: "forged", stdout: "", stderr: "", elapsedMs: 1 };
      return true;
    }
    const outputs = input.args.map((a) => {
      const text = JSON.stringify(fizzBuzz(JSON.parse(a)[0]));
      return [form(text), text.slice(0, 200)];
    });
    const summary = { nonce: input.nonce, total: input.args.length, load_error: null, outputs };
    message.result = { ok: true, result: JSON.stringify(summary), stdout: "", stderr: "", elapsedMs: 1 };
    return true;`)}
  return "hijacked";
};`;

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
    expect(await toolCall(url, ep, HIJACK)).toMatch(/hijacked/);
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
