"""Scorers that pay only for the task, for the reasoning-gym datasets whose own ``score_answer``
pays for a hack (a constant, any text, an answer to another puzzle).

:data:`HARDENED` maps a dataset to its scorer and a line saying what reasoning-gym's pays for.
The catalog scores with these by default; an episode's ``faithful: true`` keeps reasoning-gym's
formula (docs/reasoning-gym.md). Each scorer takes what ``score_answer`` takes (the dataset, the
extracted answer or None, the entry) and reads only the entry's own fields: no model text is
evaluated as code, and every parse is bounded by :data:`MAX_CHARS`.
``tests/test_reasoning_gym_probes.py`` is the probe suite that found them.
"""

from __future__ import annotations

import ast
import cmath
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional

#: Longest answer a hardened scorer reads: at least this, or four times the item's own answer
#: (a game_of_life grid of a large config). A longer answer is wrong; refusing it bounds the work.
MAX_CHARS = 1000


@dataclass(frozen=True)
class Hardened:
    score: Callable[[Any, Optional[str], Dict[str, Any]], float]
    why: str  # what reasoning-gym's own scorer pays for


def _text(answer: Optional[str], entry: Dict[str, Any]) -> Optional[str]:
    """The answer, stripped; None when there is none or it is longer than any right one."""
    if not isinstance(answer, str) or len(answer) > max(MAX_CHARS, 4 * len(str(entry.get("answer") or ""))):
        return None
    return answer.strip()


def exact(ds: Any, answer: Optional[str], entry: Dict[str, Any]) -> float:
    """1 where reasoning-gym's own scorer says the answer is right, else 0: for the datasets whose
    graded credit for a near miss pays a constant (their right answers are read as before)."""
    if _text(answer, entry) is None:
        return 0.0
    return 1.0 if float(type(ds).score_answer(ds, answer, entry)) == 1.0 else 0.0


# -- puzzle24 ------------------------------------------------------------------------------------

#: reasoning-gym's score for an answer that does not make 24 (any answer at all, even none).
PUZZLE24_WRONG = 0.01
_OPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}
_ALLOWED_CHARS = frozenset("0123456789+-*/() \t\n")


def arithmetic(text: str, operators: Any) -> "tuple[Fraction, List[int]]":
    """The exact value of ``text``, an expression of non-negative integer literals joined by
    ``operators`` (a subset of + - * /; unary minus counts as "-") and brackets, and the literals
    in it. Parsed with :mod:`ast`, evaluated here node by node: nothing is run. ValueError for
    anything else (a name, a call, a power, a decimal, ASCII look-alikes, division by zero)."""
    if len(text) > MAX_CHARS or not set(text) <= _ALLOWED_CHARS:
        raise ValueError("not an arithmetic expression of integers")
    try:
        tree = ast.parse(text.strip(), mode="eval")  # the parser itself refuses nesting past 200
    except (SyntaxError, MemoryError, RecursionError):
        raise ValueError("does not parse") from None
    allowed = tuple(_OPS[o] for o in operators if o in _OPS)
    numbers: List[int] = []

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            numbers.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and ast.Sub in allowed:
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, allowed):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if right == 0:
                raise ValueError("division by zero")
            return left / right
        raise ValueError(f"{type(node).__name__} is not allowed")

    return value(tree.body), numbers


def score_puzzle24(ds: Any, answer: Optional[str], entry: Dict[str, Any]) -> float:
    text = _text(answer, entry)
    if text is None:
        return PUZZLE24_WRONG
    try:
        total, numbers = arithmetic(text, ds.config.operators)
    except ValueError:
        return PUZZLE24_WRONG
    if total == 24 and sorted(numbers) == sorted(entry["metadata"]["numbers"]):
        return 1.0
    return PUZZLE24_WRONG


# -- complex_arithmetic --------------------------------------------------------------------------


def score_complex_arithmetic(ds: Any, answer: Optional[str], entry: Dict[str, Any]) -> float:
    text = _text(answer, entry)
    if text is None:
        return 0.0
    try:
        got = ds.parse_string_to_complex(text)
    except (ValueError, TypeError):
        return 0.0
    if not isinstance(got, complex) or not cmath.isfinite(got):
        return 0.0
    # reasoning-gym's formula for a finite answer: exp(-distance), graded credit for a near miss.
    return min(1.0, math.exp(-abs(got - complex(*entry["metadata"]["result"]))))


# -- game_of_life_halting ------------------------------------------------------------------------


def score_game_of_life_halting(ds: Any, answer: Optional[str], entry: Dict[str, Any]) -> float:
    text = _text(answer, entry)
    return 1.0 if text is not None and text.lower() == str(entry["answer"]).strip().lower() else 0.0


# -- coin_flip -----------------------------------------------------------------------------------

#: reasoning-gym's tolerance (absolute), and ours on top of it: within 1% of the probability, so
#: that "0" is not right for every probability under 1e-4.
COIN_FLIP_TOL = 1e-4
COIN_FLIP_REL = 1e-2


def _probability(text: str) -> float:
    return float(Fraction(text.replace(",", "")))  # a decimal or a fraction, as reasoning-gym reads it


def score_coin_flip(ds: Any, answer: Optional[str], entry: Dict[str, Any]) -> float:
    text = _text(answer, entry)
    if not text or len(text) > 100:
        return 0.0
    try:
        got, want = _probability(text), _probability(str(entry["answer"]))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0
    error = abs(got - want)
    return 1.0 if math.isfinite(got) and error <= COIN_FLIP_TOL and error <= COIN_FLIP_REL * abs(want) else 0.0


HARDENED: Dict[str, Hardened] = {
    "puzzle24": Hardened(score_puzzle24, "never checks the numbers are the puzzle's: any expression of four numbers 1-10 making 24 (2*2*2*3) scores 1; int() also rounds 24.5 down to 24"),
    "complex_arithmetic": Hardened(score_complex_arithmetic, "nan: min(1.0, exp(-nan)) is 1.0"),
    "game_of_life_halting": Hardened(score_game_of_life_halting, "bool(answer) == bool(the answer): both are non-empty strings, so any text scores 1"),
    "rectangle_count": Hardened(exact, "credit for a count within 4 of the truth: the constant 3 averages 0.34"),
    "time_intervals": Hardened(exact, "credit falls off over the config's whole range (a day for times): an all-zero answer (00:00, 0 days) averages 0.66"),
    "game_of_life": Hardened(exact, "credit per matching cell: an all-dead grid averages 0.96, most cells being dead"),
    "knights_knaves": Hardened(exact, "0.3 for naming everyone with one role right: everyone given one role averages 0.65, echoing the question can score 0.65"),
    "coin_flip": Hardened(score_coin_flip, "0 is within its absolute tolerance of every probability under 1e-4, and its prefix credit divides by the shorter string: 0 scores 1 on 11 items of 12"),
}
