"""__NAME__: guess a secret number. The model answers <guess>N</guess>; the environment replies
"Higher." or "Lower." until the guess is right or the guesses run out.

Everything an author writes is here: args (a dataclass with defaults), a seeded generator, the
system prompt, max_turns, respond (the rules of a multi-turn game) and the rubric. See envworker's
docs/authoring.md ("Python environments") for every field.
"""

import re
from dataclasses import dataclass
from typing import List, Optional

from envworker import ArgsError, Environment, Example, Reply, Reward

SYSTEM_PROMPT = "Guess the number. Reply with your guess in <guess></guess> tags, e.g. <guess>50</guess>."


@dataclass
class Args:
    max_number: int = 100  # the secret is between 1 and this
    max_guesses: int = 7  # guesses allowed (the episode's turn limit)

    def __post_init__(self) -> None:
        # Raised here, an ArgsError is the client's mistake: a 400.
        if not 2 <= self.max_number <= 1_000_000:
            raise ArgsError("max_number must be between 2 and 1000000")
        if not 1 <= self.max_guesses <= 50:
            raise ArgsError("max_guesses must be between 1 and 50")


def parse_guess(text: str) -> Optional[int]:
    """The number in the first <guess> of a reply, or None."""
    m = re.search(r"<guess>\s*(-?\d+)\s*</guess>", text or "")
    return int(m.group(1)) if m else None


def guesses_in(completion: List[dict]) -> List[Optional[int]]:
    """The model's guesses, in order, read from the completion (so /score recomputes the reward)."""
    return [parse_guess(m.get("content") or "") for m in completion if m.get("role") == "assistant"]


def generate(ctx) -> Example:
    # A seeded generator: every random choice goes through ctx.rng, so reset(seed) is reproducible.
    secret = ctx.rng.randint(1, ctx.args.max_number)
    return Example(
        prompt=f"I am thinking of a number between 1 and {ctx.args.max_number}. You have {ctx.args.max_guesses} guesses.",
        answer=str(secret),
        info={"max_number": ctx.args.max_number},
    )


def respond(turn) -> Reply:
    guess = parse_guess(turn.last_text)
    secret = int(turn.answer)
    if guess == secret:
        return Reply("Correct!", done=True)
    if turn.turn >= turn.args.max_guesses:
        return Reply(f"Out of guesses: it was {secret}.", done=True)
    if guess is None:
        return Reply("Give your guess as <guess>N</guess>.")
    return Reply("Higher." if guess < secret else "Lower.")


def solved(completion, answer) -> bool:
    return int(answer) in guesses_in(completion)


def efficiency(completion, answer, args) -> float:
    """Fewer guesses score more: 1 for the first, down to 0 for using them all."""
    guesses = guesses_in(completion)
    if int(answer) not in guesses:
        return 0.0
    at = guesses.index(int(answer))
    return 1.0 if args.max_guesses == 1 else 1 - at / (args.max_guesses - 1)


def num_guesses(completion) -> int:
    return len(guesses_in(completion))


environment = Environment(
    name="__NAME__",
    description="Guess a secret number between 1 and max_number; the environment answers higher or lower.",
    version="0.1.0",
    args=Args,
    generate=generate,
    system_prompt=SYSTEM_PROMPT,
    # The game's length depends on the args.
    max_turns=lambda args: args.max_guesses,
    respond=respond,
    rubric=[
        Reward("solved", solved, weight=1.0),
        Reward("efficiency", efficiency, weight=0.5),
        Reward("num_guesses", num_guesses, weight=0),  # a metric: reported, does not count
    ],
)
