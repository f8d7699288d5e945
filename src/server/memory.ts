/**
 * The server's memory budget (ENVWORKER_MAX_MEMORY_MB): what it keeps for clients — every stored
 * episode state, every WebSocket message waiting its turn — counted against one limit; beside it,
 * shares of their own for what is in transit: request bodies and frames arriving (a quarter for
 * large ones, a sixteenth for small ones in pieces) and answers not yet read (a quarter). Past a
 * limit, work that would keep more (a new episode, a step that grows one, another queued message,
 * a slow body, a large answer) is refused with 503 OVERLOADED and a Retry-After; what is already
 * kept keeps working.
 */
import { ApiError } from "../env/errors.ts";

/** Seconds a refused client is told to wait (Retry-After). */
export const OVERLOADED_RETRY_AFTER_S = 5;

export class MemoryBudget {
  /** Bytes held outside the episode store (queued WebSocket messages). */
  private held = 0;

  constructor(
    readonly limitBytes: number,
    /** Bytes the episode store holds now. */
    private readonly stored: () => number,
  ) {}

  get usedBytes(): number {
    return this.stored() + this.held;
  }

  /** Throws OVERLOADED unless `extra` more bytes fit (`admit(0)`: is there room at all). */
  admit(extra: number): void {
    const used = this.usedBytes;
    if (used + Math.max(0, extra) > this.limitBytes || (extra === 0 && used >= this.limitBytes)) {
      throw new ApiError(
        "OVERLOADED",
        `the server's memory budget (${Math.round(this.limitBytes / 2 ** 20)} MiB for episodes and queued messages) is used up; retry later, or close finished episodes`,
        { retry_after_s: OVERLOADED_RETRY_AFTER_S },
      );
    }
  }

  /** Keep `bytes` more (a queued message), or throw OVERLOADED; give them back with release(). */
  hold(bytes: number): void {
    this.admit(bytes);
    this.held += bytes;
  }

  release(bytes: number): void {
    this.held -= bytes;
  }

  /** Bytes of request bodies on their way in (see holdBody). */
  private bodies = 0;
  /** Bytes of small request bodies and frames on their way in (see holdSmallBody). */
  private smallBodies = 0;
  /** Bytes of answers on their way out (see holdAnswer). */
  private answers = 0;

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
