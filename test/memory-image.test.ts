// The Python host puts its interpreter's memory back after every run by copying only the pages the
// kernel saw written (src/sandbox/memory-image.ts, native/wasm-dirty.c). Isolation between runs
// rests on that being exact: here a real Pyodide memory is put back after runs that write little,
// a lot, and grow the memory, and every byte is compared; then the same through the confined
// sandbox, whose interpreter compares its whole memory after every restore (`checkRestore`).
//
// Where the module is not built or the kernel cannot track writes (Linux < 6.7), the tracked tests
// skip and say why. ENVWORKER_REQUIRE_NATIVE=1 (.ci/run sets it) makes a module that was not built
// a failure: CI installs a compiler, so there it must be.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPyodide, type PyodideInterface } from "pyodide";
import { dirtyPagesAddon, memoryImage, type MemoryImage } from "../src/sandbox/memory-image.ts";
import { createPythonSandbox, type PythonSandbox } from "../src/sandbox/python.ts";

const REQUIRED = process.env.ENVWORKER_REQUIRE_NATIVE === "1";

let py: PyodideInterface;
let heap: () => Uint8Array;
let grown: ((buffer: ArrayBuffer) => void) | undefined;
/** Why written pages are not tracked in this process (then not in a host either), or undefined. */
let notTracked: string | undefined;
const realGrow = WebAssembly.Memory.prototype.grow;

beforeAll(async () => {
  // As python-worker.ts does: every growth of the interpreter's memory is told to the image.
  WebAssembly.Memory.prototype.grow = function grow(this: WebAssembly.Memory, delta: number): number {
    const before = realGrow.call(this, delta);
    grown?.(this.buffer);
    return before;
  };
  py = await loadPyodide({ packages: [] });
  const M = (py as unknown as { _module: { HEAPU8: Uint8Array } })._module;
  heap = () => M.HEAPU8;
  // Warm the interpreter up, so the image is of an interpreter in its steady state.
  for (let i = 0; i < 20; i++) py.runPython("def f(x):\n    return x * 2\nf(21)");
});

afterAll(() => {
  WebAssembly.Memory.prototype.grow = realGrow;
});

const RUNS: [string, string][] = [
  ["a short run", "def f(x):\n    return x * 2\nassert f(2) == 4\nf(21)"],
  ["globals, builtins and sys.modules patched", "import builtins, sys\nbuiltins.leak = 'secret'\nsys.modules['json'] = None\nleft = [1] * 1000"],
  ["8 MB written every 4 KB", "x = bytearray(8_000_000)\nfor i in range(0, len(x), 4096): x[i] = 7\nkept = x"],
  ["the memory grown by 32 MB", "big = bytearray(32 * 1024 * 1024)\nbig[-1] = 1\nlen(big)"],
  ["a short run after the growth", "sum(range(1000))"],
];

describe("memory image", () => {
  let image: MemoryImage;
  let tracked = false;

  beforeAll(() => {
    if (REQUIRED && !dirtyPagesAddon()) throw new Error("ENVWORKER_REQUIRE_NATIVE=1 but native/build/wasm-dirty.node is not built");
    image = memoryImage(heap, dirtyPagesAddon());
    grown = (buffer) => image.grown(buffer);
    notTracked = image.tracking;
    tracked = notTracked === undefined;
    if (!tracked) console.log(`memory-image.test.ts: tracked restores skipped: ${notTracked}`);
  });

  it("puts back exactly what each run wrote, copying only the pages written", (ctx) => {
    if (!tracked) ctx.skip();
    for (const [what, code] of RUNS) {
      py.runPython(code);
      const size = heap().length;
      image.restore();
      expect(image.tracking, what).toBeUndefined();
      expect(image.matches(), `${what}: memory equals the image after the restore`).toBe(true);
      if (what === "a short run" || what === "a short run after the growth") {
        // A short run writes a few hundred pages of the ~30 MB (or, after the growth, ~60 MB).
        expect(image.lastBytes, what).toBeLessThan(size / 8);
      }
    }
    // Writes scattered over more separate regions than one scan of the kernel holds (4,096): every
    // other page changed. Then everything is copied, and the pages stay tracked.
    const memory = heap();
    for (let page = 0; page < memory.length / 4096; page += 2) memory[page * 4096 + 7]! ^= 0x5a;
    image.restore();
    expect(image.lastBytes).toBe(heap().length);
    expect(image.matches()).toBe(true);
    expect(image.tracking).toBeUndefined();
    py.runPython(RUNS[0]![1]);
    image.restore();
    expect(image.lastBytes).toBeLessThan(heap().length / 8);
    expect(image.matches()).toBe(true);
    // Nothing a run left is seen by the next one.
    expect(py.runPython("import builtins, sys\n(hasattr(builtins, 'leak'), sys.modules.get('json') is None, 'left' in globals(), 'big' in globals())").toJs()).toEqual([false, false, false, false]);
  });

  it("is exact without tracking too (copies everything)", () => {
    const full = memoryImage(heap, undefined);
    expect(full.tracking).toMatch(/not built/);
    py.runPython("import builtins\nbuiltins.other_leak = bytearray(3_000_000)");
    full.restore();
    expect(full.matches()).toBe(true);
    expect(full.lastBytes).toBe(heap().length);
  });
});

describe("the confined Python sandbox, checking every restore", () => {
  let sandbox: PythonSandbox;
  let available = true;

  beforeAll(() => {
    // The interpreter refuses to start in check mode unless its pages are tracked: seen in this
    // process first (the describe above).
    if (notTracked !== undefined) {
      available = false;
      console.log(`memory-image.test.ts: confined check skipped: ${notTracked}`);
      return;
    }
    sandbox = createPythonSandbox({ maxConcurrency: 1, checkRestore: true });
  });

  afterAll(async () => {
    await sandbox?.dispose();
  });

  it("every run starts from the snapshot, and the host's memory equals it after each restore", async (ctx) => {
    if (!available) ctx.skip();
    for (let round = 0; round < 2; round++) {
      for (const [what, code] of RUNS) {
        const result = await sandbox.run(code, { memoryMb: 128 });
        // A failed check makes the interpreter unusable: the next run would say so.
        expect(result.error, `${what} (round ${round})`).toBeUndefined();
        expect(result.ok).toBe(true);
      }
    }
    const seen = await sandbox.run("import builtins, sys\n[hasattr(builtins, 'leak'), sys.modules.get('json') is None, 'left' in globals(), 'big' in globals()]");
    expect(seen.error).toBeUndefined();
    expect(seen.result).toEqual([false, false, false, false]);
    // One interpreter served every run: none was replaced (a failed check retires it).
    expect(sandbox.started).toBe(1);
    expect(sandbox.replaced).toBe(0);
  });
});
