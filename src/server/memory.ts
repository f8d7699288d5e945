/**
 * The server's memory budget (ENVWORKER_MAX_MEMORY_MB): what it keeps for clients — every stored
 * episode state, every WebSocket message waiting its turn — counted against one limit, and
 * request bodies on their way in against a quarter of it beside that. Past it,
 * work that would keep more (a new episode, a step that grows one, another queued message) is
 * refused with 503 OVERLOADED and a Retry-After; what is already kept keeps working.
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

  /**
   * Keep `bytes` more of request bodies arriving, or throw OVERLOADED. Bodies have their own share,
   * a quarter of the limit, beside what is kept: many clients each sending a large body slowly
   * cannot hold more than that, and when episodes fill the budget, the small bodies that close
   * them still get through; a body arriving alone is always taken (at most one body over the share).
   * `own`: what the same body holds already. Give them back with releaseBody().
   */
  holdBody(bytes: number, own = 0): void {
    const share = this.limitBytes / 4;
    // One body at a time always fits, so a budget smaller than four bodies still serves them.
    // `own`: what this body already holds (a body growing as it arrives is still alone).
    if (this.bodies - own > 0 && this.bodies + bytes > share) {
      throw new ApiError(
        "OVERLOADED",
        `request bodies arriving at once have used up their share of the server's memory budget (${Math.round(share / 2 ** 20)} MiB); retry later`,
        { retry_after_s: OVERLOADED_RETRY_AFTER_S },
      );
    }
    this.bodies += bytes;
  }

  releaseBody(bytes: number): void {
    this.bodies -= bytes;
  }

  /** Bytes of request bodies arriving now. */
  get bodyBytes(): number {
    return this.bodies;
  }
}

/**
 * Bodies and frames this small are not counted while they arrive: they come in a packet or two, a
 * client holds no more than this per connection with them, and counting them would let a few
 * large slow ones hold up every other client's small request (a step, a close).
 */
export const UNCOUNTED_ARRIVING_BYTES = 64 * 1024;

/** One request body or WebSocket frame on its way in, held against the budget's share for them. */
export class Arriving {
  private held = 0;

  constructor(private readonly budget: MemoryBudget | undefined) {}

  /** It has `size` bytes now (more or fewer); throws OVERLOADED, keeping what it held, when they do not fit. */
  resize(size: number): void {
    if (!this.budget) return;
    const want = size > UNCOUNTED_ARRIVING_BYTES ? size : 0;
    if (want < this.held) this.budget.releaseBody(this.held - want);
    else if (want > this.held) this.budget.holdBody(want - this.held, this.held);
    this.held = want;
  }

  /** It is done (used, refused or gone): give back what it held. */
  release(): void {
    this.budget?.releaseBody(this.held);
    this.held = 0;
  }
}
