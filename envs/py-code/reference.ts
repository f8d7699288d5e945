/**
 * Reference solutions of the py-code tasks, used ONLY by the tests (test/envs/envs-py-code.test.ts) to
 * check every task's examples and hidden tests in the python sandbox. The environment never
 * imports this file, so no prompt or observation can contain it.
 */
export const REFERENCE: Readonly<Record<string, string>> = {
  "reverse-words": `def reverse_words(s):
    return " ".join(reversed(s.split()))`,
  "is-palindrome": `def is_palindrome(s):
    t = [c.lower() for c in s if c.isalnum()]
    return t == t[::-1]`,
  "count-vowels": `def count_vowels(s):
    return sum(1 for c in s if c in "aeiouAEIOU")`,
  fizzbuzz: `def fizzbuzz(n):
    out = []
    for i in range(1, n + 1):
        out.append("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i))
    return out`,
  gcd: `def gcd(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a`,
  "is-prime": `def is_prime(n):
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    i = 3
    while i * i <= n:
        if n % i == 0:
            return False
        i += 2
    return True`,
  "digit-sum": `def digit_sum(n):
    return sum(int(d) for d in str(abs(n)))`,
  fibonacci: `def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a`,
  "prime-factors": `def prime_factors(n):
    out = []
    d = 2
    while d * d <= n:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1 if d == 2 else 2
    if n > 1:
        out.append(n)
    return out`,
  "to-roman": `def to_roman(n):
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = []
    for value, sym in table:
        while n >= value:
            out.append(sym)
            n -= value
    return "".join(out)`,
  "from-roman": `def from_roman(s):
    v = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, c in enumerate(s):
        if i + 1 < len(s) and v[c] < v[s[i + 1]]:
            total -= v[c]
        else:
            total += v[c]
    return total`,
  "run-length-encode": `from itertools import groupby

def rle(s):
    return "".join(f"{k}{len(list(g))}" for k, g in groupby(s))`,
  "is-anagram": `def is_anagram(a, b):
    norm = lambda s: sorted(s.replace(" ", "").lower())
    return norm(a) == norm(b)`,
  "max-subarray": `def max_subarray(nums):
    best = cur = nums[0]
    for x in nums[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best`,
  "two-sum": `def two_sum(nums, target):
    seen = {}
    for j, x in enumerate(nums):
        if target - x in seen:
            return [seen[target - x], j]
        seen.setdefault(x, j)
    return []`,
  "merge-intervals": `def merge_intervals(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out`,
  flatten: `def flatten(xs):
    out = []
    for x in xs:
        if isinstance(x, list):
            out.extend(flatten(x))
        else:
            out.append(x)
    return out`,
  chunk: `def chunk(xs, n):
    return [xs[i:i + n] for i in range(0, len(xs), n)]`,
  rotate: `def rotate(xs, k):
    if not xs:
        return []
    k %= len(xs)
    return xs[-k:] + xs[:-k] if k else list(xs)`,
  transpose: `def transpose(m):
    return [list(col) for col in zip(*m)]`,
  "balanced-brackets": `def balanced(s):
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack`,
  "word-frequency": `import re
from collections import Counter

def word_freq(s):
    return dict(Counter(w.lower() for w in re.findall(r"[A-Za-z]+", s)))`,
  "pascal-row": `def pascal_row(n):
    row = [1]
    for k in range(n):
        row.append(row[-1] * (n - k) // (k + 1))
    return row`,
  "collatz-steps": `def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps`,
  "to-binary": `def to_binary(n):
    if n == 0:
        return "0"
    digits = []
    while n:
        digits.append("01"[n & 1])
        n >>= 1
    return "".join(reversed(digits))`,
  "longest-common-prefix": `import os

def common_prefix(words):
    return os.path.commonprefix(words) if words else ""`,
  caesar: `def caesar(s, k):
    out = []
    for c in s:
        if "a" <= c <= "z":
            out.append(chr((ord(c) - 97 + k) % 26 + 97))
        elif "A" <= c <= "Z":
            out.append(chr((ord(c) - 65 + k) % 26 + 65))
        else:
            out.append(c)
    return "".join(out)`,
  "second-largest": `def second_largest(xs):
    d = sorted(set(xs))
    return d[-2] if len(d) >= 2 else None`,
  "count-islands": `def count_islands(grid):
    seen = set()
    count = 0
    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            if cell == "1" and (r, c) not in seen:
                count += 1
                stack = [(r, c)]
                seen.add((r, c))
                while stack:
                    y, x = stack.pop()
                    for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                        if 0 <= ny < len(grid) and 0 <= nx < len(grid[ny]) and grid[ny][nx] == "1" and (ny, nx) not in seen:
                            seen.add((ny, nx))
                            stack.append((ny, nx))
    return count`,
  median: `def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2`,

  "sum-two": `a, b = map(int, input().split())
print(a + b)`,
  "max-of-list": `n = int(input())
print(max(map(int, input().split())))`,
  "reverse-line": `print(input()[::-1])`,
  "fizzbuzz-lines": `n = int(input())
for i in range(1, n + 1):
    print("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else i)`,
  "word-count": `import sys
print(len(sys.stdin.read().split()))`,
  "sort-names": `import sys
lines = sys.stdin.read().split("\\n")
n = int(lines[0])
for name in sorted(lines[1:1 + n]):
    print(name)`,
  factorial: `import math
print(math.factorial(int(input())))`,
  "gcd-lcm": `import math
a, b = map(int, input().split())
g = math.gcd(a, b)
print(g, a * b // g)`,
  "letter-counts": `from collections import Counter
c = Counter(ch for ch in input() if "a" <= ch <= "z")
for ch in sorted(c):
    print(ch, c[ch])`,
  "diagonal-sum": `n = int(input())
print(sum(int(input().split()[i]) for i in range(n)))`,
  "palindrome-check": `s = input().strip()
print("YES" if s == s[::-1] else "NO")`,
  "primes-up-to": `n = int(input())
sieve = [True] * (n + 1)
primes = []
for i in range(2, n + 1):
    if sieve[i]:
        primes.append(i)
        for j in range(i * i, n + 1, i):
            sieve[j] = False
print(" ".join(map(str, primes)))`,
  "multiply-cases": `t = int(input())
for _ in range(t):
    a, b = map(int, input().split())
    print(a * b)`,
  "sort-numbers": `print(" ".join(map(str, sorted(map(int, input().split())))))`,
  "star-triangle": `for i in range(1, int(input()) + 1):
    print("*" * i)`,
  "distinct-chars": `print(len(set(input())))`,
  "even-odd": `import sys
data = sys.stdin.read().split()
nums = list(map(int, data[1:1 + int(data[0])]))
even = sum(1 for x in nums if x % 2 == 0)
print(even, len(nums) - even)`,
  "binary-to-decimal": `print(int(input().strip(), 2))`,
  "decimal-to-hex": `print(format(int(input()), "X"))`,
  "capitalize-words": `print(" ".join(w[:1].upper() + w[1:] for w in input().split(" ")))`,
  "top-k-sum": `n, k = map(int, input().split())
print(sum(sorted(map(int, input().split()), reverse=True)[:k]))`,
  "celsius-to-fahrenheit": `c = float(input())
print(f"{c * 9 / 5 + 32:.1f}")`,
  "best-score": `n = int(input())
best = None
for _ in range(n):
    name, score = input().split()
    if best is None or int(score) > best[1]:
        best = (name, int(score))
print(best[0])`,
  "remove-vowels": `print("".join(c for c in input() if c not in "aeiouAEIOU"))`,
  "big-fibonacci": `a, b = 0, 1
for _ in range(int(input())):
    a, b = b, a + b
print(a)`,
  "longest-word": `words = input().split()
best = ""
for w in words:
    if len(w) > len(best):
        best = w
print(best)`,
  "prefix-sums": `from itertools import accumulate
n = int(input())
print(" ".join(map(str, accumulate(map(int, input().split())))))`,
  "count-hashes": `r, c = map(int, input().split())
print(sum(input().count("#") for _ in range(r)))`,
  "lcs-length": `a = input()
b = input()
prev = [0] * (len(b) + 1)
for ch in a:
    cur = [0]
    for j, bj in enumerate(b):
        cur.append(prev[j] + 1 if ch == bj else max(prev[j + 1], cur[j]))
    prev = cur
print(prev[-1])`,
  "distinct-points": `n = int(input())
print(len({tuple(input().split()) for _ in range(n)}))`,
};
