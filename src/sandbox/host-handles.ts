/**
 * The two kinds of host a sandbox pool supervises, behind one small handle: a worker thread
 * (ts-worker.ts) or a child process (ts-child.ts). Node only.
 */
import type { ChildProcess } from "node:child_process";
import type { ResourceLimits, Worker } from "node:worker_threads";
import { forkChild } from "../node/ts-child.ts";
import { startWorker } from "../node/ts-worker.ts";
import type { HostReply, HostRequest } from "./host-protocol.ts";

/** How a host ended: what the pool needs to explain it to the run it was serving. */
export interface HostExit {
  /** Human-readable cause ("exit code 1", "signal SIGTRAP: Fatal JavaScript invalid size error"). */
  why: string;
  /** The engine gave up for lack of memory (V8 fatal size/heap error, thread heap limit). */
  outOfMemory: boolean;
}

export interface HostHandle {
  post(message: HostRequest): void;
  onMessage(listener: (message: HostReply) => void): void;
  /** Called once, when the host is gone for any reason (including kill()). */
  onExit(listener: (exit: HostExit) => void): void;
  /** Stops the host at once (SIGKILL / terminate). */
  kill(): void;
  /** Whether the host keeps the server's process alive (only while it serves a run). */
  keepAlive(on: boolean): void;
}

/** V8's last words when it aborts for lack of memory (stderr of a process that died of it). */
const OUT_OF_MEMORY = /invalid (size|array length|table size)|out of memory|heap limit|allocation failed/i;

/** How a host ended, told once: to the listener, or to one registered afterwards. */
function exitLatch(): { end: (exit: HostExit) => void; onExit: (listener: (exit: HostExit) => void) => void } {
  let listener: ((exit: HostExit) => void) | undefined;
  let ended: HostExit | undefined;
  return {
    end(exit) {
      if (ended) return;
      ended = exit;
      listener?.(exit);
    },
    onExit(l) {
      listener = l;
      if (ended) l(ended);
    },
  };
}

export function threadHost(entry: URL, resourceLimits: ResourceLimits): HostHandle {
  const worker: Worker = startWorker(entry, { resourceLimits });
  worker.unref();
  const { end, onExit } = exitLatch();
  worker.on("error", (err: Error & { code?: string }) => end({ why: err.message, outOfMemory: err.code === "ERR_WORKER_OUT_OF_MEMORY" }));
  worker.on("exit", (code) => end({ why: `exit code ${code}`, outOfMemory: false }));
  return {
    post: (message) => worker.postMessage(message),
    onMessage: (listener) => void worker.on("message", listener),
    onExit,
    kill: () => {
      end({ why: "terminated", outOfMemory: false });
      void worker.terminate();
    },
    keepAlive: (on) => (on ? worker.ref() : worker.unref()),
  };
}

export function processHost(entry: URL, execArgv: string[]): HostHandle {
  const child: ChildProcess = forkChild(entry, { execArgv, stdio: ["ignore", "ignore", "pipe", "ipc"], serialization: "advanced" });
  // The last few KiB of stderr: how V8 explains an abort.
  let stderrTail = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-4096);
  });
  const { end, onExit } = exitLatch();
  // "close" comes after the stdio streams ended, so stderrTail holds V8's last words by then.
  child.on("close", (code, signal) => {
    const line = stderrTail.split("\n").find((l) => OUT_OF_MEMORY.test(l)) ?? stderrTail.trim().split("\n").at(-1) ?? "";
    const last = line.replace(/^[#\s]+/, "").trim();
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    end({ why: last ? `${how}: ${last.slice(0, 300)}` : how, outOfMemory: OUT_OF_MEMORY.test(stderrTail) });
  });
  child.on("error", (err) => end({ why: err.message, outOfMemory: false }));
  const keepAlive = (on: boolean) => {
    const channel = child.channel as { ref?: () => void; unref?: () => void } | undefined;
    if (on) {
      child.ref();
      channel?.ref?.();
    } else {
      child.unref();
      channel?.unref?.();
    }
    (child.stderr as { ref?: () => void; unref?: () => void } | null)?.[on ? "ref" : "unref"]?.();
  };
  keepAlive(false);
  return {
    post: (message) => {
      if (child.connected) child.send(message);
    },
    onMessage: (listener) => void child.on("message", listener as (m: unknown) => void),
    onExit,
    kill: () => {
      end({ why: "killed", outOfMemory: false });
      child.kill("SIGKILL");
    },
    keepAlive,
  };
}
