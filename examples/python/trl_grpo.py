#!/usr/bin/env python3
"""GRPO with TRL on an envworker environment: wordle (a multi-turn game) or math-tools (tools).

    node bin/envworker.js serve wordle math-tools        # in another terminal
    pip install trl transformers torch datasets jmespath  # TRL >= 1.13
    python3 examples/python/trl_grpo.py --model Qwen/Qwen3-0.6B --env wordle
    python3 examples/python/trl_grpo.py --model Qwen/Qwen3-0.6B --env math-tools --steps 50

    python3 examples/python/trl_grpo.py --check --env math-tools   # no TRL: build the pieces, play one scripted rollout

How the pieces fit (see docs/python-client.md, "Training with TRL"):

* wordle — the environment owns the game and the reward. ``dataset`` gives one row per secret
  word (a seed) with its prompt; ``environment_factory`` makes the class TRL plays each rollout
  in: the model moves with the ``guess`` tool, the environment answers with the G/Y/X feedback,
  and ``get_reward()`` is the game's reward. ``environment_metrics`` logs each rubric function.
* math-tools — the environment supplies the tools (``calculator``, ``javascript``) through
  ``environment_factory``; the model ends with a plain ``\\boxed{}`` answer, which TRL keeps in
  the completion, so ``reward_functions`` grade the whole completion with ``POST /score`` against
  the server's own answer (by the row's example reference).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

try:
    import envworker
except ImportError:  # not installed: use the client in this repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))
    import envworker

from envworker import trl as etrl


def pieces(url: str, env: str, examples: int, generations: int) -> Dict[str, Any]:
    """The dataset, the environment class and the reward functions for one environment."""
    if env == "wordle":
        train = etrl.dataset(url, "wordle", count=examples)
        Env = etrl.environment_factory(url, "wordle", reply_tool="guess", group_size=generations)
        metrics = etrl.environment_metrics(Env)
        # get_reward() counts (weight 1, logged under the class name); the metrics are logged only.
        return {"train_dataset": train, "environment_factory": Env, "reward_funcs": list(metrics), "reward_weights": metrics.weights}
    if env == "math-tools":
        args = {"difficulty": "easy"}
        train = etrl.dataset(url, "math-tools", count=examples, args=args)
        Env = etrl.environment_factory(url, "math-tools", args=args, reply_tool=None, owns_reward=False)
        funcs = etrl.reward_functions(url, "math-tools", metrics=["correct_answer", "boxed_answer", "num_tool_calls"])
        return {"train_dataset": train, "environment_factory": Env, "reward_funcs": list(funcs), "reward_weights": funcs.weights}
    raise SystemExit(f"--env must be wordle or math-tools, not {env!r}")


INSTALL = "pip install trl transformers torch datasets jmespath  # TRL >= 1.13"


def require_training_packages() -> None:
    """Training needs TRL and its companions: say how to install them, not a traceback."""
    missing = []
    for name in ("trl", "transformers", "torch", "datasets", "jmespath"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise SystemExit(
            f"trl_grpo.py: training needs {', '.join(missing)}, not installed here. Install with:\n"
            f"    {INSTALL}\n"
            "or try the pieces without TRL: python3 examples/python/trl_grpo.py --check --env math-tools"
        )


def train(args: argparse.Namespace) -> None:
    require_training_packages()
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[import-not-found]

    p = pieces(args.url, args.env, args.examples, args.generations)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        num_generations=args.generations,
        per_device_train_batch_size=args.batch_size,
        max_completion_length=args.max_completion_length,
        learning_rate=args.learning_rate,
        logging_steps=1,
        reward_weights=p.pop("reward_weights"),
        chat_template_kwargs={"enable_thinking": False},
        report_to=args.report_to,
    )
    trainer = GRPOTrainer(model=args.model, args=config, **p)
    trainer.train()
    trainer.save_model(args.output_dir)


def run(method: Any, **kwargs: Any) -> Any:
    result = method(**kwargs)
    return asyncio.run(result) if inspect.isawaitable(result) else result


def check(args: argparse.Namespace) -> None:
    """Build the pieces and play one rollout the way GRPOTrainer would, with a scripted policy."""
    p = pieces(args.url, args.env, 32, 2)
    Env, funcs = p["environment_factory"], p["reward_funcs"]
    rows = p["train_dataset"]
    # For math-tools, a "Compute ..." question, which the scripted policy can solve with the calculator.
    row = dict(next((r for r in rows if re.search(r"Compute (.+)\.", r["prompt"][-1]["content"])), rows[0]))
    env = Env()
    tools = sorted(n for n, m in inspect.getmembers(env, inspect.ismethod) if not n.startswith("_") and n not in ("reset", "get_reward"))
    print(f"{args.env}: {len(rows)} rows, tools {tools}, reward functions {[f.__name__ for f in funcs]}")
    prompt = [dict(m) for m in row["prompt"]]
    added = env.reset(**row)
    if added:
        prompt[-1]["content"] += added
    completion: List[Dict[str, Any]] = []
    if args.env == "wordle":
        for word in ("crane", "sloth"):
            reply = run(env.guess, message=f"<guess>[{word}]</guess>")
            print(f"guess {word} -> {reply.strip().splitlines()[-1] if reply.strip() else reply!r}")
        print("get_reward():", env.get_reward())
        completion = [{"role": "assistant", "content": ""}]
    else:
        question = prompt[-1]["content"]
        match = re.search(r"Compute (.+)\.", question)
        expression = match.group(1) if match else "6 * 7"
        value = run(env.calculator, expression=expression)
        print(f"calculator({expression!r}) -> {value}")
        completion = [
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calculator", "arguments": {"expression": expression}}}]},
            {"role": "tool", "name": "calculator", "content": value},
            {"role": "assistant", "content": f"\\boxed{{{value}}}"},
        ]
    kwargs = {k: [v] for k, v in row.items() if k != "prompt"}
    for f in funcs:
        print(f"{f.__name__}: {f(prompts=[prompt], completions=[completion], completion_ids=[[0]], environments=[env], **kwargs)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="the envworker server")
    ap.add_argument("--env", default="wordle", choices=["wordle", "math-tools"])
    ap.add_argument("--model", help="a Hugging Face model id or path (a chat model with tool calling)")
    ap.add_argument("--check", action="store_true", help="no training: build the pieces and play one scripted rollout (no TRL needed)")
    ap.add_argument("--examples", type=int, default=256, help="dataset rows")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--generations", type=int, default=4, help="GRPO group size (num_generations)")
    ap.add_argument("--batch-size", type=int, default=4, help="per_device_train_batch_size")
    ap.add_argument("--max-completion-length", type=int, default=1024)
    ap.add_argument("--learning-rate", type=float, default=1e-6)
    ap.add_argument("--output-dir", default="outputs/trl-grpo")
    ap.add_argument("--report-to", default="none")
    args = ap.parse_args()
    if args.check:
        check(args)
    elif not args.model:
        ap.error("--model is required (or --check)")
    else:
        train(args)


if __name__ == "__main__":
    main()
