"""Keep a model's answer from running as code in the process that scores it.

Some of reasoning-gym's ``score_answer`` functions hand the model's answer to ``eval`` (list-shaped
answers: n_queens, binary_matrix, spiral_matrix, string_insertion) or to sympy's ``parse_expr``
(itself an ``eval`` with Python's builtins in reach: countdown, puzzle24, the integration and
polynomial datasets). There, ``<answer>__import__('os')...</answer>`` would run in the Python
worker, next to the reward: a model could rewrite the scoring of every later episode. envworker's
rule is that model-written code runs only in its sandboxes, so these two functions are replaced,
in those modules only, by guarded ones:

* ``eval`` accepts literals only (numbers, strings, lists, tuples, sets, dicts, negation) and then
  evaluates them as ``eval`` would;
* ``parse_expr`` turns the text into the code sympy would evaluate (sympy's own tokenizer and
  transformations), accepts it only when that code calls nothing but sympy's number and symbol
  constructors and a list of mathematical functions, with no attribute access, and with small
  literal exponents (``9**9**9**9`` would hang the worker: the exponents along a chain of powers
  multiply to at most :data:`MAX_POWER`), and then calls the real ``parse_expr``.

Anything refused raises ``ValueError``; every caller catches exceptions and scores 0, as it does
for an answer that does not parse. Answers a model means as an answer (``[[1, 0], [0, 1]]``,
``(3 + 5) * 2 - 1``, ``x**2/2 + C``) pass and score exactly as reasoning-gym scores them.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import types
from typing import Any, Dict, Iterable, Optional

#: Longest answer either guard looks at: reasoning-gym's answers of these kinds are far shorter.
MAX_ANSWER_CHARS = 20_000
#: Largest product of the literal exponents along a chain of powers (``(x**a)**b``: a*b): a
#: degree, not a way to build numbers of millions of digits.
MAX_POWER = 10_000

_LITERAL_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load)

#: What sympy's transformed code may call or name: its number and symbol constructors (the
#: transformations emit them), and functions an answer to these tasks is written with.
SYMPY_NAMES = frozenset(
    """Integer Float Rational Symbol Function
    sin cos tan cot sec csc asin acos atan acot sinh cosh tanh coth asinh acosh atanh
    exp log ln sqrt cbrt root Abs sign pi E I oo""".split()
)
_EXPR_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Call, ast.BinOp, ast.UnaryOp, ast.Tuple,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd, ast.Mod, ast.FloorDiv,
)


def _refuse(what: str) -> ValueError:
    return ValueError(f"envworker refuses to evaluate this answer: {what}")


def _parse(text: Any, mode: str = "eval") -> ast.AST:
    if not isinstance(text, str):
        raise _refuse(f"a {type(text).__name__}, not a string")
    if len(text) > MAX_ANSWER_CHARS:
        raise _refuse(f"longer than {MAX_ANSWER_CHARS} characters")
    return ast.parse(text.strip(), mode=mode)


def literal_eval_guarded(source: Any, globals: Optional[Dict[str, Any]] = None, locals: Optional[Dict[str, Any]] = None) -> Any:
    """``eval`` of a literal, and a ValueError for anything else."""
    tree = _parse(source)
    for node in ast.walk(tree):
        if not isinstance(node, _LITERAL_NODES):
            raise _refuse(f"{type(node).__name__} is not a literal")
        if isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant):
            raise _refuse("negation of a non-number")
    return builtins.eval(compile(tree, "<answer>", "eval"), {"__builtins__": {}}, {})


def _exponent(node: ast.AST) -> Optional[float]:
    """A bound on a Pow's right side: its size when it is a literal (sympy wraps numbers as
    ``Integer(5)``, ``Float('0.5')``) or arithmetic of literals, 1.0 for a symbol; None for
    anything else (a function call)."""
    if isinstance(node, ast.UnaryOp):
        return _exponent(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        # x**(3/2), x**(n+1): a bound on the size (a product for *, the larger side otherwise).
        a, b = _exponent(node.left), _exponent(node.right)
        if a is None or b is None:
            return None
        return a * b if isinstance(node.op, ast.Mult) else max(a, b)
    if isinstance(node, ast.Name):
        return 1.0
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
        if node.func.id == "Symbol":
            return 1.0
        if node.func.id in ("Integer", "Float"):
            try:
                return abs(float(node.args[0].value))
            except (TypeError, ValueError, OverflowError):
                return None
    return None


def _check_powers(node: ast.AST, factor: float = 1.0) -> None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        e = _exponent(node.right)
        if e is None or factor * max(e, 1.0) > MAX_POWER:
            raise _refuse(f"exponents past {MAX_POWER} (or an exponent that is an expression)")
        _check_powers(node.left, factor * max(e, 1.0))
        return
    for child in ast.iter_child_nodes(node):
        _check_powers(child, factor)


#: Constructors the transformations emit, with the arguments they take: literals only.
_CONSTRUCTORS = {"Integer": 1, "Float": 1, "Symbol": 1, "Rational": 2}


def check_sympy_code(code: str, allowed_names: Iterable[str]) -> None:
    """Refuse sympy-transformed code that does more than build an expression."""
    allowed = SYMPY_NAMES | set(allowed_names)
    tree = ast.parse(code, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _EXPR_NODES):
            raise _refuse(f"{type(node).__name__} is not part of an expression")
        if isinstance(node, ast.Name) and node.id not in allowed:
            raise _refuse(f"{node.id} is not a function of an answer")
        if isinstance(node, ast.Call):
            if node.keywords or not isinstance(node.func, ast.Name):
                raise _refuse("a call with keywords or of something other than a function name")
            most = _CONSTRUCTORS.get(node.func.id)
            if most is not None and not (1 <= len(node.args) <= most and all(isinstance(a, ast.Constant) for a in node.args)):
                raise _refuse(f"{node.func.id} of something other than a literal")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 100:
            raise _refuse("a literal longer than 100 characters")
    _check_powers(tree)


def _make_parse_expr(real: Any) -> Any:
    from sympy import Max, Min
    from sympy.parsing import sympy_parser as sp

    # parse_expr's own default namespace (sympy 1.14): sympy's names, the builtin functions, and
    # sympy's Max and Min for max and min.
    default_globals: Dict[str, Any] = {}
    exec("from sympy import *", default_globals)  # noqa: S102
    default_globals.update({k: v for k, v in vars(builtins).items() if isinstance(v, types.BuiltinFunctionType)})
    default_globals.update(max=Max, min=Min)

    def parse_expr_guarded(s: Any, local_dict: Optional[Dict[str, Any]] = None, transformations: Any = sp.standard_transformations, global_dict: Optional[Dict[str, Any]] = None, evaluate: bool = True) -> Any:
        _parse_length(s)
        if isinstance(transformations, str):
            raise _refuse("named transformations are not checked")
        # The code sympy would evaluate, made the way parse_expr makes it (with the same names).
        code = sp.stringify_expr(s, dict(local_dict or {}), global_dict if global_dict is not None else default_globals, transformations)
        try:
            check_sympy_code(code, (local_dict or {}).keys())
        except SyntaxError as err:
            raise _refuse(f"not an expression ({err.msg})") from None
        return real(s, local_dict=local_dict, transformations=transformations, global_dict=global_dict, evaluate=evaluate)

    return parse_expr_guarded


def _parse_length(s: Any) -> None:
    if not isinstance(s, str):
        raise _refuse(f"a {type(s).__name__}, not a string")
    if len(s) > MAX_ANSWER_CHARS:
        raise _refuse(f"longer than {MAX_ANSWER_CHARS} characters")


#: Modules whose score_answer evaluates the answer, and how each names the function.
EVAL_MODULES = (
    "reasoning_gym.algorithmic.string_insertion",
    "reasoning_gym.algorithmic.spiral_matrix",
    "reasoning_gym.algorithmic.binary_matrix",
    "reasoning_gym.algorithmic.number_sorting",
    "reasoning_gym.games.n_queens",
)
PARSE_EXPR_MODULES = ("reasoning_gym.games.countdown", "reasoning_gym.games.puzzle24")  # `from ... import parse_expr`
SYMPY_MODULES = (  # `sympy.parse_expr(...)` through their own name for sympy
    "reasoning_gym.algebra.simple_integration",
    "reasoning_gym.algebra.intermediate_integration",
    "reasoning_gym.algebra.polynomial_multiplication",
)

_installed = False


def install() -> None:
    """Put the guarded functions in place (once; reasoning-gym must be importable)."""
    global _installed
    if _installed:
        return
    import sympy
    from sympy.parsing.sympy_parser import parse_expr

    guarded = _make_parse_expr(parse_expr)
    for name in EVAL_MODULES:
        # A module-level name shadows the builtin for that module's code alone.
        importlib.import_module(name).eval = literal_eval_guarded  # type: ignore[attr-defined]
    for name in PARSE_EXPR_MODULES:
        module = importlib.import_module(name)
        if getattr(module, "parse_expr", None) is not parse_expr:
            raise RuntimeError(f"{name} no longer imports sympy's parse_expr: review envworker.catalogs._answer_guard")
        module.parse_expr = guarded  # type: ignore[attr-defined]
    proxy = types.ModuleType(sympy.__name__, sympy.__doc__)
    proxy.__dict__.update(vars(sympy))
    proxy.parse_expr = guarded  # type: ignore[attr-defined]
    for name in SYMPY_MODULES:
        module = importlib.import_module(name)
        aliases = [k for k, v in vars(module).items() if v is sympy]
        if not aliases:
            raise RuntimeError(f"{name} no longer imports sympy as a module: review envworker.catalogs._answer_guard")
        for alias in aliases:
            setattr(module, alias, proxy)
    _installed = True
