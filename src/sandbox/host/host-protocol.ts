/**
 * The messages between a sandbox pool (host-pool.ts, in the server process) and one host it
 * supervises (a confined child process running a sandbox, confine.ts), and the host's side of them.
 * A host serves one run at a time. It reports how much memory it holds (`bytes`: the process's
 * RSS) when ready, with every result and, where its event loop stays free during a run
 * (isolated-vm), every `heartbeatMs` while running. These figures are hints: the pool measures
 * each host's memory itself (process-memory.ts) and uses a host's own `bytes` only where the
 * system cannot measure (no /proc). `engineBytes` is the engine's own measure where it has one (a
 * wasm memory), which can make the pool replace a host sooner, never keep it longer.
 *
 * Nothing a host sends is trusted: a host is where model-written code runs, and a guest that
 * escaped its engine writes whatever it likes here. Every reply is framed with a size bound
 * (host-channel.ts) and checked against `HOST_REPLY` before the pool reads a field of it.
 */
import { z } from "zod";
import type { RunOptions, RunResult, Sandbox } from "../types.ts";

/** Options that cross to a host: limits and inputs only (JSON-safe; no signal, no callbacks). */
export type SentOptions = Omit<RunOptions, "signal" | "onStart" | "queueKey" | "client" | "grading">;

export type HostRequest = { type: "run"; id: number; code: string; options: SentOptions } | { type: "cancel"; id: number };

const bytes = z.number().int().nonnegative().max(2 ** 50);
const id = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const text = z.string();

/** A RunResult as the server accepts it from a host: data of the expected shape, nothing else. */
export const RUN_RESULT = z.strictObject({
  ok: z.boolean(),
  result: z.json(),
  stdout: text,
  stderr: text,
  // Names and messages are the guest's own (a class may have any name): bounded by the frame, not here.
  error: z.strictObject({ name: text, message: text, stack: text.optional() }).optional(),
  elapsedMs: z.number().nonnegative().max(1e9),
  truncated: z.boolean().optional(),
});

export const HOST_REPLY = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("ready"), bytes, engineBytes: bytes.optional() }),
  z.strictObject({ type: z.literal("usage"), id, bytes, engineBytes: bytes.optional() }),
  z.strictObject({
    type: z.literal("result"),
    id,
    result: RUN_RESULT,
    bytes,
    engineBytes: bytes.optional(),
    /** The host cannot serve again (its engine is broken): replace it. */
    retire: z.boolean().optional(),
  }),
  z.strictObject({ type: z.literal("failed"), id, message: text.max(2000), bytes, engineBytes: bytes.optional() }),
]);

export type HostReply = z.infer<typeof HOST_REPLY>;

export interface HostPort {
  post(message: HostReply): void;
  onMessage(listener: (message: HostRequest) => void): void;
}

export interface ServeOptions {
  /** Memory this host holds now, in bytes (the process's RSS). */
  usage(): number;
  /** The engine's own measure (a wasm memory's size), when the pool's policy reads it. */
  engineUsage?(): number;
  /** Report usage this often while a run is in flight (only useful where runs do not block this thread). */
  heartbeatMs?: number;
}

/** A sandbox served by a host; `retire()` says its engine must not serve again. */
export type ServedSandbox = Sandbox & { retire?(): boolean };

/** The host's side: run what the pool sends, one at a time, and answer. Call once the sandbox is warm. */
export function serveRuns(port: HostPort, sandbox: ServedSandbox, options: ServeOptions): void {
  const running = new Map<number, AbortController>();
  const measure = () => {
    const engineBytes = options.engineUsage?.();
    return { bytes: options.usage(), ...(engineBytes !== undefined ? { engineBytes } : {}) };
  };
  port.onMessage((message) => {
    if (message.type === "cancel") {
      running.get(message.id)?.abort();
      return;
    }
    const { id } = message;
    const controller = new AbortController();
    running.set(id, controller);
    const heartbeat = options.heartbeatMs ? setInterval(() => port.post({ type: "usage", id, ...measure() }), options.heartbeatMs) : undefined;
    const done = (reply: HostReply) => {
      clearInterval(heartbeat);
      running.delete(id);
      port.post(reply);
    };
    sandbox.run(message.code, { ...message.options, signal: controller.signal }).then(
      (result: RunResult) => done({ type: "result", id, result, ...measure(), ...(sandbox.retire?.() ? { retire: true } : {}) }),
      (err: unknown) => done({ type: "failed", id, message: (err instanceof Error ? err.message : String(err)).slice(0, 2000), ...measure() }),
    );
  });
  port.post({ type: "ready", ...measure() });
}
