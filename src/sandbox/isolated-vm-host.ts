/**
 * Child-process entry for isolated-vm-process.ts: an isolated-vm sandbox (one isolate, one run at
 * a time) in a process of its own, so that a V8 fatal error in an isolate (which aborts the whole
 * process: `Fatal JavaScript invalid size error`, heap out of memory outside the isolate's limit)
 * ends this process, not the server. isolated-vm runs guest code on its own threads, so this
 * process's event loop stays free during a run and reports the process's RSS every HEARTBEAT_MS;
 * the parent kills the process when it grows past the run's allowance (isolated-vm's memoryLimit
 * is only a guideline for large allocations).
 */
import { serveRuns, type HostRequest } from "./host-protocol.ts";
import { createIsolatedVmSandbox } from "./isolated-vm.ts";

const HEARTBEAT_MS = 20;

const send = process.send?.bind(process);
if (!send) throw new Error("isolated-vm-host.ts must run as a child process with an IPC channel");
// The parent is gone (even by SIGKILL): nothing is left to serve. A run in flight could keep a
// graceful exit waiting on an isolate, so end at once.
process.on("disconnect", () => process.kill(process.pid, "SIGKILL"));

const sandbox = createIsolatedVmSandbox({ maxConcurrency: 1 });
await sandbox.run("0"); // compile the prelude, warm the isolate

serveRuns(
  { post: (message) => void send(message), onMessage: (listener) => void process.on("message", (m) => listener(m as HostRequest)) },
  sandbox,
  { usage: () => process.memoryUsage.rss(), heartbeatMs: HEARTBEAT_MS },
);
