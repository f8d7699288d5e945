/**
 * "Did you mean …" for a mistyped environment name: the CLI's unknown specs (src/cli/load.ts),
 * `envworker eval`'s, and the server's UNKNOWN_ENV.
 */

/** Levenshtein distance (insertions, deletions, substitutions), for names of a few dozen characters. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** ` (did you mean "reverse-text"?)` for a name a few typos from known ones (the closest first), else "". */
export function didYouMean(name: string, known: readonly string[]): string {
  // A client's name (a URL's path segment) may be long: no edit distance over what no name is.
  if (name.length > 100) return "";
  const close = [...new Set(known)]
    .map((k) => ({ k, d: editDistance(name.toLowerCase(), k.toLowerCase()) }))
    .filter(({ k, d }) => d <= Math.max(2, Math.floor(Math.max(name.length, k.length) / 4)) || k.includes(name) || name.includes(k))
    .sort((x, y) => x.d - y.d)
    .slice(0, 3)
    .map(({ k }) => JSON.stringify(k));
  return close.length === 0 ? "" : ` (did you mean ${close.join(" or ")}?)`;
}
