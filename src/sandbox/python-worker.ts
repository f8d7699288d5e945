/**
 * The interpreter of the python sandbox: one Pyodide interpreter serving one run at a time, on the
 * main thread of a confined child process (python-host.ts, which imports this module and hands it
 * runs from the server through python-link.ts). The name is historical: it lived on a worker thread
 * of the server until issue 22, and its messages keep that shape.
 *
 * Start-up (~2.5 s): load Pyodide with no packages and an empty `js` namespace, run the lockdown
 * and define the runner (python-guest.ts), make the pre-existing file system read-only, then take a
 * SNAPSHOT: a copy of the interpreter's linear memory (memory-image.ts), its stack pointer, and the
 * JavaScript-side state a run can touch (open file descriptors, the working directory, the two
 * writable directories /tmp and /home/pyodide).
 *
 * A run: set the per-run stdin/limits, call the runner (it returns a JSON report), answer the host,
 * then RESTORE the snapshot: the memory is put back (only the pages the run wrote, where the kernel
 * can tell; what the run grew is zeroed), the stack pointer reset and the JS-side state put back.
 * Nothing a run defines, imports, patches or writes survives it, and the next run starts from the
 * same interpreter state as the first. The restore happens after the answer is sent, off the run's latency.
 *
 * Limits enforced here: memory (growth of the WebAssembly memory past the run's limit is refused,
 * so the allocation fails with MemoryError, and the run is reported as MemoryLimitError) and output
 * (captured bytes stop at the cap). The time limit is the host's: a timer thread (python-timer.ts)
 * writes SIGINT into the shared interrupt buffer (Python raises KeyboardInterrupt at the next
 * bytecode boundary); the server kills the whole process if that does not end the run.
 */
import { constants as fsConstants } from "node:fs";
import { constants as osConstants } from "node:os";
import { link } from "./python-link.ts";
import { memoryError, toRunResult } from "./report.ts";
import { PYTHON_SETUP } from "./python-guest.ts";
import { memoryImage, type CopyBack, type MemoryImage } from "./memory-image.ts";
import type { RunLimits, RunResult } from "./types.ts";

export interface PythonWorkerRequest {
  id: number;
  code: string;
  stdin: string;
  limits: RunLimits;
  /** JSON object of values defined as globals of `__main__` before the code runs. */
  globalsJson: string;
}

export type PythonWorkerMessage =
  | { type: "ready"; heapBytes: number; loadMs: number }
  | { type: "failed-to-start"; message: string }
  | { type: "result"; id: number; result: RunResult; heapBytes: number; fatal: boolean };

// The host process's main thread (python-host.ts) is on the other end, on this same thread.
const port = link;
const { interrupt, indexURL } = link;

// ---- memory limit: every growth of a WebAssembly memory in this thread goes through here --------
let growLimitBytes = Number.POSITIVE_INFINITY;
let growRefused = false;
const realGrow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function grow(this: WebAssembly.Memory, delta: number): number {
  const next = this.buffer.byteLength + delta * 65536;
  if (next > growLimitBytes) {
    growRefused = true;
    // Emscripten's resize handler catches this and fails the allocation (Python: MemoryError).
    throw new RangeError("memory limit");
  }
  const before = realGrow.call(this, delta);
  growRefused = false; // a smaller retry of the same allocation succeeded
  // Pages the run may write from here on are tracked from here on (memory-image.ts).
  snapshot?.memory.grown(this.buffer);
  return before;
};

// ---- output capture ---------------------------------------------------------------------------
interface Capture {
  chunks: string[];
  decoder: TextDecoder;
}
let outputBudget = 0;
let truncatedIn: "stdout" | "stderr" | null = null;
const capture = { stdout: newCapture(), stderr: newCapture() };
function newCapture(): Capture {
  return { chunks: [], decoder: new TextDecoder("utf-8", { fatal: false }) };
}
function writer(stream: "stdout" | "stderr") {
  return {
    isatty: false,
    write(buffer: Uint8Array): number {
      const n = buffer.length;
      if (truncatedIn !== null) return n;
      const c = capture[stream];
      if (n > outputBudget) {
        c.chunks.push(c.decoder.decode(buffer.subarray(0, Math.max(0, outputBudget)), { stream: true }));
        outputBudget = 0;
        truncatedIn = stream;
        return n;
      }
      outputBudget -= n;
      c.chunks.push(c.decoder.decode(buffer, { stream: true }));
      return n;
    },
  };
}

// ---- stdin -------------------------------------------------------------------------------------
let stdinBytes = new Uint8Array(0);
let stdinOffset = 0;
const encoder = new TextEncoder();
function readStdin(buffer: Uint8Array | Int8Array): number {
  const n = Math.min(buffer.length, stdinBytes.length - stdinOffset);
  buffer.set(stdinBytes.subarray(stdinOffset, stdinOffset + n));
  stdinOffset += n;
  return n;
}

// ---- load and lock down -----------------------------------------------------------------------
type Emscripten = {
  HEAPU8: Uint8Array;
  stackSave(): number;
  stackRestore(sp: number): void;
  _emscripten_get_sbrk_ptr(): number;
  _emscripten_stack_get_end(): number;
  HEAPU32: Uint32Array;
  FS: EmscriptenFS;
  ERRNO_CODES?: Record<string, number>;
};
// The parts of Emscripten's FS used here (untyped in pyodide's typings).
type FsNode = {
  name: string;
  rdev?: number;
  usedBytes?: number;
  mode: number;
  parent: FsNode;
  contents: unknown;
  node_ops: Record<string, unknown>;
  stream_ops: Record<string, unknown>;
  mount: { mountpoint: string };
  timestamp?: number;
  atime?: number;
  mtime?: number;
  ctime?: number;
};
type FsStream = { fd: number | null; position: number; flags: number; node: FsNode };
type EmscriptenFS = {
  root: FsNode;
  streams: (FsStream | null | undefined)[];
  cwd(): string;
  chdir(path: string): void;
  writeFile(path: string, data: string): void;
  unlink(path: string): void;
  registerDevice(dev: number, ops: Record<string, unknown>): void;
  close(stream: FsStream): void;
  lookupPath(path: string): { node: FsNode };
  isDir(mode: number): boolean;
  isFile(mode: number): boolean;
  isLink(mode: number): boolean;
  ErrnoError: new (errno: number) => Error;
};

interface Snapshot {
  /** The whole linear memory, put back after each run (only the pages the run wrote, where the kernel can tell). */
  memory: MemoryImage;
  /** Size of the memory at snapshot time. */
  size: number;
  sp: number;
  streams: { stream: FsStream | null | undefined; position: number; flags: number }[];
  cwd: string;
  writable: { node: FsNode; contents: Record<string, FsNode>; mode: number }[];
}

const started = performance.now();
let run: (code: string, maxResultChars: number, globalsJson: string) => string;
let M: Emscripten;
let snapshot: Snapshot | undefined;
let fatal = false;

try {
  allowNodefsInit();
  const { loadPyodide } = await import("pyodide");
  // Pyodide cannot find its own directory from a bundle (python-host.ts is told it by the server).
  const pyodide = await loadPyodide({
    indexURL,
    // The `js` module is a proxy of this object: nothing in it. (The lockdown removes `js` anyway.)
    jsglobals: Object.create(null) as object,
    packages: [],
    stdout: () => {},
    stderr: () => {},
    env: { HOME: "/home/pyodide" },
  });
  pyodide.setStdout(writer("stdout"));
  pyodide.setStderr(writer("stderr"));
  pyodide.setStdin({ isatty: false, read: readStdin });
  pyodide.setInterruptBuffer(interrupt);
  // Pyodide reports a fatal error (a trap in a run) on the console; the host reports it as the run's result.
  for (const method of ["log", "info", "warn", "error", "debug"] as const) console[method] = () => {};
  M = (pyodide as unknown as { _module: Emscripten })._module;
  pyodide.runPython(PYTHON_SETUP, { filename: "<envworker>" });
  const runner = pyodide.globals.get("__envworker_run") as typeof run;
  // The proxy is kept for the life of the interpreter (its reference is part of the snapshot).
  run = runner;
  // Checked from here, not from inside runPython: its own machinery (a CodeRunner) is Pyodide's.
  const verify = pyodide.globals.get("__envworker_verify") as (() => string) & { destroy(): void };
  verify();
  verify.destroy();
  (pyodide.globals as unknown as { delete(k: string): void }).delete("__envworker_verify");
  routeTerminals(M.FS);
  boundWritableFiles(M.FS, M.ERRNO_CODES?.ENOSPC ?? 51);
  lockFileSystem(M.FS);
  snapshot = takeSnapshot();
  // Tests ask for the restore to be checked (python.ts `checkRestore`): they need to know it is tracked, too.
  if (link.checkRestore && snapshot.memory.tracking !== undefined) throw new Error(`restore check: pages are not tracked: ${snapshot.memory.tracking}`);
  port.postMessage({ type: "ready", heapBytes: M.HEAPU8.length, loadMs: performance.now() - started } satisfies PythonWorkerMessage);
} catch (err) {
  port.postMessage({ type: "failed-to-start", message: err instanceof Error ? err.message : String(err) } satisfies PythonWorkerMessage);
  process.exit(1);
}

port.on("message", (req: PythonWorkerRequest) => {
  const result = fatal ? dead() : runOnce(req);
  port.postMessage({ type: "result", id: req.id, result, heapBytes: M.HEAPU8.length, fatal } satisfies PythonWorkerMessage);
  if (!fatal) {
    try {
      restore();
      // Tests: after every restore, the whole memory must equal the snapshot.
      if (link.checkRestore && !snapshot!.memory.matches()) fatal = true;
    } catch {
      fatal = true;
    }
  }
});

/**
 * Pyodide's NODEFS (never mounted here) reads `process.binding("constants").fs` when the module
 * loads, and Node's permission model (the confined host, confine.ts) refuses process.binding: give it
 * those constants, the same values `node:fs` exports, and nothing else.
 */
function allowNodefsInit(): void {
  const proc = process as unknown as { binding(name: string): unknown };
  const original = proc.binding.bind(process);
  proc.binding = (name: string) => (name === "constants" ? { fs: fsConstants, os: osConstants } : original(name));
}

function dead(): RunResult {
  return { ok: false, result: null, stdout: "", stderr: "", error: { name: "SandboxError", message: "the interpreter is no longer usable" }, elapsedMs: 0 };
}

function runOnce(req: PythonWorkerRequest): RunResult {
  const { limits } = req;
  stdinBytes = encoder.encode(req.stdin);
  stdinOffset = 0;
  outputBudget = limits.maxOutputBytes;
  truncatedIn = null;
  capture.stdout = newCapture();
  capture.stderr = newCapture();
  growRefused = false;
  growLimitBytes = snapshot!.size + limits.memoryMb * 1024 * 1024;
  files = { budget: limits.memoryMb * 1024 * 1024, entries: 0, counted: new WeakMap() };
  Atomics.store(interrupt, 0, 0);
  const t0 = performance.now();
  let reportText: string | undefined;
  let hostError: { name: string; message: string } | undefined;
  try {
    reportText = run(req.code, limits.maxOutputBytes, req.globalsJson);
  } catch (err) {
    // Only a failure of the interpreter itself gets here (the runner catches every Python
    // exception): a trap such as a C stack overflow. The interpreter cannot be trusted after it.
    fatal = true;
    const message = err instanceof Error ? err.message : String(err);
    hostError = /call stack|stack size|recursion/i.test(message)
      ? { name: "RecursionError", message: "maximum recursion depth exceeded (the interpreter's stack overflowed)" }
      : { name: "SandboxError", message: `the interpreter failed: ${message.slice(0, 500)}` };
  } finally {
    growLimitBytes = Number.POSITIVE_INFINITY;
    Atomics.store(interrupt, 0, 0);
  }
  const elapsedMs = performance.now() - t0;
  const stdout = capture.stdout.chunks.join("") + capture.stdout.decoder.decode();
  const stderr = capture.stderr.chunks.join("") + capture.stderr.decoder.decode();
  let report: Record<string, unknown> | undefined;
  try {
    report = reportText === undefined ? undefined : (JSON.parse(reportText) as Record<string, unknown>);
  } catch {
    report = undefined;
  }
  const guestError = report?.error as { name?: unknown } | null | undefined;
  if (report && report.status !== "ok" && (growRefused || guestError?.name === "MemoryError")) hostError ??= memoryError(limits);
  const merged = report ? JSON.stringify({ ...report, stdout, stderr, truncated: truncatedIn }) : undefined;
  return toRunResult(merged, { limits, elapsedMs, ...(hostError ? { hostError } : {}) });
}

// ---- snapshot / restore -----------------------------------------------------------------------
function takeSnapshot(): Snapshot {
  const FS = M.FS;
  const writable = ["/tmp", "/home/pyodide"].map((path) => {
    const node = FS.lookupPath(path).node;
    return { node, contents: { ...(node.contents as Record<string, FsNode>) }, mode: node.mode };
  });
  return {
    memory: memoryImage(() => M.HEAPU8, link.dirtyPagesAddon, untrackedCopy()),
    size: M.HEAPU8.length,
    sp: M.stackSave(),
    streams: FS.streams.map((stream) => ({ stream, position: stream?.position ?? 0, flags: stream?.flags ?? 0 })),
    cwd: FS.cwd(),
    writable,
  };
}

/**
 * Where written pages are not tracked (memory-image.ts), the parts of the memory a run can have
 * changed, as they are at rest: the static data below the C stack, the top of the C stack (only
 * the bytes above the stack pointer hold anything between runs, so the idle rest is skipped) and
 * the heap up to its break; what the run took beyond the old break is zeroed. ~25 of ~30 MB.
 */
function untrackedCopy(): CopyBack {
  const brk = () => M.HEAPU32[M._emscripten_get_sbrk_ptr() >>> 2]!;
  const stackLow = M._emscripten_stack_get_end();
  const stackKeep = Math.max(stackLow, M.stackSave() - 64 * 1024);
  const brkAtImage = brk();
  return (memory, image) => {
    const end = Math.min(memory.length, Math.max(brk(), brkAtImage));
    memory.set(image.subarray(0, stackLow), 0);
    memory.set(image.subarray(stackKeep, brkAtImage), stackKeep);
    if (end > brkAtImage) memory.fill(0, brkAtImage, end);
  };
}

function restore(): void {
  const snap = snapshot!;
  snap.memory.restore();
  M.stackRestore(snap.sp);
  const FS = M.FS;
  const kept = new Set(snap.streams.map((s) => s.stream));
  for (const stream of FS.streams) {
    if (stream && !kept.has(stream)) {
      try {
        FS.close(stream);
      } catch {
        // Already closed.
      }
    }
  }
  FS.streams.length = 0;
  snap.streams.forEach(({ stream, position, flags }, fd) => {
    FS.streams[fd] = stream;
    if (stream) {
      stream.fd = fd;
      stream.position = position;
      stream.flags = flags;
    }
  });
  for (const w of snap.writable) {
    w.node.contents = { ...w.contents };
    w.node.mode = w.mode;
  }
  FS.chdir(snap.cwd);
}

/**
 * The terminals (/dev/tty, /dev/tty1, and any device node a guest makes with their numbers) are the
 * run's stdin and stdout. Emscripten's own terminal keeps what is written to it in a JavaScript
 * array until a newline, outside the memory limit, the output cap and the snapshot: 1 MiB writes
 * without a newline grew this thread's heap until V8 aborted the whole process. Its reads went to
 * the host process's own stdin.
 */
function routeTerminals(FS: EmscriptenFS): void {
  const stdout = writer("stdout");
  const terminal = {
    open() {},
    close() {},
    fsync() {},
    read: (_stream: FsStream, buffer: Int8Array, offset: number, length: number) => readStdin(buffer.subarray(offset, offset + length)),
    write: (_stream: FsStream, buffer: Int8Array, offset: number, length: number) => stdout.write(new Uint8Array(buffer.buffer, buffer.byteOffset + offset, length)),
  };
  for (const path of ["/dev/tty", "/dev/tty1"]) {
    const rdev = FS.lookupPath(path).node.rdev;
    if (rdev !== undefined) FS.registerDevice(rdev, terminal);
  }
}

/** What a run may still add to the writable directories (reset for every run). */
let files = { budget: 0, entries: 0, counted: new WeakMap<FsNode, number>() };
/** Files, directories and links one run may create. */
const MAX_RUN_ENTRIES = 10_000;
/** What an entry costs besides its data: the node object and its name. */
const ENTRY_BYTES = 256;

/**
 * Files live in Emscripten's in-memory file system, as JavaScript arrays on this thread's heap:
 * outside the WebAssembly memory and its limit. So what a run writes counts against its own
 * memoryMb (data at the capacity actually allocated, entries at their size and names), and a
 * write, truncate-to-grow or allocation past it fails with ENOSPC. Deleting a file no descriptor
 * holds gives its bytes back; restore() drops everything after the run.
 */
function boundWritableFiles(FS: EmscriptenFS, ENOSPC: number): void {
  FS.writeFile("/tmp/.envworker-probe", "");
  const file = FS.lookupPath("/tmp/.envworker-probe").node;
  FS.unlink("/tmp/.envworker-probe");
  const dir = FS.lookupPath("/tmp").node;
  const noSpace = () => new FS.ErrnoError(ENOSPC);
  const capacity = (node: FsNode) => (node.contents as { length?: number } | null)?.length ?? 0;
  const mayGrowTo = (node: FsNode, size: number) => {
    if (size > capacity(node) && size - capacity(node) > files.budget) throw noSpace();
  };
  const charge = (node: FsNode) => {
    const now = capacity(node);
    const before = files.counted.get(node) ?? 0;
    if (now > before) {
      files.budget -= now - before;
      files.counted.set(node, now);
    }
  };
  const entry = (name: string, extra = "") => {
    const cost = ENTRY_BYTES + 2 * (name.length + extra.length);
    if (files.entries >= MAX_RUN_ENTRIES || cost > files.budget) throw noSpace();
    files.entries += 1;
    files.budget -= cost;
  };
  type Op = (...args: never[]) => unknown;
  const wrap = <T extends Op>(ops: Record<string, unknown>, name: string, f: (real: T) => T) => {
    const real = ops[name] as T | undefined;
    if (typeof real === "function") ops[name] = f(real.bind(ops) as T);
  };
  // MEMFS shares one ops object among all files and one among all directories: patched in place,
  // before lockFileSystem copies them for the read-only nodes.
  wrap(file.stream_ops, "write", (real: (s: FsStream, b: Int8Array, o: number, l: number, p: number, c?: boolean) => number) => (s, b, o, l, p, c) => {
    mayGrowTo(s.node, p + l);
    const n = real(s, b, o, l, p, c);
    charge(s.node);
    return n;
  });
  wrap(file.stream_ops, "allocate", (real: (s: FsStream, o: number, l: number) => void) => (s, o, l) => {
    mayGrowTo(s.node, o + l);
    real(s, o, l);
    charge(s.node);
  });
  wrap(file.node_ops, "setattr", (real: (n: FsNode, a: { size?: number }) => void) => (n, a) => {
    if (typeof a?.size === "number") mayGrowTo(n, a.size);
    real(n, a);
    charge(n);
  });
  wrap(dir.node_ops, "mknod", (real: (p: FsNode, name: string, mode: number, dev: number) => FsNode) => (p, name, mode, dev) => {
    entry(String(name));
    return real(p, name, mode, dev);
  });
  wrap(dir.node_ops, "symlink", (real: (p: FsNode, name: string, target: string) => FsNode) => (p, name, target) => {
    entry(String(name), String(target));
    return real(p, name, target);
  });
  // A file deleted while no descriptor holds it is gone: its bytes and entry are given back (a run
  // that rewrites a scratch file in a loop stays within its budget).
  wrap(dir.node_ops, "unlink", (real: (p: FsNode, name: string) => void) => (p, name) => {
    const node = (p.contents as Record<string, FsNode> | undefined)?.[name];
    real(p, name);
    const counted = node ? files.counted.get(node) : undefined;
    if (node && counted !== undefined && !FS.streams.some((s) => s?.node === node)) {
      files.budget += counted + ENTRY_BYTES;
      files.entries = Math.max(0, files.entries - 1);
      files.counted.delete(node);
    }
  });
  wrap(dir.node_ops, "rename", (real: (n: FsNode, d: FsNode, name: string) => void) => (n, d, name) => {
    entry(String(name));
    real(n, d, name);
  });
}

/**
 * Every node that exists now, except the writable directories and what is below them, refuses
 * changes: no creating, renaming, deleting or chmod-ing entries, no writing to regular files
 * (devices such as /dev/null keep working). The standard library cannot be tampered with, and what
 * a run writes lives only in /tmp and /home/pyodide, which restore() empties.
 */
function lockFileSystem(FS: EmscriptenFS): void {
  const writable = new Set(["/tmp", "/home/pyodide"].map((p) => FS.lookupPath(p).node));
  const denied = () => {
    throw new FS.ErrnoError(2); // EACCES
  };
  const nodeOpsCache = new Map<object, Record<string, unknown>>();
  const streamOpsCache = new Map<object, Record<string, unknown>>();
  const readOnly = (cache: Map<object, Record<string, unknown>>, ops: Record<string, unknown>, names: string[]) => {
    let ro = cache.get(ops);
    if (!ro) {
      ro = { ...ops };
      for (const n of names) if (n in ops) ro[n] = denied;
      cache.set(ops, ro);
    }
    return ro;
  };
  const seen = new Set<FsNode>();
  const walk = (node: FsNode) => {
    if (seen.has(node) || writable.has(node)) return;
    seen.add(node);
    node.node_ops = readOnly(nodeOpsCache, node.node_ops, ["setattr", "mknod", "rename", "unlink", "rmdir", "symlink", "link"]);
    if (FS.isFile(node.mode)) node.stream_ops = readOnly(streamOpsCache, node.stream_ops, ["write", "allocate", "mmap", "msync"]);
    if (FS.isDir(node.mode) && node.contents && typeof node.contents === "object") {
      for (const child of Object.values(node.contents as Record<string, FsNode>)) walk(child);
    }
  };
  walk(FS.root);
}
