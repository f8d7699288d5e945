/**
 * The messages between a sandbox pool (host-pool.ts, in the server process) and one host it
 * supervises (a worker thread or a child process running a sandbox), and the host's side of them.
 * A host serves one run at a time. It reports how much memory it holds (`bytes`: the process's RSS,
 * or a QuickJS thread's wasm memory) when ready, with every result and, where its event loop stays
 * free during a run (isolated-vm), every `heartbeatMs` while running, so the pool can kill a host
 * that grows past a run's memory limit and replace one that did not give its memory back.
 */
import type { RunOptions, RunResult, Sandbox } from "./types.ts";

/** Options that cross to a host: limits and inputs only (JSON-safe; no signal, no callbacks). */
export type SentOptions = Omit<RunOptions, "signal" | "onStart" | "queueKey">;

export type HostRequest = { type: "run"; id: number; code: string; options: SentOptions } | { type: "cancel"; id: number };

export type HostReply =
  | { type: "ready"; bytes: number }
  | { type: "usage"; id: number; bytes: number }
  | { type: "result"; id: number; result: RunResult; bytes: number }
  | { type: "failed"; id: number; message: string; bytes: number };

export interface HostPort {
  post(message: HostReply): void;
  onMessage(listener: (message: HostRequest) => void): void;
}

export interface ServeOptions {
  /** Memory this host holds now, in bytes. */
  usage(): number;
  /** Report usage this often while a run is in flight (only useful where runs do not block this thread). */
  heartbeatMs?: number;
}

/** The host's side: run what the pool sends, one at a time, and answer. Call once the sandbox is warm. */
export function serveRuns(port: HostPort, sandbox: Sandbox, options: ServeOptions): void {
  const running = new Map<number, AbortController>();
  port.onMessage((message) => {
    if (message.type === "cancel") {
      running.get(message.id)?.abort();
      return;
    }
    const { id } = message;
    const controller = new AbortController();
    running.set(id, controller);
    const heartbeat = options.heartbeatMs
      ? setInterval(() => port.post({ type: "usage", id, bytes: options.usage() }), options.heartbeatMs)
      : undefined;
    const done = (reply: HostReply) => {
      clearInterval(heartbeat);
      running.delete(id);
      port.post(reply);
    };
    sandbox.run(message.code, { ...message.options, signal: controller.signal }).then(
      (result) => done({ type: "result", id, result, bytes: options.usage() }),
      (err: unknown) => done({ type: "failed", id, message: err instanceof Error ? err.message : String(err), bytes: options.usage() }),
    );
  });
  port.post({ type: "ready", bytes: options.usage() });
}
