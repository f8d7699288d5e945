/**
 * __NAME__: guess a secret number. The model answers `<guess>N</guess>`; the environment replies
 * "higher" or "lower" until the guess is right or the guesses run out.
 *
 * Everything an author writes is here: args (zod, with defaults), a seeded generator, the system
 * prompt, maxTurns, respond (the rules of a multi-turn game) and the rubric. See envworker's
 * docs/authoring.md for every field.
 */
import { defineEnvironment, extractTag, z, type Message } from "envworker";

const args = z
  .object({
    max_number: z.number().int().min(2).max(1_000_000).default(100).describe("The secret is between 1 and this."),
    max_guesses: z.number().int().min(1).max(50).default(7).describe("Guesses allowed."),
  })
  .strict();

type Args = z.output<typeof args>;

/** The number in the latest `<guess>` of a reply, or undefined. */
export function parseGuess(text: string): number | undefined {
  const tag = extractTag(text, "guess");
  if (tag === undefined || !/^\s*-?\d+\s*$/.test(tag)) return undefined;
  return Number(tag);
}

/** The model's guesses, in order, read from the completion (so /score can recompute the reward). */
export function guessesIn(completion: readonly Message[]): (number | undefined)[] {
  return completion.filter((m) => m.role === "assistant").map((m) => parseGuess(m.content ?? ""));
}

export default defineEnvironment({
  name: "__NAME__",
  description: "Guess a secret number between 1 and max_number; the environment answers higher or lower.",
  version: "0.1.0",
  args,
  // A seeded generator: every random choice goes through `rng`, so reset(seed) is reproducible.
  generate: ({ rng, args: a }) => {
    const secret = rng.randint(1, a.max_number);
    return {
      prompt: `I am thinking of a number between 1 and ${a.max_number}. You have ${a.max_guesses} guesses.`,
      answer: String(secret),
      info: { max_number: a.max_number },
    };
  },
  systemPrompt: "Guess the number. Reply with your guess in <guess></guess> tags, e.g. <guess>50</guess>.",
  // The game's length depends on the args.
  maxTurns: (a: Args) => a.max_guesses,
  respond: ({ lastText, answer, turn, args: a }) => {
    const guess = parseGuess(lastText);
    const secret = Number(answer);
    if (guess === secret) return { messages: "Correct!", done: true };
    if (turn >= a.max_guesses) return { messages: `Out of guesses: it was ${secret}.`, done: true };
    if (guess === undefined) return { messages: "Give your guess as <guess>N</guess>." };
    return { messages: guess < secret ? "Higher." : "Lower." };
  },
  rubric: [
    {
      name: "solved",
      weight: 1,
      fn: ({ completion, answer }) => guessesIn(completion).includes(Number(answer)),
    },
    {
      // Fewer guesses score more: 1 for the first, down to 0 for using them all. A metric read from
      // the completion (not from state), so POST /score computes the same reward.
      name: "efficiency",
      weight: 0.5,
      fn: ({ completion, answer, args: a }) => {
        const guesses = guessesIn(completion);
        const at = guesses.indexOf(Number(answer));
        const max = (a as Args).max_guesses;
        return at === -1 ? 0 : max === 1 ? 1 : 1 - at / (max - 1);
      },
    },
    { name: "num_guesses", weight: 0, fn: ({ completion }) => guessesIn(completion).length },
  ],
});
