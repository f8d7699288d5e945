/**
 * Child-process entry for quickjs-process.ts (started confined, confine.ts): an in-process QuickJS
 * sandbox serving one run at a time (host-protocol.ts). It exists so the parent can kill the
 * process when a run overruns what QuickJS's interrupt handler can stop, and replace it when its
 * wasm memory grew. Runs here block this process's event loop, so there is no heartbeat: QuickJS's
 * own memory limit and the wasm memory's maximum bound the guest during a run, the process's heap
 * limit and address-space limit the rest, and the size is reported after.
 */
import { childPort } from "./host-channel.ts";
import { serveRuns } from "./host-protocol.ts";
import { createQuickJSSandbox } from "./quickjs.ts";
import { delayProbe } from "./run-delay.ts";

const port = childPort();
// Runs are timed on the run clock: a host below the server's priority on a busy machine waits for
// a CPU, and that wait is not the guest's (run-delay.ts).
const sandbox = createQuickJSSandbox({ deadline: "clock", delay: delayProbe("/proc/thread-self/schedstat") });
await sandbox.warm();

serveRuns(port, sandbox, { usage: () => process.memoryUsage.rss(), engineUsage: () => sandbox.memoryBytes() });
