/**
 * The host-side preparation every sandbox backend shares (src/sandbox/options.ts), in process:
 * the backends call it inside their worker threads and children, where mutation testing
 * (`npm run mutate`) cannot see it, so these units hold its limits, its refusals and its results.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { CancelledError } from "../../src/sched/limiter.ts";
import { cancelledResult, errorResult, prepareRun, queued, resolveLimits } from "../../src/sandbox/options.ts";
import { DEFAULT_LIMITS, type RunLimits, type RunOptions } from "../../src/sandbox/types.ts";

afterEach(() => vi.restoreAllMocks());

const BOUNDS: [keyof RunLimits, number, number][] = [
  ["timeoutMs", 1, 600_000],
  ["memoryMb", 8, 4096],
  ["stackKb", 16, 384],
  ["maxOutputBytes", 0, 64 * 1024 * 1024],
];

describe("resolveLimits", () => {
  it("gives the defaults for what is not set", () => {
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits({ memoryMb: undefined })).toEqual(DEFAULT_LIMITS);
  });

  it.each(BOUNDS)("takes %s exactly at its bounds [%i, %i] and refuses one past either, a fraction or a string", (key, min, max) => {
    expect(resolveLimits({ [key]: min })).toEqual({ ...DEFAULT_LIMITS, [key]: min });
    expect(resolveLimits({ [key]: max })).toEqual({ ...DEFAULT_LIMITS, [key]: max });
    for (const bad of [min - 1, max + 1, min + 0.5, String(min + 1)]) {
      expect(() => resolveLimits({ [key]: bad })).toThrow(new RangeError(`sandbox: ${key} must be an integer in [${min}, ${max}], got ${String(bad)}`));
    }
  });
});

describe("prepareRun", () => {
  it("refuses what is not a program, stdin, queue key or globals object with a TypeError naming it", () => {
    expect(() => prepareRun(42 as unknown as string)).toThrow(new TypeError("sandbox: code must be a string"));
    expect(() => prepareRun("1", { stdin: 5 as unknown as string })).toThrow(new TypeError("sandbox: stdin must be a string"));
    expect(() => prepareRun("1", { queueKey: 5 as unknown as string })).toThrow(new TypeError("sandbox: queueKey must be a string"));
    for (const globals of [[1], 5, "g"]) {
      expect(() => prepareRun("1", { globals: globals as unknown as RunOptions["globals"] })).toThrow(new TypeError("sandbox: globals must be an object"));
    }
    expect(() => prepareRun("1", { timeoutMs: 0 })).toThrow(RangeError);
  });

  it("hands the guest its globals, stdin and output caps as JSON, and the program as given", () => {
    const code = "const x: number = 1; x";
    const prepared = prepareRun(code, { globals: { a: [1] }, stdin: "in", maxOutputBytes: 10, queueKey: "k" });
    expect(prepared).toEqual({
      ok: true,
      run: {
        limits: { ...DEFAULT_LIMITS, maxOutputBytes: 10 },
        source: code, // not TypeScript unless asked
        configJson: JSON.stringify({ globals: { a: [1] }, stdin: "in", maxOutputChars: 10, maxResultChars: 10 }),
        spentMs: 0,
      },
    });
    expect(prepareRun("1").ok && JSON.parse((prepareRun("1") as { run: { configJson: string } }).run.configJson)).toEqual({
      globals: {},
      stdin: "",
      maxOutputChars: DEFAULT_LIMITS.maxOutputBytes,
      maxResultChars: DEFAULT_LIMITS.maxOutputBytes,
    });
  });

  it("strips TypeScript when asked, and a program that does not parse is the guest's error", () => {
    const prepared = prepareRun("const x: number = 1; x", { ts: true });
    expect(prepared.ok && prepared.run.source.trim()).toBe("const x = 1; x");
    const bad = prepareRun("const x: = ;", { ts: true });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.result).toMatchObject({ ok: false, result: null, stdout: "", stderr: "", error: { name: "SyntaxError" } });
  });

  it("counts the time stripping took against the time limit: all of it is a timeout", () => {
    const clock = vi.spyOn(performance, "now");
    clock.mockReturnValueOnce(100).mockReturnValueOnce(104);
    const within = prepareRun("1", { ts: true, timeoutMs: 5 });
    expect(within.ok && within.run.spentMs).toBe(4);
    clock.mockReturnValueOnce(100).mockReturnValueOnce(105);
    expect(prepareRun("1", { ts: true, timeoutMs: 5 })).toEqual({
      ok: false,
      result: {
        ok: false,
        result: null,
        stdout: "",
        stderr: "",
        error: { name: "TimeoutError", message: "execution exceeded the time limit of 5 ms (stripping the TypeScript types took all of it)" },
        elapsedMs: 5,
      },
    });
  });
});

describe("results of runs that did not finish", () => {
  it("errorResult: no output unless given", () => {
    expect(errorResult("E", "m", 3)).toEqual({ ok: false, result: null, stdout: "", stderr: "", error: { name: "E", message: "m" }, elapsedMs: 3 });
    expect(errorResult("E", "m", 3, "o", "e")).toMatchObject({ stdout: "o", stderr: "e" });
  });

  it("cancelledResult: the queue's reason, or why the running run's signal aborted", () => {
    const cancelled = (message: string, elapsedMs = 0) => errorResult("CancelledError", message, elapsedMs);
    expect(cancelledResult(new CancelledError("left the queue"), 7)).toEqual(cancelled("left the queue", 7));
    expect(cancelledResult(AbortSignal.abort(new Error("client gone")), 2)).toEqual(cancelled("the run was cancelled while running: client gone", 2));
    expect(cancelledResult(AbortSignal.abort("deadline"))).toEqual(cancelled("the run was cancelled while running: deadline"));
    expect(cancelledResult(AbortSignal.abort(42))).toEqual(cancelled("the run was cancelled while running: its caller gave up"));
    expect(cancelledResult(undefined)).toEqual(cancelled("the run was cancelled while running: its caller gave up"));
  });

  it("queued: runs under the run's key and signal, starts its clock when it leaves the queue, and turns a cancelled wait into a result", async () => {
    const signal = new AbortController().signal;
    const seen: unknown[] = [];
    const onStart = vi.fn();
    const ok = errorResult("X", "ran", 1);
    const limiter = { run: <T>(task: () => Promise<T>, options: unknown) => (seen.push(options), task()) };
    await expect(queued(limiter, { queueKey: "k", signal, onStart }, async () => (expect(onStart).toHaveBeenCalledTimes(1), ok))).resolves.toBe(ok);
    expect(seen).toEqual([{ key: "k", signal }]);
    const refusing = (err: Error) => ({ run: async () => Promise.reject(err) });
    await expect(queued(refusing(new CancelledError("gave up")), {}, async () => ok)).resolves.toEqual(errorResult("CancelledError", "gave up", 0));
    await expect(queued(refusing(new Error("bug")), {}, async () => ok)).rejects.toThrow("bug");
  });
});
