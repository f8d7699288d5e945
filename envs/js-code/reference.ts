/**
 * Reference solutions of the js-code tasks, used ONLY by the tests (test/envs/envs-js-code.test.ts) to
 * check every task's examples and hidden tests. The environment never imports this file, so no
 * prompt or observation can contain it. Solutions are written as a model would write them (source
 * text); those marked `typescript` go through the same type stripping as a model's TypeScript.
 */
export interface ReferenceSolution {
  language: "javascript" | "typescript";
  code: string;
}

const js = (code: string): ReferenceSolution => ({ language: "javascript", code });
const ts = (code: string): ReferenceSolution => ({ language: "typescript", code });

export const REFERENCE: Readonly<Record<string, ReferenceSolution>> = {
  "reverse-words": js(String.raw`
function reverseWords(s) {
  return s.trim().split(/\s+/).filter(Boolean).reverse().join(" ");
}`),
  "is-palindrome": ts(String.raw`
function isPalindrome(s: string): boolean {
  const t: string = s.toLowerCase().replace(/[^a-z0-9]/g, "");
  return t === t.split("").reverse().join("");
}`),
  "count-vowels": js(String.raw`
function countVowels(s) {
  return (s.match(/[aeiou]/gi) || []).length;
}`),
  "capitalize-words": js(String.raw`
function capitalizeWords(s) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    const start = i === 0 || s[i - 1] === " ";
    out += start && c >= "a" && c <= "z" ? c.toUpperCase() : c;
  }
  return out;
}`),
  "run-length-encode": js(String.raw`
function runLengthEncode(s) {
  let out = "";
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j < s.length && s[j] === s[i]) j++;
    out += s[i] + (j - i);
    i = j;
  }
  return out;
}`),
  "is-anagram": js(String.raw`
function isAnagram(a, b) {
  const norm = (s) => s.toLowerCase().replace(/ /g, "").split("").sort().join("");
  return norm(a) === norm(b);
}`),
  "longest-common-prefix": ts(String.raw`
export function longestCommonPrefix(words: string[]): string {
  if (words.length === 0) return "";
  let prefix = words[0];
  for (const w of words) while (!w.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix;
}`),
  "caesar-cipher": js(String.raw`
function caesarCipher(s, k) {
  const shift = ((k % 26) + 26) % 26;
  return s.replace(/[a-z]/gi, (c) => {
    const base = c <= "Z" ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - base + shift) % 26) + base);
  });
}`),
  "to-camel-case": js(String.raw`
function toCamelCase(s) {
  const words = s.split(/[ _-]+/).filter((w) => w !== "").map((w) => w.toLowerCase());
  return words.map((w, i) => (i === 0 ? w : w.charAt(0).toUpperCase() + w.slice(1))).join("");
}`),
  "longest-unique-substring": js(String.raw`
function longestUniqueSubstring(s) {
  const last = new Map();
  let best = 0, start = 0;
  for (let i = 0; i < s.length; i++) {
    if (last.has(s[i]) && last.get(s[i]) >= start) start = last.get(s[i]) + 1;
    last.set(s[i], i);
    best = Math.max(best, i - start + 1);
  }
  return best;
}`),
  "balanced-brackets": js(String.raw`
function isBalanced(s) {
  const pairs = { ")": "(", "]": "[", "}": "{" };
  const stack = [];
  for (const c of s) {
    if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c in pairs && Object.hasOwn(pairs, c)) {
      if (stack.pop() !== pairs[c]) return false;
    }
  }
  return stack.length === 0;
}`),
  "word-frequency": ts(String.raw`
function wordFrequency(text: string): Record<string, number> {
  const counts = new Map<string, number>();
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  return Object.fromEntries(counts);
}`),
  "sum-of-evens": js(String.raw`
function sumOfEvens(nums) {
  return nums.filter((n) => n % 2 === 0).reduce((a, b) => a + b, 0);
}`),
  "max-subarray-sum": js(String.raw`
function maxSubarraySum(nums) {
  let best = nums[0], cur = 0;
  for (const x of nums) {
    cur = Math.max(x, cur + x);
    best = Math.max(best, cur);
  }
  return best;
}`),
  "chunk-array": ts(String.raw`
function chunk<T>(arr: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < arr.length; i += size) out.push(arr.slice(i, i + size));
  return out;
}`),
  "flatten-deep": js(String.raw`
function flattenDeep(arr) {
  return arr.reduce((acc, x) => acc.concat(Array.isArray(x) ? flattenDeep(x) : [x]), []);
}`),
  "unique-in-order": js(String.raw`
function unique(arr) {
  return [...new Set(arr)];
}`),
  "rotate-array": js(String.raw`
function rotate(arr, k) {
  const n = arr.length;
  if (n === 0) return [];
  const r = ((k % n) + n) % n;
  return arr.slice(n - r).concat(arr.slice(0, n - r));
}`),
  "two-sum": js(String.raw`
function twoSum(nums, target) {
  const first = new Map();
  for (let j = 0; j < nums.length; j++) {
    const need = target - nums[j];
    if (first.has(need)) return [first.get(need), j];
    if (!first.has(nums[j])) first.set(nums[j], j);
  }
  return null;
}`),
  "merge-intervals": ts(String.raw`
function mergeIntervals(intervals: [number, number][]): [number, number][] {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}`),
  "matrix-transpose": js(String.raw`
function transpose(matrix) {
  if (matrix.length === 0) return [];
  return matrix[0].map((_, c) => matrix.map((row) => row[c]));
}`),
  "spiral-order": js(String.raw`
function spiralOrder(matrix) {
  const out = [];
  if (matrix.length === 0) return out;
  let top = 0, bottom = matrix.length - 1, left = 0, right = matrix[0].length - 1;
  while (top <= bottom && left <= right) {
    for (let c = left; c <= right; c++) out.push(matrix[top][c]);
    top++;
    for (let r = top; r <= bottom; r++) out.push(matrix[r][right]);
    right--;
    if (top <= bottom) {
      for (let c = right; c >= left; c--) out.push(matrix[bottom][c]);
      bottom--;
    }
    if (left <= right) {
      for (let r = bottom; r >= top; r--) out.push(matrix[r][left]);
      left++;
    }
  }
  return out;
}`),
  "product-except-self": js(String.raw`
function productExceptSelf(nums) {
  const out = new Array(nums.length).fill(1);
  let acc = 1;
  for (let i = 0; i < nums.length; i++) { out[i] = acc; acc *= nums[i]; }
  acc = 1;
  for (let i = nums.length - 1; i >= 0; i--) { out[i] *= acc; acc *= nums[i]; }
  return out;
}`),
  "longest-increasing-subsequence": ts(String.raw`
function lengthOfLIS(nums: number[]): number {
  const tails: number[] = [];
  for (const x of nums) {
    let lo = 0, hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (tails[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    tails[lo] = x;
  }
  return tails.length;
}`),
  "moving-average": js(String.raw`
function movingAverage(nums, k) {
  const out = [];
  let sum = 0;
  for (let i = 0; i < nums.length; i++) {
    sum += nums[i];
    if (i >= k) sum -= nums[i - k];
    if (i >= k - 1) out.push(sum / k);
  }
  return out;
}`),
  fizzbuzz: js(String.raw`
function fizzBuzz(n) {
  const out = [];
  for (let i = 1; i <= n; i++) out.push(i % 15 === 0 ? "FizzBuzz" : i % 3 === 0 ? "Fizz" : i % 5 === 0 ? "Buzz" : String(i));
  return out;
}`),
  gcd: js(String.raw`
function gcd(a, b) {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}`),
  "is-prime": ts(String.raw`
function isPrime(n: number): boolean {
  if (n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}`),
  "digit-sum": js(String.raw`
function digitSum(n) {
  return String(n).split("").reduce((s, d) => s + Number(d), 0);
}`),
  fibonacci: js(String.raw`
function fib(n) {
  let a = 0, b = 1;
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
}`),
  "prime-factors": js(String.raw`
function primeFactors(n) {
  const out = [];
  for (let d = 2; d * d <= n; d++) {
    while (n % d === 0) { out.push(d); n /= d; }
  }
  if (n > 1) out.push(n);
  return out;
}`),
  "to-roman": js(String.raw`
function toRoman(n) {
  const table = [[1000, "M"], [900, "CM"], [500, "D"], [400, "CD"], [100, "C"], [90, "XC"], [50, "L"], [40, "XL"], [10, "X"], [9, "IX"], [5, "V"], [4, "IV"], [1, "I"]];
  let out = "";
  for (const [v, s] of table) while (n >= v) { out += s; n -= v; }
  return out;
}`),
  "from-roman": js(String.raw`
function fromRoman(s) {
  const v = { I: 1, V: 5, X: 10, L: 50, C: 100, D: 500, M: 1000 };
  let total = 0;
  for (let i = 0; i < s.length; i++) {
    const x = v[s[i]], next = v[s[i + 1]] || 0;
    total += x < next ? -x : x;
  }
  return total;
}`),
  "to-base": js(String.raw`
function toBase(n, base) {
  return n.toString(base);
}`),
  "pascal-row": js(String.raw`
function pascalRow(n) {
  let row = [1];
  for (let i = 0; i < n; i++) {
    const next = [1];
    for (let j = 1; j < row.length; j++) next.push(row[j - 1] + row[j]);
    next.push(1);
    row = next;
  }
  return row;
}`),
  "collatz-steps": js(String.raw`
function collatzSteps(n) {
  let steps = 0;
  while (n !== 1) { n = n % 2 === 0 ? n / 2 : 3 * n + 1; steps++; }
  return steps;
}`),
  median: ts(String.raw`
function median(nums: number[]): number {
  const s = [...nums].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}`),
  "count-bits": js(String.raw`
function countBits(n) {
  let count = 0;
  while (n > 0) { count += n % 2; n = Math.floor(n / 2); }
  return count;
}`),
  "parse-query-string": js(String.raw`
function parseQuery(query) {
  const out = {};
  const decode = (s) => decodeURIComponent(s.replace(/\+/g, " "));
  for (const pair of query.replace(/^\?/, "").split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const key = eq === -1 ? pair : pair.slice(0, eq);
    const value = eq === -1 ? "" : pair.slice(eq + 1);
    Object.defineProperty(out, decode(key), { value: decode(value), enumerable: true, writable: true, configurable: true });
  }
  return out;
}`),
  "evaluate-rpn": js(String.raw`
function evalRPN(tokens) {
  const st = [];
  for (const t of tokens) {
    if (t === "+" || t === "-" || t === "*" || t === "/") {
      const b = st.pop(), a = st.pop();
      st.push(t === "+" ? a + b : t === "-" ? a - b : t === "*" ? a * b : Math.trunc(a / b));
    } else st.push(Number(t));
  }
  return st[0] + 0;
}`),
  "parse-duration": js(String.raw`
function parseDuration(s) {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(s);
  if (!m || s === "") return null;
  return Number(m[1] || 0) * 3600 + Number(m[2] || 0) * 60 + Number(m[3] || 0);
}`),
  "parse-csv-line": ts(String.raw`
function parseCsvLine(line: string): string[] {
  const fields: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") { fields.push(field); field = ""; }
    else field += c;
  }
  fields.push(field);
  return fields;
}`),
  "evaluate-expression": js(String.raw`
function evaluate(expr) {
  const s = expr.replace(/\s+/g, "");
  let i = 0;
  function parseExpr() {
    let v = parseTerm();
    while (s[i] === "+" || s[i] === "-") v = s[i++] === "+" ? v + parseTerm() : v - parseTerm();
    return v;
  }
  function parseTerm() {
    let v = parseFactor();
    while (s[i] === "*" || s[i] === "/") v = s[i++] === "*" ? v * parseFactor() : v / parseFactor();
    return v;
  }
  function parseFactor() {
    if (s[i] === "-") { i++; return -parseFactor(); }
    if (s[i] === "(") { i++; const v = parseExpr(); i++; return v; }
    const m = /^\d+(\.\d+)?/.exec(s.slice(i));
    i += m[0].length;
    return Number(m[0]);
  }
  return parseExpr();
}`),
  "compare-versions": js(String.raw`
function compareVersions(a, b) {
  const x = a.split(".").map(Number), y = b.split(".").map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = x[i] || 0, q = y[i] || 0;
    if (p !== q) return p > q ? 1 : -1;
  }
  return 0;
}`),
  "to-24-hour": js(String.raw`
function to24Hour(time) {
  const [, h, m, ap] = /^(\d+):(\d\d) (AM|PM)$/.exec(time);
  const hour = (Number(h) % 12) + (ap === "PM" ? 12 : 0);
  return String(hour).padStart(2, "0") + ":" + m;
}`),
  "lru-cache": ts(String.raw`
function simulateLRU(capacity: number, ops: any[][]): number[] {
  const cache = new Map<unknown, number>();
  const out: number[] = [];
  for (const op of ops) {
    if (op[0] === "get") {
      if (!cache.has(op[1])) { out.push(-1); continue; }
      const v = cache.get(op[1])!;
      cache.delete(op[1]);
      cache.set(op[1], v);
      out.push(v);
    } else {
      cache.delete(op[1]);
      cache.set(op[1], op[2]);
      if (cache.size > capacity) cache.delete(cache.keys().next().value);
    }
  }
  return out;
}`),
  "min-stack": js(String.raw`
function simulateMinStack(ops) {
  const stack = [], mins = [], out = [];
  for (const [op, x] of ops) {
    if (op === "push") { stack.push(x); mins.push(mins.length ? Math.min(x, mins[mins.length - 1]) : x); }
    else if (op === "pop") { mins.pop(); out.push(stack.length ? stack.pop() : null); }
    else out.push(mins.length ? mins[mins.length - 1] : null);
  }
  return out;
}`),
  "grid-shortest-path": js(String.raw`
function shortestPath(grid) {
  const h = grid.length, w = grid[0].length;
  let start;
  for (let r = 0; r < h; r++) for (let c = 0; c < w; c++) if (grid[r][c] === "S") start = [r, c];
  const dist = new Map([[start.join(","), 0]]);
  const queue = [start];
  for (let q = 0; q < queue.length; q++) {
    const [r, c] = queue[q];
    const d = dist.get(r + "," + c);
    if (grid[r][c] === "E") return d;
    for (const [dr, dc] of [[1, 0], [-1, 0], [0, 1], [0, -1]]) {
      const nr = r + dr, nc = c + dc, key = nr + "," + nc;
      if (nr < 0 || nc < 0 || nr >= h || nc >= w || grid[nr][nc] === "#" || dist.has(key)) continue;
      dist.set(key, d + 1);
      queue.push([nr, nc]);
    }
  }
  return -1;
}`),
  "topological-order": js(String.raw`
function topoOrder(n, edges) {
  const indeg = new Array(n).fill(0), next = Array.from({ length: n }, () => []);
  for (const [a, b] of edges) { next[a].push(b); indeg[b]++; }
  const out = [];
  const done = new Array(n).fill(false);
  for (let step = 0; step < n; step++) {
    let pick = -1;
    for (let i = 0; i < n; i++) if (!done[i] && indeg[i] === 0) { pick = i; break; }
    if (pick === -1) return null;
    done[pick] = true;
    out.push(pick);
    for (const b of next[pick]) indeg[b]--;
  }
  return out;
}`),
  "group-anagrams": js(String.raw`
function groupAnagrams(words) {
  const groups = new Map();
  for (const w of words) {
    const key = w.split("").sort().join("");
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(w);
  }
  return [...groups.values()];
}`),
  "tree-depth": ts(String.raw`
type Tree = { value: number; left: Tree; right: Tree } | null;
function maxDepth(tree: Tree): number {
  return tree === null ? 0 : 1 + Math.max(maxDepth(tree.left), maxDepth(tree.right));
}`),
  "count-islands": js(String.raw`
function countIslands(grid) {
  const seen = grid.map((row) => Array.from(row, () => false));
  let count = 0;
  for (let r = 0; r < grid.length; r++) {
    for (let c = 0; c < grid[r].length; c++) {
      if (grid[r][c] !== "1" || seen[r][c]) continue;
      count++;
      const stack = [[r, c]];
      seen[r][c] = true;
      while (stack.length) {
        const [y, x] = stack.pop();
        for (const [dy, dx] of [[1, 0], [-1, 0], [0, 1], [0, -1]]) {
          const ny = y + dy, nx = x + dx;
          if (ny >= 0 && nx >= 0 && ny < grid.length && nx < grid[ny].length && grid[ny][nx] === "1" && !seen[ny][nx]) {
            seen[ny][nx] = true;
            stack.push([ny, nx]);
          }
        }
      }
    }
  }
  return count;
}`),
  "deep-equal": js(String.raw`
function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}`),
  "flatten-object": js(String.raw`
function flattenObject(obj, prefix = "", out = {}) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix + k;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) flattenObject(v, key + ".", out);
    else out[key] = v;
  }
  return out;
}`),
  "balanced-teams": js(String.raw`
function minTeamDifference(skills) {
  const total = skills.reduce((a, b) => a + b, 0);
  let reachable = new Set([0]);
  for (const s of skills) {
    const next = new Set(reachable);
    for (const r of reachable) next.add(r + s);
    reachable = next;
  }
  let best = total;
  for (const r of reachable) best = Math.min(best, Math.abs(total - 2 * r));
  return best;
}`),
};
