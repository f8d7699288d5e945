/**
 * Backpressure on a WebSocket's answers (src/server/ws-answers.ts), with a socket whose sends the
 * test completes by hand: what is "on its way out" is then a fact of the test, not of the network.
 */
import type { WSContext } from "hono/ws";
import { describe, expect, it } from "vitest";
import { answerFlow, MAX_UNSENT_BYTES } from "../../src/server/ws-answers.ts";
import { MemoryBudget, SMALL_ARRIVING_BYTES } from "../../src/server/memory.ts";

/** A Node-like socket: `send` keeps its callback until `flush()` hands the oldest answer on. */
function fakeSocket() {
  const sent: string[] = [];
  const callbacks: (() => void)[] = [];
  const raw = {
    bufferedAmount: 0,
    send(data: string, cb: () => void) {
      sent.push(data);
      callbacks.push(cb);
    },
  };
  const ws = { raw, send: () => expect.unreachable("a Node socket is sent to with its callback") } as unknown as WSContext;
  return { ws, sent, flush: () => callbacks.shift()!() };
}

/** Whether `p` has settled by the time already-queued work has run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("answers on their way out", () => {
  it("a socket with more than the limit unsent is answered no further until it drains to the limit", async () => {
    const flow = answerFlow(undefined);
    const { ws, sent, flush } = fakeSocket();
    const third = MAX_UNSENT_BYTES / 4;
    for (let i = 0; i < 4; i++) flow.send(ws, "a".repeat(third));
    expect(flow.unsentBytes).toBe(MAX_UNSENT_BYTES);
    expect(await settled(flow.ready())).toBe(true); // exactly the limit: still answered
    flow.send(ws, "b");
    const waiting = flow.ready();
    expect(await settled(waiting)).toBe(false);
    flush(); // down to the limit minus a quarter plus one byte
    expect(await settled(waiting)).toBe(true);
    expect(sent).toHaveLength(5);
    expect(flow.unsentBytes).toBe(MAX_UNSENT_BYTES - third + 1);
  });

  it("wakes what waits only once the unsent bytes are back within the limit, exactly the limit included", async () => {
    const flow = answerFlow(undefined);
    const { ws, flush } = fakeSocket();
    flow.send(ws, "b");
    flow.send(ws, "a".repeat(MAX_UNSENT_BYTES / 2));
    flow.send(ws, "a".repeat(MAX_UNSENT_BYTES / 2 + 1));
    const waiting = flow.ready();
    flush(); // "b" gone: the limit plus one byte still unsent
    expect(flow.unsentBytes).toBe(MAX_UNSENT_BYTES + 1);
    expect(await settled(waiting)).toBe(false);
    flush(); // half gone: under the limit
    expect(await settled(waiting)).toBe(true);
    // Exactly the limit unsent after a send completes: answered again.
    const again = answerFlow(undefined);
    const other = fakeSocket();
    again.send(other.ws, "b");
    again.send(other.ws, "a".repeat(MAX_UNSENT_BYTES));
    const next = again.ready();
    other.flush();
    expect(again.unsentBytes).toBe(MAX_UNSENT_BYTES);
    expect(await settled(next)).toBe(true);
  });

  it("a closed socket wakes what waits on it", async () => {
    const flow = answerFlow(undefined);
    const { ws } = fakeSocket();
    flow.send(ws, "a".repeat(MAX_UNSENT_BYTES + 1));
    const waiting = flow.ready();
    expect(await settled(waiting)).toBe(false);
    flow.close();
    expect(await settled(waiting)).toBe(true);
  });

  it("a large answer is held in the budget's share for answers until sent; one that does not fit becomes OVERLOADED", async () => {
    const budget = new MemoryBudget(16 * SMALL_ARRIVING_BYTES, () => 0); // answers' share: 4 × 64 KiB
    const flow = answerFlow(budget);
    const { ws, sent, flush } = fakeSocket();
    flow.send(ws, "s".repeat(SMALL_ARRIVING_BYTES)); // small: not counted
    expect(budget.answerBytes).toBe(0);
    const large = "l".repeat(SMALL_ARRIVING_BYTES + 1);
    flow.send(ws, large);
    expect(budget.answerBytes).toBe(2 * large.length); // two bytes a character, as stored states
    expect(budget.usedBytes).toBe(0); // beside what is kept, not in it
    flow.send(ws, large); // 4 × 64 KiB + 4 bytes with the first: over the share
    expect(budget.answerBytes).toBe(2 * large.length);
    expect(JSON.parse(sent[2]!)).toMatchObject({ type: "error", data: { reason: "OVERLOADED", retry_after_s: 5 } });
    flush();
    flush();
    flush();
    expect(budget.answerBytes).toBe(0); // sent: given back
    flow.send(ws, large);
    expect(sent[3]).toBe(large); // fits again
  });

  it("a socket that cannot call back (a Durable Object's, or none) is sent to as before", () => {
    const flow = answerFlow(new MemoryBudget(1, () => 0));
    const large = "x".repeat(SMALL_ARRIVING_BYTES * 2);
    // No bufferedAmount; a bufferedAmount but no send; no raw socket at all.
    for (const raw of [{ send: () => expect.unreachable() }, { bufferedAmount: 0 }, undefined]) {
      const got: string[] = [];
      const ws = { raw, send: (d: string) => got.push(d) } as unknown as WSContext;
      flow.send(ws, large);
      expect(got).toEqual([large]);
    }
    expect(flow.unsentBytes).toBe(0);
  });
});
