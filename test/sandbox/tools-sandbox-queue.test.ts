/**
 * Tools that run code share one sandbox across episodes. What the tool dispatcher promises about
 * that queue: another episode's flood of runaway calls cannot time out this episode's call, a
 * tool's time limit counts its run, not its wait for a slot, and a tool that gave up (timed out,
 * caller gone) takes its runs out of the queue or stops them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../src/env/define-tool.ts";
import { callTool, runToolCalls } from "../../src/env/tool-dispatch.ts";
import { createSandbox, scopedSandbox, type RunResult, type Sandbox } from "../../src/sandbox/index.ts";
import { createJavascriptTool } from "../../src/tools/javascript.ts";

const call = (id: string, code: string) => ({ id, type: "function" as const, function: { name: "javascript", arguments: JSON.stringify({ code }) } });

describe.each(["isolated-vm", "quickjs"] as const)("tools on a shared sandbox: %s", (kind) => {
  let shared: Sandbox;
  beforeAll(async () => {
    shared = createSandbox(kind, { maxConcurrency: 1 });
    expect((await shared.run("0")).ok).toBe(true);
  });
  afterAll(() => shared.dispose());

  it("one episode's 20 runaway calls do not time out another episode's call", async () => {
    const javascript = createJavascriptTool({ timeoutMs: 300 });
    const flood = new AbortController();
    let floodDone = false;
    const floodStep = runToolCalls(
      [javascript],
      Array.from({ length: 20 }, (_, i) => call(`a${i}`, "while (true) {}")),
      { sandbox: scopedSandbox(shared, { key: "episode-a", signal: flood.signal }) },
    ).then((messages) => {
      floodDone = true;
      return messages;
    });
    const [answer] = await runToolCalls([javascript], [call("b", "1 + 1")], { sandbox: scopedSandbox(shared, { key: "episode-b" }) });
    expect(answer!.content).toBe("result: 2");
    expect(floodDone).toBe(false);
    flood.abort(new Error("episode closed"));
    const messages = await floodStep;
    expect(messages).toHaveLength(20);
    for (const m of messages) expect(m.content).toMatch(/^Error: (TimeoutError|CancelledError)/);
  });

  it("a tool's time limit counts its run, not its wait for a sandbox slot", async () => {
    const quick = defineTool({
      name: "quick",
      description: "runs 1+1",
      parameters: z.object({}),
      timeoutMs: 200,
      run: async (_, ctx) => (await ctx.sandbox!.run("1 + 1", { timeoutMs: 100 })).result,
    });
    // The only slot is busy for ~600 ms: the tool waits longer than its 200 ms limit.
    const busy = shared.run("while (true) {}", { timeoutMs: 600 });
    const outcome = await callTool(quick, {}, { sandbox: shared });
    expect(outcome).toEqual({ ok: true, content: "2" });
    expect((await busy).error?.name).toBe("TimeoutError");
  });

  it("a tool's runs count on its clock once where they overlap, for the time they ran", async () => {
    // Three runaway runs of 2 s at once on three slots: ~2 s of the tool's time, not 6 s. The limit
    // sits just under what counting each run would cost, so everything else (starting the runs, a
    // busy machine's waits between them) has ~3.9 s: 400 ms did not suffice at load ~15, nor 1.9 s
    // for QuickJS's zygotes in CI (vitest beside the Python half).
    const three = createSandbox(kind, { maxConcurrency: 3 });
    try {
      await Promise.all([0, 1, 2].map(() => three.run("0")));
      const tool = defineTool({
        name: "three",
        description: "three runs at once",
        parameters: z.object({}),
        timeoutMs: 5900,
        run: async (_, ctx) => {
          const runs = await Promise.all([0, 1, 2].map(() => ctx.sandbox!.run("while (true) {}", { timeoutMs: 2000 })));
          return runs.map((r) => r.error?.name).join(",");
        },
      });
      expect(await callTool(tool, {}, { sandbox: three })).toEqual({ ok: true, content: "TimeoutError,TimeoutError,TimeoutError" });
    } finally {
      await three.dispose();
    }
  });

  it("a tool that timed out stops its run and frees the slot", async () => {
    let seen: RunResult | undefined;
    const slow = defineTool({
      name: "slow",
      description: "spins",
      parameters: z.object({}),
      timeoutMs: 200,
      run: async (_, ctx) => {
        // Ten minutes: unless the dispatcher stops it, it holds the only slot for the rest of the test.
        seen = await ctx.sandbox!.run("while (true) {}", { timeoutMs: 600_000 });
        return "finished";
      },
    });
    expect(await callTool(slow, {}, { sandbox: shared })).toEqual({ ok: false, content: "Error: slow timed out after 200 ms" });
    expect(await shared.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
    // The run may not run longer than the tool has left: its own limit (on the run clock) ends it.
    expect(seen?.error?.name).toBe("TimeoutError");
  });

  it("a caller that gives up cancels the tool and its queued runs", async () => {
    const javascript = createJavascriptTool({ timeoutMs: 60_000 });
    const caller = new AbortController();
    const step = runToolCalls([javascript], [call("x", "while (true) {}"), call("y", "while (true) {}")], { sandbox: shared }, caller.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    caller.abort(new Error("client disconnected"));
    const messages = await step;
    for (const m of messages) expect(m.content).toBe("Error: javascript was cancelled: client disconnected");
    expect(await shared.run("1 + 1")).toMatchObject({ ok: true, result: 2 });
  });
});

describe("a tool's clock, with a sandbox whose runs end late", () => {
  it("counts runs that started together once, however late each ends (a busy machine's waits for a CPU)", async () => {
    // Three runs start together and each runs 150 ms on the run clock, but they end 150, 500 and
    // 850 ms later (waits for a CPU). Counted from their ends the spans stop overlapping (450 ms,
    // past the tool's 300); counted from their starts they are one 150 ms span.
    const late: Sandbox = {
      kind: "quickjs",
      run: async (_code, options = {}) => {
        options.onStart?.();
        const wallMs = Number(_code);
        await new Promise((resolve) => setTimeout(resolve, wallMs));
        return { ok: true, result: wallMs, stdout: "", stderr: "", elapsedMs: 150 } satisfies RunResult;
      },
      dispose: async () => {},
    };
    const three = defineTool({
      name: "three",
      description: "three runs at once",
      parameters: z.object({}),
      timeoutMs: 300,
      run: async (_, ctx) => (await Promise.all(["150", "500", "850"].map((wall) => ctx.sandbox!.run(wall)))).map((r) => r.result).join(","),
    });
    expect(await callTool(three, {}, { sandbox: late })).toEqual({ ok: true, content: "150,500,850" });
    // Runs one after another still count in full: 3 × 150 ms is past 300 ms.
    const oneByOne = defineTool({
      name: "oneByOne",
      description: "three runs in turn",
      parameters: z.object({}),
      timeoutMs: 300,
      run: async (_, ctx) => {
        for (const wall of ["150", "150", "150"]) await ctx.sandbox!.run(wall);
        return "done";
      },
    });
    expect(await callTool(oneByOne, {}, { sandbox: late })).toEqual({ ok: false, content: "Error: oneByOne timed out after 300 ms" });
  });
});
