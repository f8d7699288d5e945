/**
 * How the interpreter module (python-worker.ts) talks to the host process it runs in
 * (python-host.ts), on the same thread: the interrupt buffer, Pyodide's directory and the other
 * arguments it needs at load, and a port with the shape of a worker's message port
 * (`postMessage`, `on("message")`), so the interpreter's code reads as it did when it lived on a
 * worker thread. This module is evaluated
 * before the interpreter's (which imports it), so both are ready when the interpreter loads.
 */
import type { PythonWorkerMessage, PythonWorkerRequest } from "./python-worker.ts";

const SIGNALS = 1;

export interface InterpreterLink {
  /** Pyodide's interrupt buffer: a timer thread (python-timer.ts) writes SIGINT into it at a run's deadline. */
  interrupt: Int32Array;
  /** Pyodide's directory (the host's first argument, from the server). */
  indexURL: string;
  /** native/wasm-dirty's built module, if there is one (the second argument). */
  dirtyPagesAddon: string | undefined;
  /** Compare the whole memory with the snapshot after every restore (tests; the third argument). */
  checkRestore: boolean;
  /** The interpreter's answers (ready, failed-to-start, a run's result). */
  postMessage(message: PythonWorkerMessage): void;
  /** The interpreter's request handler: it runs the request synchronously, answers, then restores its snapshot. */
  on(event: "message", listener: (request: PythonWorkerRequest) => void): void;
}

let onAnswer: ((message: PythonWorkerMessage) => void) | undefined;
const early: PythonWorkerMessage[] = [];
let handler: ((request: PythonWorkerRequest) => void) | undefined;

export const link: InterpreterLink = {
  interrupt: new Int32Array(new SharedArrayBuffer(4 * SIGNALS)),
  indexURL: process.argv[2] ?? "",
  dirtyPagesAddon: process.argv[3] || undefined,
  checkRestore: process.argv[4] === "check-restore",
  postMessage(message) {
    if (onAnswer) onAnswer(message);
    else early.push(message);
  },
  on(_event, listener) {
    handler = listener;
  },
};

/** The host's side: receive the interpreter's answers (those sent before this was called first). */
export function onInterpreterAnswer(listener: (message: PythonWorkerMessage) => void): void {
  onAnswer = listener;
  for (const message of early.splice(0)) listener(message);
}

/** The host's side: hand the interpreter one request (it answers through onInterpreterAnswer before this returns). */
export function request(req: PythonWorkerRequest): void {
  if (!handler) throw new Error("the interpreter is not serving");
  handler(req);
}
