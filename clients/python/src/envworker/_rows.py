"""Examples as trainer datasets, shared by the verifiers entries (legacy and v1): rows of
prompts with example references (never answers), and the server's tool schemas in verifiers' form.
Standard library only."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._transport import Transport
from .client import _env_path, _example_pages, _examples
from .types import ExamplesPage

#: Examples a generated environment gives when ``num_examples`` is not set.
DEFAULT_GENERATED_EXAMPLES = 100


def example_rows(
    base_url: str,
    env: str,
    *,
    split: Optional[str],
    args: Optional[Mapping[str, Any]],
    num_examples: Optional[int],
    seed: int,
    token: Optional[str],
    timeout: Optional[float],
) -> "tuple[List[Dict[str, Any]], ExamplesPage]":
    """Dataset rows ``{prompt, answer: "", info: {example}}`` from ``POST /examples``: a
    dataset environment's rows (the first ``num_examples``, or all), a generated one's
    ``num_examples`` seeds from ``seed``. Also the first page (its rubric and tools)."""
    transport = Transport(base_url, token=token, timeout=timeout)
    path = _env_path(env)
    try:
        first = _examples(transport, path, split=split, count=0, args=args)
        if first.total is None:
            n = DEFAULT_GENERATED_EXAMPLES if num_examples is None else num_examples
            pages = list(_example_pages(transport, path, split=split, args=args, seeds=list(range(seed, seed + n))))
        else:
            end = first.total if num_examples is None else min(num_examples, first.total)
            pages = list(_example_pages(transport, path, split=split, args=args, end=end))
    finally:
        transport.close()
    rows = [
        {"prompt": [dict(m) for m in ex.prompt], "answer": "", "info": {"example": ex.example}}
        for page in pages
        for ex in page.examples
    ]
    return rows, first


def tool_defs(tools: Optional[Sequence[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """The server's OpenAI tool schemas as verifiers' tool definitions (``{name, description, parameters}``)."""
    out = []
    for t in tools or []:
        fn = t.get("function", t)
        out.append({"name": fn["name"], "description": fn.get("description", ""), "parameters": fn.get("parameters") or {"type": "object", "properties": {}}})
    return out
