/**
 * Hostile model code against a live server, on both Node sandboxes: code that makes V8 abort,
 * memory bombs, type stripping that takes exponential time, and a flood of runaway tool calls.
 * Each attack must cost its own run (ok:false, a tool error, a reward of 0) and nothing else:
 * the server's process stays up and a probe playing reverse-text is served within a second
 * throughout (test/helpers/hostile.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectServed, startLiveServer, underAttack, type LiveServer } from "../helpers/hostile.ts";

const rpc = (s: LiveServer, env: string, name: string, args: unknown) =>
  fetch(`${s.url}/envs/${env}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", ...s.headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

const json = (s: LiveServer, path: string, body: unknown) =>
  fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...s.headers }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.status, body: (await r.json()) as any }),
  );

const toolCall = (id: string, code: string, typescript = false) => ({
  id,
  type: "function",
  function: { name: "javascript", arguments: JSON.stringify(typescript ? { code, typescript } : { code }) },
});

/** The line that made V8 abort the whole process (`Fatal JavaScript invalid size error`). */
const FATAL = `"x".repeat(2**27).split("")`;
/** Each run grew RSS by ~1.5 GB that was never given back. */
const REGEX_BOMB = `'x'.repeat(2**27).match(/x/g).length`;
/** Type stripping of nested generics that backtracks: quadratic to exponential in the input. */
const TS_BOMB = "let v = " + "a<a<".repeat(24_000) + "a";

for (const backend of ["isolated-vm", "quickjs"] as const) {
  describe(`hostile model code on ${backend}`, () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLiveServer({ ENVWORKER_SANDBOX: backend });
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
    });

    it("a line that makes V8 abort costs its own run: MCP tool call, episode tool call, js-code answer through /score", async () => {
      const outcome = await underAttack(server, async () => {
        const mcp = await rpc(server, "math-tools", "javascript", { code: FATAL });
        const reset = await json(server, "/envs/math-tools/reset", { seed: 1 });
        const step = await json(server, "/envs/math-tools/step", { episode_id: reset.body.episode_id, action: { content: null, tool_calls: [toolCall("c1", FATAL)] } });
        const score = await json(server, "/envs/js-code/score", { items: [{ completion: "```javascript\n" + FATAL + ";\nfunction fizzbuzz(n) { return []; }\n```", answer: "fizzbuzz" }] });
        return { mcp, step, score };
      });
      expectServed(`${backend}: fatal V8 error`, outcome, { maxRssGrowthMiB: 600 });
      const { mcp, step, score } = outcome.result;
      expect(mcp.status).toBe(200);
      expect(mcp.body.result.isError).toBe(true);
      expect(step.status).toBe(200);
      expect(step.body.observation.messages[0].content).toMatch(/^Error:/);
      expect(score.status).toBe(200);
      expect(score.body.results[0].reward).toBe(0);
    });

    it("memory bombs end as errors, their memory is returned, and SIGTERM still stops the server", async () => {
      const own = await startLiveServer({ ENVWORKER_SANDBOX: backend });
      try {
        const outcome = await underAttack(own, async () => {
          const results = [];
          for (let i = 0; i < 4; i++) results.push(await rpc(own, "math-tools", "javascript", { code: REGEX_BOMB }));
          return results;
        });
        // Four runs that each grew the process by ~1.5 GB before: now bounded by the sandbox's limit.
        expectServed(`${backend}: regex memory bomb × 4`, outcome, { maxRssGrowthMiB: 600 });
        for (const r of outcome.result) {
          expect(r.body.result.isError).toBe(true);
          expect(r.body.result.content[0].text).toMatch(/^Error:|MemoryLimitError|TimeoutError|memory|timed out/i);
        }
        const after = await rpc(own, "math-tools", "javascript", { code: "1 + 1" });
        expect(after.body.result).toMatchObject({ isError: false });
      } finally {
        // Before, only SIGKILL stopped a server after these runs; now it ends by itself.
        expect(await own.stop()).not.toBe("SIGKILL");
      }
    }, 120_000);

    it("TypeScript whose type stripping backtracks costs its own run, not the event loop", async () => {
      const outcome = await underAttack(server, async () => {
        const tool = await rpc(server, "math-tools", "javascript", { code: TS_BOMB, typescript: true });
        const score = await json(server, "/envs/js-code/score", { items: [{ completion: "```ts\n" + TS_BOMB + "\n```", answer: "fizzbuzz", args: { language: "typescript" } }] });
        return { tool, score };
      });
      expectServed(`${backend}: type-stripping bomb`, outcome);
      expect(outcome.result.tool.status).toBe(200);
      expect(outcome.result.tool.body.result.isError).toBe(true);
      expect(outcome.result.score.status).toBe(200);
      expect(outcome.result.score.body.results[0].reward).toBe(0);
    });

    it("a tool call cannot read another client's tests back from the sandbox's memory", async () => {
      // On QuickJS, a growable SharedArrayBuffer grown past its 16 bytes was the wasm heap: a
      // math-tools tool call read the expected values of a js-code /score another client had just
      // sent (3 rounds of 4), from what that grading run left on the same instance.
      const marker = `Q${Math.random().toString(36).slice(2, 12)}`;
      const scan = `const want = "${marker.slice(0, 3)}" + "${marker.slice(3)}"; let found = "nothing";
        for (const make of [() => new SharedArrayBuffer(16, { maxByteLength: 2 ** 23 }), () => new ArrayBuffer(16, { maxByteLength: 2 ** 23 })]) {
          const b = make(); try { (b.grow || b.resize).call(b, 2 ** 23); } catch (e) {}
          const u = new Uint8Array(b); let s = "";
          for (let i = 0; i < u.length; i += 32768) s += String.fromCharCode.apply(null, u.subarray(i, i + 32768));
          const k = s.indexOf(want); if (k >= 0) found = s.slice(k, k + 40);
        }
        found`;
      const tests = Array.from({ length: 50 }, (_, i) => ({ args: [i], expected: `${marker}-${i}-expected` }));
      const outcome = await underAttack(server, async () => {
        const read: string[] = [];
        for (let round = 0; round < 4; round++) {
          const victim = await json(server, "/envs/js-code/score", { items: [{ completion: "```javascript\nfunction f(x) { return x; }\n```", info: { function_name: "f", tests } }] });
          expect(victim.status).toBe(200);
          const attacker = await rpc(server, "math-tools", "javascript", { code: scan });
          read.push(JSON.stringify(attacker.body));
        }
        return read;
      });
      expectServed(`${backend}: reading another client's tests`, outcome);
      for (const text of outcome.result) expect(text).not.toContain(marker);
    });

    it("12 runaway tool calls in one step do not delay another episode's `1 + 1` as a queue would", async () => {
      // 12 calls of 2 s on 2 sandbox slots keep the flood busy for 6 rounds. Slots go to episodes
      // in turn, so the other episode's call waits for about one round (and a sandbox restart
      // after a killed run); first come, first served would put it behind the 10 queued calls, 5
      // rounds. Both are measured here, in the same run: measured under load 17, ~0.25 and ~0.85
      // of the flood's time.
      const flood = (async () => {
        const reset = await json(server, "/envs/math-tools/reset", { seed: 2 });
        const calls = Array.from({ length: 12 }, (_, i) => toolCall(`spin${i}`, "while (true) {}"));
        const started = performance.now();
        const step = await json(server, "/envs/math-tools/step", { episode_id: reset.body.episode_id, action: { content: null, tool_calls: calls } });
        return { step, ms: performance.now() - started };
      })();
      const outcome = await underAttack(server, async () => {
        // Another client's episode, once the flood is queued.
        await new Promise((r) => setTimeout(r, 200));
        const reset = await json(server, "/envs/math-tools/reset", { seed: 3 });
        const started = performance.now();
        const step = await json(server, "/envs/math-tools/step", { episode_id: reset.body.episode_id, action: { content: null, tool_calls: [toolCall("add", "1 + 1")] } });
        return { step, ms: performance.now() - started };
      });
      expectServed(`${backend}: 12 runaway tool calls`, outcome);
      const victim = outcome.result.step;
      expect(victim.status).toBe(200);
      expect(victim.body.observation.messages[0].content).not.toMatch(/^Error/);
      expect(victim.body.observation.messages[0].content).toContain("2");
      const spun = await flood;
      expect(spun.step.status).toBe(200);
      expect(spun.step.body.observation.messages).toHaveLength(12);
      for (const m of spun.step.body.observation.messages) expect(m.content).toMatch(/^Error:.*(timed out|TimeoutError)/i);
      console.log(`[hostile] ${backend}: the other episode's call took ${outcome.result.ms.toFixed(0)} ms, the flood ${spun.ms.toFixed(0)} ms`);
      expect(outcome.result.ms / spun.ms, `the other episode's call took ${outcome.result.ms.toFixed(0)} ms, the flood ${spun.ms.toFixed(0)} ms`).toBeLessThan(0.6);
    }, 180_000);
  });
}
