/**
 * Backpressure on a WebSocket's answers: a client that stops reading leaves them in this process
 * until its socket drains. Before this, one client asking for a 900,000-character episode's state
 * every few milliseconds and reading nothing made the server hold 2.9 GB (3,000 answers).
 *
 * - A socket with more than MAX_UNSENT_BYTES of answers not yet handed to the kernel is answered no
 *   further until they go: its next message waits (wsHandlers), and as the client keeps sending,
 *   the per-socket limits on waiting messages cut it off.
 * - A large answer (over SMALL_ARRIVING_BYTES) is held against the memory budget's share for
 *   answers until it is sent; when it does not fit, the client gets OVERLOADED instead (its
 *   `state` again later). So many sockets each holding one large unread answer stay inside it too.
 *
 * A transport whose socket cannot say when an answer has gone (a Durable Object's) sends as before:
 * the platform buffers, one episode per object.
 */
import type { WSContext } from "hono/ws";
import { toApiError } from "../env/errors.ts";
import { SMALL_ARRIVING_BYTES, type MemoryBudget } from "./memory.ts";
import { wsError } from "./ws-session.ts";

/** Bytes of answers a socket may have on their way out before it is answered no further. */
export const MAX_UNSENT_BYTES = 64 * 1024;

/** Node's `ws` socket: `send` calls back once the data is handed to the kernel (or failed). */
interface CallbackSocket {
  send(data: string, cb: (err?: Error) => void): void;
  bufferedAmount: number;
}

function callbackSocket(ws: WSContext): CallbackSocket | undefined {
  const raw = ws.raw as Partial<CallbackSocket> | undefined;
  return typeof raw?.send === "function" && typeof raw.bufferedAmount === "number" ? (raw as CallbackSocket) : undefined;
}

export function answerFlow(budget: MemoryBudget | undefined) {
  let unsent = 0;
  let drained: (() => void) | undefined;
  const wake = () => {
    const resolve = drained;
    drained = undefined;
    resolve?.();
  };
  return {
    /** Bytes of answers on their way out (for tests). */
    get unsentBytes(): number {
      return unsent;
    },
    /** Resolves once this socket's unsent answers are within the limit, or it closed. */
    ready(): Promise<void> {
      if (unsent <= MAX_UNSENT_BYTES) return Promise.resolve();
      return new Promise((resolve) => (drained = resolve));
    },
    send(ws: WSContext, answer: string): void {
      const socket = callbackSocket(ws);
      if (!socket) return ws.send(answer);
      let text = answer;
      let held = 0;
      if (budget && text.length > SMALL_ARRIVING_BYTES) {
        try {
          // Counted as stored states are: two bytes a character.
          budget.holdAnswer(2 * text.length);
          held = 2 * text.length;
        } catch (err) {
          text = JSON.stringify(wsError(toApiError(err)));
        }
      }
      const bytes = text.length;
      unsent += bytes;
      // Called when the answer is handed to the kernel, or with an error when the socket is gone.
      socket.send(text, () => {
        unsent -= bytes;
        if (held > 0) budget!.releaseAnswer(held);
        if (unsent <= MAX_UNSENT_BYTES) wake();
      });
    },
    /** The socket closed: nothing waits for it any more. */
    close: wake,
  };
}
