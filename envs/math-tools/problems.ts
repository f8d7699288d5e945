/**
 * Seeded math problems for math-tools. Every draw goes through the episode's PyRandom, so a seed
 * always gives the same problem; answers are computed exactly (BigInt rationals), never with
 * floating point, and written as an integer, a terminating decimal or a reduced fraction.
 *
 * Kinds by difficulty:
 *   easy   add_sub, multiply, divide, change (shopping), boxes (ceil division)
 *   medium order_of_operations, fractions, percent_of, price_change, reading_days, average_needed
 *   hard   long_expression, compound_interest, count_multiples, sum_of_primes, sequence_term,
 *          tank_fraction, lcm
 */
import { rational as exact, type PyRandom } from "envworker";

const { abs, add, div, mul, rational, sub } = exact;
type Rational = exact.Rational;

export const DIFFICULTIES = ["easy", "medium", "hard"] as const;
export type Difficulty = (typeof DIFFICULTIES)[number];

export interface Problem {
  question: string;
  /** The exact answer: "36", "73.6" or "19/12". */
  answer: string;
  kind: string;
}

// --- exact answers (src/math/rational.ts) ------------------------------------------------------

/** Integer, terminating decimal (denominator 2^a·5^b) or reduced fraction. */
export function formatExact(x: Rational): string {
  if (x.den === 1n) return x.num.toString();
  let d = x.den;
  let twos = 0;
  let fives = 0;
  while (d % 2n === 0n) {
    d /= 2n;
    twos++;
  }
  while (d % 5n === 0n) {
    d /= 5n;
    fives++;
  }
  if (d !== 1n) return `${x.num}/${x.den}`;
  const places = Math.max(twos, fives);
  const scaled = abs(x.num) * 10n ** BigInt(places) / x.den;
  const digits = scaled.toString().padStart(places + 1, "0");
  const text = `${digits.slice(0, -places)}.${digits.slice(-places)}`;
  return x.num < 0n ? `-${text}` : text;
}

/** Round half up to `places` decimals, exactly. */
function roundQ(x: Rational, places: number): Rational {
  const scale = 10n ** BigInt(places);
  const scaled = x.num * scale;
  const twice = (2n * abs(scaled) + x.den) / (2n * x.den); // floor(|v| + 1/2)
  return rational(x.num < 0n ? -twice : twice, scale);
}

// --- words -------------------------------------------------------------------------------------

const NAMES = [
  "Maya", "Liam", "Aisha", "Noah", "Sofia", "Kenji", "Amara", "Lucas", "Priya", "Mateo", "Zara", "Ethan",
  "Leila", "Omar", "Chloe", "Diego", "Hana", "Felix", "Nadia", "Samuel", "Ines", "Tariq", "Yuki", "Elena",
];

/** [singular, plural, price range in dollars]. */
const ITEMS: readonly [string, string, number, number][] = [
  ["notebook", "notebooks", 2, 9],
  ["pen", "pens", 1, 4],
  ["book", "books", 8, 25],
  ["mug", "mugs", 4, 15],
  ["plant", "plants", 5, 30],
  ["ticket", "tickets", 6, 40],
  ["sandwich", "sandwiches", 4, 12],
  ["ball", "balls", 3, 18],
  ["candle", "candles", 2, 11],
  ["puzzle", "puzzles", 7, 28],
];

const THINGS = ["apples", "cookies", "marbles", "stickers", "oranges", "cards", "eggs", "bolts", "beads", "crayons"];

// --- easy --------------------------------------------------------------------------------------

function addSub(rng: PyRandom): Problem {
  const a = rng.randint(100, 9999);
  const b = rng.randint(100, 9999);
  const c = rng.randint(10, 999);
  return { kind: "add_sub", question: `Compute ${a} + ${b} - ${c}.`, answer: String(a + b - c) };
}

function multiply(rng: PyRandom): Problem {
  const a = rng.randint(12, 999);
  const b = rng.randint(12, 99);
  return { kind: "multiply", question: `Compute ${a} × ${b}.`, answer: String(a * b) };
}

function divide(rng: PyRandom): Problem {
  const quotient = rng.randint(12, 999);
  const b = rng.randint(3, 49);
  return { kind: "divide", question: `Compute ${quotient * b} ÷ ${b}.`, answer: String(quotient) };
}

function change(rng: PyRandom): Problem {
  const name = rng.choice(NAMES);
  const [, plural, lo, hi] = rng.choice(ITEMS);
  const n = rng.randint(2, 6);
  const price = rng.randint(lo, hi);
  const total = n * price;
  const bill = [20, 50, 100, 200, 500].find((b) => b > total)!;
  return {
    kind: "change",
    question: `${name} buys ${n} ${plural} at $${price} each and pays with a $${bill} bill. How much change, in dollars, does ${name} get?`,
    answer: String(bill - total),
  };
}

function boxes(rng: PyRandom): Problem {
  const name = rng.choice(NAMES);
  const thing = rng.choice(THINGS);
  const per = rng.randint(6, 24);
  const total = rng.randint(50, 999);
  return {
    kind: "boxes",
    question: `${name} has ${total} ${thing} and packs them into boxes that hold ${per} each. How many boxes does ${name} need to pack all of them?`,
    answer: String(Math.ceil(total / per)),
  };
}

// --- medium ------------------------------------------------------------------------------------

function orderOfOperations(rng: PyRandom): Problem {
  const a = rng.randint(10, 99);
  const b = rng.randint(10, 99);
  const c = rng.randint(3, 19);
  const e = rng.randint(2, 12);
  const d = e * rng.randint(5, 60);
  return { kind: "order_of_operations", question: `Compute (${a} + ${b}) × ${c} - ${d} ÷ ${e}.`, answer: String((a + b) * c - d / e) };
}

function fractions(rng: PyRandom): Problem {
  const b = rng.randint(2, 12);
  const d = rng.randint(2, 12);
  const a = rng.randint(1, b * 2);
  const c = rng.randint(1, d * 2);
  const op = rng.choice(["+", "-", "×", "÷"] as const);
  const x = rational(a, b);
  const y = rational(c, d);
  const v = op === "+" ? add(x, y) : op === "-" ? sub(x, y) : op === "×" ? mul(x, y) : div(x, y);
  return {
    kind: "fractions",
    question: `Compute (${a}/${b}) ${op} (${c}/${d}). Give the exact value (a fraction in lowest terms is fine).`,
    answer: formatExact(v),
  };
}

const PERCENTS = [5, 10, 12.5, 15, 20, 25, 30, 35, 40, 45, 60, 75, 80, 120, 150];

function percentOf(rng: PyRandom): Problem {
  const p = rng.choice(PERCENTS);
  const n = rng.randint(20, 2000);
  const v = div(mul(rational(p * 10), rational(n)), rational(1000));
  return { kind: "percent_of", question: `What is ${p}% of ${n}?`, answer: formatExact(v) };
}

function priceChange(rng: PyRandom): Problem {
  const [singular, , lo, hi] = rng.choice(ITEMS);
  const price = rng.randint(lo * 4, hi * 4);
  const up = rng.randint(5, 40);
  const down = rng.randint(5, 40);
  const v = div(mul(mul(rational(price), rational(100 + up)), rational(100 - down)), rational(10000));
  return {
    kind: "price_change",
    question: `A ${singular} costs $${price}. Its price goes up by ${up}%, and then the new price goes down by ${down}%. What is the final price in dollars (exact, not rounded)?`,
    answer: formatExact(v),
  };
}

function readingDays(rng: PyRandom): Problem {
  const name = rng.choice(NAMES);
  const pages = rng.randint(180, 900);
  const read = rng.randint(10, Math.floor(pages / 3));
  const perDay = rng.randint(12, 45);
  return {
    kind: "reading_days",
    question: `A book has ${pages} pages. ${name} has already read ${read} pages and reads ${perDay} pages a day from now on. How many more days does ${name} need to finish the book?`,
    answer: String(Math.ceil((pages - read) / perDay)),
  };
}

function averageNeeded(rng: PyRandom): Problem {
  const name = rng.choice(NAMES);
  for (;;) {
    const n = rng.randint(3, 6);
    const scores = Array.from({ length: n }, () => rng.randint(55, 98));
    const target = rng.randint(70, 92);
    const needed = target * (n + 1) - scores.reduce((s, x) => s + x, 0);
    if (needed < 0 || needed > 100) continue;
    return {
      kind: "average_needed",
      question: `${name}'s scores on ${n} tests were ${scores.join(", ")}. What score does ${name} need on the next test for the average of all ${n + 1} tests to be exactly ${target}?`,
      answer: String(needed),
    };
  }
}

// --- hard --------------------------------------------------------------------------------------

function divisorsBetween(x: number, lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let k = lo; k <= hi; k++) if (x % k === 0) out.push(k);
  return out;
}

function longExpression(rng: PyRandom): Problem {
  for (;;) {
    const a = rng.randint(11, 39);
    const b = rng.randint(3, 29);
    const c = rng.randint(100, 999);
    const d = rng.randint(10, 99);
    const f = rng.randint(11, 40);
    const x = a ** 3 - b * (c + d);
    const ds = divisorsBetween(Math.abs(x), 3, 30);
    if (x === 0 || ds.length === 0) continue;
    const e = rng.choice(ds);
    return {
      kind: "long_expression",
      question: `Compute (${a}^3 - ${b} × (${c} + ${d})) ÷ ${e} + ${f}^2.`,
      answer: String(x / e + f * f),
    };
  }
}

function compoundInterest(rng: PyRandom): Problem {
  const principal = rng.randint(10, 400) * 50;
  const rate = rng.randint(2, 8);
  const years = rng.randint(2, 10);
  const exact = div(mul(rational(principal), rational(BigInt(100 + rate) ** BigInt(years))), rational(100n ** BigInt(years)));
  return {
    kind: "compound_interest",
    question: `$${principal} is invested at ${rate}% interest per year, compounded yearly. What is the balance after ${years} years, in dollars, rounded to the nearest cent?`,
    answer: formatExact(roundQ(exact, 2)),
  };
}

function countMultiples(rng: PyRandom): Problem {
  const n = rng.randint(1000, 100000);
  const [a, b] = rng.sample([3, 4, 5, 6, 7, 9, 11, 13], 2) as [number, number];
  const gcd = (x: number, y: number): number => (y === 0 ? x : gcd(y, x % y));
  const l = (a * b) / gcd(a, b);
  const count = Math.floor(n / a) + Math.floor(n / b) - 2 * Math.floor(n / l);
  return {
    kind: "count_multiples",
    question: `How many integers from 1 to ${n} (inclusive) are divisible by ${a} or by ${b}, but not by both?`,
    answer: String(count),
  };
}

function sumOfPrimes(rng: PyRandom): Problem {
  const n = rng.randint(100, 5000);
  const sieve = new Uint8Array(n);
  let sum = 0;
  for (let i = 2; i < n; i++) {
    if (sieve[i]) continue;
    sum += i;
    for (let j = i * i; j < n; j += i) sieve[j] = 1;
  }
  return { kind: "sum_of_primes", question: `What is the sum of all prime numbers less than ${n}?`, answer: String(sum) };
}

function sequenceTerm(rng: PyRandom): Problem {
  const first = rng.randint(1, 5);
  const second = rng.randint(1, 9);
  const n = rng.randint(25, 60);
  let [x, y] = [BigInt(first), BigInt(second)];
  for (let i = 2; i < n; i++) [x, y] = [y, x + y];
  return {
    kind: "sequence_term",
    question: `A sequence starts ${first}, ${second}, and every later term is the sum of the two terms before it. What is term number ${n} (the first term is term number 1)?`,
    answer: (n === 1 ? x : y).toString(),
  };
}

function tankFraction(rng: PyRandom): Problem {
  const name = rng.choice(NAMES);
  const capacity = rng.randint(6, 60) * 12;
  const fullNum = rng.randint(1, 5);
  const fullDen = rng.randint(fullNum + 1, 8);
  const useNum = rng.randint(1, 3);
  const useDen = rng.randint(useNum + 1, 6);
  const added = rng.randint(1, 40);
  const water = mul(rational(capacity), rational(fullNum, fullDen));
  const left = sub(water, mul(water, rational(useNum, useDen)));
  const now = add(left, rational(added));
  if (now.num > now.den * BigInt(capacity)) return tankFraction(rng);
  return {
    kind: "tank_fraction",
    question:
      `A tank holds ${capacity} liters and is ${fullNum}/${fullDen} full. ${name} uses ${useNum}/${useDen} of the water in it and then pours in ${added} liters. ` +
      "What fraction of the tank is full now? Give the exact value.",
    answer: formatExact(div(now, rational(capacity))),
  };
}

function lcm(rng: PyRandom): Problem {
  const xs = [rng.randint(12, 400), rng.randint(12, 400), rng.randint(12, 400)];
  const gcd = (x: bigint, y: bigint): bigint => (y === 0n ? x : gcd(y, x % y));
  const l = xs.reduce((acc, x) => (acc * BigInt(x)) / gcd(acc, BigInt(x)), 1n);
  return { kind: "lcm", question: `What is the least common multiple of ${xs.join(", ")}?`, answer: l.toString() };
}

export const GENERATORS: Readonly<Record<Difficulty, readonly ((rng: PyRandom) => Problem)[]>> = {
  easy: [addSub, multiply, divide, change, boxes],
  medium: [orderOfOperations, fractions, percentOf, priceChange, readingDays, averageNeeded],
  hard: [longExpression, compoundInterest, countMultiples, sumOfPrimes, sequenceTerm, tankFraction, lcm],
};

/** One problem of the given difficulty ("mixed": the difficulty is drawn first). */
export function generateProblem(rng: PyRandom, difficulty: Difficulty | "mixed"): Problem & { difficulty: Difficulty } {
  const level = difficulty === "mixed" ? rng.choice(DIFFICULTIES) : difficulty;
  const problem = rng.choice(GENERATORS[level])(rng);
  return { ...problem, difficulty: level };
}
