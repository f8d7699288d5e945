/**
 * Child-process entry for isolated-vm-process.ts (started confined, confine.ts): an isolated-vm sandbox (one isolate, one run at
 * a time) in a process of its own, so that a V8 fatal error in an isolate (which aborts the whole
 * process: `Fatal JavaScript invalid size error`, heap out of memory outside the isolate's limit)
 * ends this process, not the server. isolated-vm runs guest code on its own threads, so this
 * process's event loop stays free during a run and reports the process's RSS every HEARTBEAT_MS;
 * the parent kills the process when it grows past the run's allowance (isolated-vm's memoryLimit
 * is only a guideline for large allocations).
 */
import { childPort } from "../../host/host-channel.ts";
import { serveRuns } from "../../host/host-protocol.ts";
import { createIsolatedVmSandbox } from "./isolated-vm.ts";

const HEARTBEAT_MS = 20;

// The server is gone when stdin ends (childPort): nothing is left to serve, and a run in flight
// could keep a graceful exit waiting on an isolate, so the port ends the process at once.
const port = childPort();

// One run at a time: what the process grows by while a run executes is that run's (isolated-vm.ts heldLimitBytes).
const sandbox = createIsolatedVmSandbox({ maxConcurrency: 1, watchResident: true });
await sandbox.run("0"); // compile the prelude, warm the isolate

serveRuns(port, sandbox, { usage: () => process.memoryUsage.rss(), heartbeatMs: HEARTBEAT_MS });
