/**
 * The server's memory budget (ENVWORKER_MAX_MEMORY_MB): what it keeps for clients — every stored
 * episode state, every WebSocket message waiting its turn — counted against one limit, of which
 * each client may keep a share (ENVWORKER_CLIENT_SHARE), so one client filling its share does not
 * deny the others; beside it, shares of their own for what is in transit: request bodies and
 * frames arriving (a quarter for large ones, a sixteenth for small ones in pieces), answers not
 * yet read (a quarter) and large parsed requests waiting for their work (a quarter, each client
 * its part of it). Past a limit, work that would keep more (a new episode, a step that grows one,
 * another queued message, a slow body, a large answer, a large request) is refused with 503
 * OVERLOADED and a Retry-After; what is already kept keeps working.
 */
import { ApiError } from "../env/errors.ts";

/** Seconds a refused client is told to wait (Retry-After). */
export const OVERLOADED_RETRY_AFTER_S = 5;

export interface BudgetOptions {
  /**
   * The part of the limit (0–1] one client may keep (ENVWORKER_CLIENT_SHARE): past it that client's
   * new episodes, growing steps, queued messages and large parsed requests get OVERLOADED, while
   * other clients are served. 1 (the default here): no share of its own.
   */
  clientShare?: number;
  /** Bytes the episode store holds for one client (its episodes). */
  storedBy?: (client: string) => number;
}

export class MemoryBudget {
  /** Bytes held outside the episode store (queued WebSocket messages, parsed requests waiting). */
  private held = 0;
  /** The same, per client. */
  private readonly heldBy = new Map<string, number>();
  /** What one client may keep at most (see BudgetOptions.clientShare). */
  readonly clientLimitBytes: number;

  constructor(
    readonly limitBytes: number,
    /** Bytes the episode store holds now. */
    private readonly stored: () => number,
    private readonly opts: BudgetOptions = {},
  ) {
    this.clientLimitBytes = limitBytes * Math.min(1, opts.clientShare ?? 1);
  }

  get usedBytes(): number {
    return this.stored() + this.held;
  }

  /** Bytes kept for one client now: its episodes and what it has waiting. */
  usedBy(client: string): number {
    return (this.opts.storedBy?.(client) ?? 0) + (this.heldBy.get(client) ?? 0);
  }

  /**
   * Throws OVERLOADED unless `extra` more bytes fit (`admit(0)`: is there room at all): in the
   * limit, and for a `client`, in its share of it (a client keeping nothing yet always gets one in,
   * so a share smaller than one large episode still serves it).
   */
  admit(extra: number, client?: string): void {
    const used = this.usedBytes;
    if (used + Math.max(0, extra) > this.limitBytes || (extra === 0 && used >= this.limitBytes)) {
      throw new ApiError(
        "OVERLOADED",
        `the server's memory budget (${Math.round(this.limitBytes / 2 ** 20)} MiB for episodes and queued messages) is used up; retry later, or close finished episodes`,
        { retry_after_s: OVERLOADED_RETRY_AFTER_S },
      );
    }
    if (client === undefined || this.clientLimitBytes >= this.limitBytes) return;
    const mine = this.usedBy(client);
    if (mine > 0 && (mine + Math.max(0, extra) > this.clientLimitBytes || (extra === 0 && mine >= this.clientLimitBytes))) {
      throw new ApiError(
        "OVERLOADED",
        `this client's share of the server's memory budget (${Math.round(this.clientLimitBytes / 2 ** 20)} MiB of ${Math.round(this.limitBytes / 2 ** 20)} MiB) is used up; close finished episodes, or retry later`,
        { retry_after_s: OVERLOADED_RETRY_AFTER_S },
      );
    }
  }

  /** Keep `bytes` more (a queued message, a parsed request), or throw OVERLOADED; give them back with release(). */
  hold(bytes: number, client?: string): void {
    this.admit(bytes, client);
    this.held += bytes;
    if (client !== undefined) this.heldBy.set(client, (this.heldBy.get(client) ?? 0) + bytes);
  }

  release(bytes: number, client?: string): void {
    this.held -= bytes;
    if (client === undefined) return;
    const left = (this.heldBy.get(client) ?? 0) - bytes;
    if (left > 0) this.heldBy.set(client, left);
    else this.heldBy.delete(client);
  }

  /** Bytes of request bodies on their way in (see holdBody). */
  private bodies = 0;
  /** Bytes of small request bodies and frames on their way in (see holdSmallBody). */
  private smallBodies = 0;
  /** Bytes of answers on their way out (see holdAnswer). */
  private answers = 0;
  /** Bytes of parsed requests waiting for their work (see holdRequest), in all and per client. */
  private requests = 0;
  private readonly requestsBy = new Map<string, number>();

  /**
   * Keep a large parsed request of `bytes` until its work is done (it waits for a thread or a
   * sandbox slot meanwhile), or throw OVERLOADED. Requests have a share of their own, a quarter of
   * the limit, beside what is kept, and each client a part of it (its clientShare): 600 connections
   * each sending a 1 MiB `/score` held 1.45 GB before this, counted nowhere. One alone always fits,
   * and so does a client's first.
   */
  holdRequest(bytes: number, client: string): void {
    const mine = this.requestsBy.get(client) ?? 0;
    const share = this.limitBytes / 4;
    if (mine > 0 && mine + bytes > share * Math.min(1, this.opts.clientShare ?? 1)) {
      throw new ApiError("OVERLOADED", `this client's requests waiting for their work have used up its share of the server's memory budget (${Math.round((share * Math.min(1, this.opts.clientShare ?? 1)) / 2 ** 20)} MiB); wait for their answers`, {
        retry_after_s: OVERLOADED_RETRY_AFTER_S,
      });
    }
    this.requests = this.holdShare(this.requests, share, bytes, 0, "parsed requests waiting for their work");
    this.requestsBy.set(client, mine + bytes);
  }

  releaseRequest(bytes: number, client: string): void {
    this.requests -= bytes;
    const left = (this.requestsBy.get(client) ?? 0) - bytes;
    if (left > 0) this.requestsBy.set(client, left);
    else this.requestsBy.delete(client);
  }

  /** Bytes of parsed requests waiting for their work now. */
  get requestBytes(): number {
    return this.requests;
  }

  /**
   * Keep `bytes` more of request bodies arriving, or throw OVERLOADED. Bodies have their own share,
   * a quarter of the limit, beside what is kept: many clients each sending a large body slowly
   * cannot hold more than that, and when episodes fill the budget, the small bodies that close
   * them still get through; a body arriving alone is always taken (at most one body over the share).
   * `own`: what the same body holds already. Give them back with releaseBody().
   */
  holdBody(bytes: number, own = 0): void {
    this.bodies = this.holdShare(this.bodies, this.limitBytes / 4, bytes, own, "request bodies arriving at once");
  }

  releaseBody(bytes: number): void {
    this.bodies -= bytes;
  }

  /**
   * The same for bodies and frames of at most SMALL_ARRIVING_BYTES that did not arrive in one
   * piece, in a share of their own, a sixteenth of the limit: thousands of connections each sending
   * most of a small body cannot hold more than that, and large slow bodies cannot crowd out the
   * small requests (steps, closes) that everyone else sends.
   */
  holdSmallBody(bytes: number, own = 0): void {
    this.smallBodies = this.holdShare(this.smallBodies, this.limitBytes / 16, bytes, own, "small request bodies and messages arriving in pieces");
  }

  releaseSmallBody(bytes: number): void {
    this.smallBodies -= bytes;
  }

  /**
   * Keep `bytes` more of answers on their way out (a client not reading them keeps them here), or
   * throw OVERLOADED. Answers have a share of their own, a quarter of the limit: clients that stop
   * reading cannot hold more than that, nor crowd out new episodes. One alone always fits.
   */
  holdAnswer(bytes: number): void {
    this.answers = this.holdShare(this.answers, this.limitBytes / 4, bytes, 0, "answers not yet read by their clients");
  }

  releaseAnswer(bytes: number): void {
    this.answers -= bytes;
  }

  /** Throws OVERLOADED unless an answer of `bytes` would fit now: checked before one costly to make is made. */
  answerRoom(bytes: number): void {
    this.holdShare(this.answers, this.limitBytes / 4, bytes, 0, "answers not yet read by their clients");
  }

  /** Bytes of answers on their way out now. */
  get answerBytes(): number {
    return this.answers;
  }

  /** `held` plus `bytes`, or OVERLOADED when they do not fit in `share` (one alone always fits). */
  private holdShare(held: number, share: number, bytes: number, own: number, what: string): number {
    // One at a time always fits, so a budget smaller than a few of them still serves them.
    // `own`: what this one already holds (a body growing as it arrives is still alone).
    if (held - own > 0 && held + bytes > share) {
      throw new ApiError("OVERLOADED", `${what} have used up their share of the server's memory budget (${Math.round(share / 2 ** 20)} MiB); retry later`, {
        retry_after_s: OVERLOADED_RETRY_AFTER_S,
      });
    }
    return held + bytes;
  }

  /** Bytes of request bodies arriving now. */
  get bodyBytes(): number {
    return this.bodies;
  }

  /** Bytes of small bodies and frames arriving in pieces now. */
  get smallBodyBytes(): number {
    return this.smallBodies;
  }
}

/**
 * Bodies and frames up to this size are small: they usually come whole, in a packet or two, and
 * are counted only when they do not (SMALL share, see MemoryBudget.holdSmallBody); larger ones are
 * counted from their first byte against the bodies' share.
 */
export const SMALL_ARRIVING_BYTES = 64 * 1024;

/**
 * One request body or WebSocket frame on its way in, held against the budget's share for its size:
 * up to SMALL_ARRIVING_BYTES in the small share, above it in the bodies' share.
 */
export class Arriving {
  private small = 0;
  private large = 0;

  constructor(private readonly budget: MemoryBudget | undefined) {}

  /** It has `size` bytes now (more or fewer); throws OVERLOADED when they do not fit. */
  resize(size: number): void {
    const budget = this.budget;
    if (!budget) return;
    const small = size > SMALL_ARRIVING_BYTES ? 0 : size;
    const large = size > SMALL_ARRIVING_BYTES ? size : 0;
    // Give back before taking: a body growing past SMALL_ARRIVING_BYTES moves to the other share.
    if (small < this.small) budget.releaseSmallBody(this.small - small);
    if (large < this.large) budget.releaseBody(this.large - large);
    this.small = Math.min(this.small, small);
    this.large = Math.min(this.large, large);
    if (small > this.small) budget.holdSmallBody(small - this.small, this.small);
    this.small = small;
    if (large > this.large) budget.holdBody(large - this.large, this.large);
    this.large = large;
  }

  /** It is done (used, refused or gone): give back what it held. */
  release(): void {
    this.budget?.releaseSmallBody(this.small);
    this.budget?.releaseBody(this.large);
    this.small = 0;
    this.large = 0;
  }
}
