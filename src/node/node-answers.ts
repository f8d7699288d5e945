/**
 * HTTP answers on their way out, held against the memory budget's share for answers until sent:
 * Node keeps a response the client does not read (and makes the answers to its next pipelined
 * requests meanwhile), but nothing bounds how many connections do that. Before this, 500
 * connections each asking five times for one 900,000-character episode's state and reading
 * nothing made the server hold +750 MB.
 */
import type { ServerResponse } from "node:http";
import type { Context } from "hono";
import type { AnswerHolder } from "../server/app.ts";
import { SMALL_ARRIVING_BYTES, type MemoryBudget } from "../server/memory.ts";

export function nodeAnswers(budget: MemoryBudget): AnswerHolder {
  return {
    room: (_c: Context, bytes: number) => budget.answerRoom(bytes),
    hold(c: Context, bytes: number) {
      const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
      // A connection holds at most one small answer at a time: not counted.
      if (!outgoing || bytes <= SMALL_ARRIVING_BYTES) return;
      budget.holdAnswer(bytes);
      // "close": sent, or the connection gone.
      outgoing.once("close", () => budget.releaseAnswer(bytes));
    },
  };
}
