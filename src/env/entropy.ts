/**
 * Random bytes from the platform's CSPRNG, drawn in blocks: every reset needs a few (an episode id,
 * a seed), and one `crypto.getRandomValues` call costs more than a reverse-text reset's own work.
 * Each byte is handed out once, so ids stay as unguessable as if drawn one by one (Node's
 * `crypto.randomUUID` pools the same way).
 */
const BLOCK = 4096;
let pool = new Uint8Array(0);
let used = 0;

/** `n` fresh random bytes (n ≤ 4096). The view is the caller's: the pool never hands it out again. */
export function randomBytes(n: number): Uint8Array {
  if (n > BLOCK) throw new RangeError(`randomBytes: at most ${BLOCK} bytes at a time`);
  if (used + n > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(BLOCK));
    used = 0;
  }
  const bytes = pool.subarray(used, used + n);
  used += n;
  return bytes;
}

/** A random unsigned 32-bit integer. */
export function randomUint32(): number {
  const b = randomBytes(4);
  return (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
}
