/**
 * Worker-thread entry for quickjs-thread.ts: an in-process QuickJS sandbox serving one run at a
 * time (host-protocol.ts). It exists so the parent can terminate the thread when a run overruns
 * what QuickJS's interrupt handler can stop, and replace it when its wasm memory grew.
 * Runs here block this thread, so there is no heartbeat: QuickJS's own memory limit bounds the wasm
 * memory during a run, the thread's resourceLimits bound the rest, and the size is reported after.
 */
import { parentPort } from "node:worker_threads";
import { serveRuns, type HostRequest } from "./host-protocol.ts";
import { createQuickJSSandbox } from "./quickjs.ts";

const port = parentPort;
if (!port) throw new Error("quickjs-worker.ts must run in a worker thread");

const sandbox = createQuickJSSandbox({ deadline: "clock" });
await sandbox.warm();

serveRuns(
  { post: (message) => port.postMessage(message), onMessage: (listener) => void port.on("message", (m: HostRequest) => listener(m)) },
  sandbox,
  { usage: () => sandbox.memoryBytes() },
);
