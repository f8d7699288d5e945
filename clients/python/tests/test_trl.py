"""envworker.trl against a real server, driven exactly as TRL's GRPOTrainer drives reward
functions and environment classes (see _trl_contract.py for the TRL source it follows), plus a
real GRPOTrainer run of a few steps when trl, transformers and torch are installed.

Run directly (``python3 tests/test_trl.py``) or with the rest (``npm run test:python``).
"""

from __future__ import annotations

import copy
import importlib.util
import math
import os
import re
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import EnvworkerServer, alphabet_sort_gold, reverse_text_gold  # noqa: E402
from _trl_contract import FakeTrainer, get_json_schema, json_schema  # noqa: E402

import envworker  # noqa: E402
from envworker import EnvClient, EnvworkerError  # noqa: E402
from envworker import trl as etrl  # noqa: E402

ENVS = ("reverse-text", "alphabet-sort", "wordle", "math-tools")


def setUpModule() -> None:
    global SERVER, URL
    if _missing_training_stack():
        print(f"\ntest_trl: real GRPOTrainer runs skipped: {_missing_training_stack()} not installed", file=sys.stderr)
    SERVER = EnvworkerServer(*ENVS)
    URL = os.environ.get("ENVWORKER_TEST_URL", "").rstrip("/") or SERVER.start()


def tearDownModule() -> None:
    SERVER.stop()


def close_functions(funcs: Any) -> None:
    for f in funcs if isinstance(funcs, list) else [funcs]:
        f.scorer.transport.close()


def easy_compute_examples(n: int) -> List[envworker.ListedExample]:
    """math-tools examples of the form "Compute <expression>." (the calculator solves them)."""
    page = envworker.examples(URL, "math-tools", start=0, count=200, args={"difficulty": "easy"})
    found = [e for e in page.examples if re.fullmatch(r"Compute (.+)\.", e.prompt[-1]["content"])]
    assert len(found) >= n, "not enough Compute examples in the first 200 seeds"
    return found[:n]


class DatasetTests(unittest.TestCase):
    def test_rows_for_grpo_trainer(self) -> None:
        rows = etrl.dataset(URL, "reverse-text", split="eval", start=5, count=3, columns=("index", "example_id"), as_dataset=False)
        self.assertEqual([r["index"] for r in rows], [5, 6, 7])
        for row in rows:
            self.assertEqual(set(row), {"prompt", "example", "index", "example_id"})
            with EnvClient(URL, "reverse-text") as env:
                result = env.reset(example=row["example"])
                self.assertEqual(row["prompt"], result.observation.messages)  # system included, as a reset gives it
                self.assertEqual(result.observation.info["example"], row["example"])
            self.assertNotIn("answer", row)

    def test_whole_dataset_in_pages_and_generated_by_seed(self) -> None:
        total = envworker.examples(URL, "reverse-text", count=0).total
        saved = etrl.PAGE_SIZE
        etrl.PAGE_SIZE = 64  # several requests
        try:
            rows = etrl.dataset(URL, "reverse-text", as_dataset=False, columns=("index",))
        finally:
            etrl.PAGE_SIZE = saved
        self.assertEqual([r["index"] for r in rows], list(range(total)))
        gen = etrl.dataset(URL, "wordle", count=3, start=10, columns=("seed",), as_dataset=False)
        self.assertEqual([r["seed"] for r in gen], [10, 11, 12])
        by_seed = etrl.dataset(URL, "wordle", seeds=[11], as_dataset=False)
        self.assertEqual(by_seed[0]["example"], gen[1]["example"])
        with self.assertRaisesRegex(ValueError, "generates its examples"):
            etrl.dataset(URL, "wordle", as_dataset=False)
        with self.assertRaises(EnvworkerError) as err:
            etrl.dataset(URL, "reverse-text", split="nope", as_dataset=False)
        self.assertEqual(err.exception.code, "VALIDATION_ERROR")

    def test_datasets_dataset_when_installed(self) -> None:
        if importlib.util.find_spec("datasets") is None:
            with self.assertRaisesRegex(ImportError, "datasets"):
                etrl.dataset(URL, "reverse-text", count=2, as_dataset=True)
            self.assertIsInstance(etrl.dataset(URL, "reverse-text", count=2), list)  # auto: a list
        else:
            ds = etrl.dataset(URL, "reverse-text", count=2)
            self.assertEqual(ds.column_names, ["prompt", "example"])
            self.assertEqual(len(ds), 2)


class RewardFunctionTests(unittest.TestCase):
    def test_reward_functions_as_grpo_trainer_calls_them(self) -> None:
        rows = etrl.dataset(URL, "reverse-text", count=2, as_dataset=False)
        funcs = etrl.reward_functions(URL, "reverse-text")
        self.addCleanup(close_functions, funcs)
        self.assertEqual([f.__name__ for f in funcs], ["reverse-text", "reverse-text/lcs_reward_func"])
        self.assertEqual(funcs.weights, [1.0, 0.0])
        # Two generations per prompt, as RepeatSampler orders them.
        inputs = [copy.deepcopy(r) for r in rows for _ in range(2)]
        prompts = [r["prompt"] for r in inputs]
        gold = [[{"role": "assistant", "content": reverse_text_gold(p)}] for p in prompts]
        completions = [gold[0], [{"role": "assistant", "content": "nope"}], gold[2], [{"role": "assistant", "content": "<reversed_text>x</reversed_text>"}]]
        trainer = FakeTrainer(None, len(inputs), funcs)
        try:
            before = funcs[0].scorer.requests
            total, metric = trainer.calculate_rewards(inputs, prompts, completions)
        finally:
            trainer.close()
        self.assertEqual(funcs[0].scorer.requests - before, 1)  # one /score for the batch, shared
        self.assertEqual(total[0], 1.0)
        self.assertEqual(total[2], 1.0)
        self.assertLess(total[1], 0.5)
        self.assertLess(total[3], 1.0)
        self.assertEqual(metric, total)  # one reward function, weight 1
        # Standard (string) completions work too.
        strings = etrl.reward_function(URL, "reverse-text")
        self.addCleanup(close_functions, strings)
        self.assertEqual(strings(prompts=prompts[:1], completions=[gold[0][0]["content"]], example=[inputs[0]["example"]]), [1.0])

    def test_async_reward_functions_share_one_request(self) -> None:
        rows = etrl.dataset(URL, "reverse-text", count=3, as_dataset=False)
        funcs = etrl.reward_functions(URL, "reverse-text", asynchronous=True)
        self.addCleanup(close_functions, funcs)
        import inspect

        self.assertTrue(all(inspect.iscoroutinefunction(f) for f in funcs))
        completions = [[{"role": "assistant", "content": reverse_text_gold(r["prompt"])}] for r in rows]
        trainer = FakeTrainer(None, 3, funcs)
        try:
            before = funcs[0].scorer.requests
            total, metric = trainer.calculate_rewards(rows, [r["prompt"] for r in rows], completions)
        finally:
            trainer.close()
        self.assertEqual(funcs[0].scorer.requests - before, 1)
        self.assertEqual(total, [1.0, 1.0, 1.0])
        self.assertEqual(metric, [1.0, 1.0, 1.0])

    def test_tool_call_completions_and_answer_columns(self) -> None:
        """TRL's tool loop writes tool calls with dict arguments and tool results without ids."""
        ex = easy_compute_examples(1)[0]
        expression = re.fullmatch(r"Compute (.+)\.", ex.prompt[-1]["content"]).group(1)
        value = envworker.score(URL, "math-tools", [{"example": ex.example, "completion": ""}])  # just to prove the ref works
        self.assertEqual(len(value), 1)
        result = str(eval(expression.replace("×", "*").replace("÷", "/").replace("−", "-")))  # noqa: S307 - the test's own arithmetic
        completion = [
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calculator", "arguments": {"expression": expression}}}]},
            {"role": "tool", "name": "calculator", "content": result},
            {"role": "assistant", "content": f"The answer is \\boxed{{{result}}}."},
        ]
        converted = etrl.to_score_messages(completion)
        self.assertEqual(converted[1]["tool_call_id"], converted[0]["tool_calls"][0]["id"])
        self.assertIsInstance(converted[0]["tool_calls"][0]["function"]["arguments"], str)
        funcs = etrl.reward_functions(URL, "math-tools", metrics=["correct_answer", "num_tool_calls"])
        self.addCleanup(close_functions, funcs)
        self.assertEqual([f.__name__ for f in funcs], ["math-tools", "math-tools/correct_answer", "math-tools/num_tool_calls"])
        total, correct, calls = [f(prompts=[ex.prompt], completions=[completion], example=[ex.example]) for f in funcs]
        self.assertEqual((total, correct, calls), ([1.0], [1.0], [1.0]))
        # Without references: the dataset's answer column (and None for rows of another task).
        by_answer = etrl.reward_function(URL, "reverse-text")
        self.addCleanup(close_functions, by_answer)
        self.assertEqual(
            by_answer(prompts=["hello", "x"], completions=["<reversed_text>olleh</reversed_text>", "y"], answer=["olleh", None]),
            [1.0, None],
        )
        with self.assertRaisesRegex(ValueError, "example"):
            by_answer(prompts=["hello"], completions=["x"])
        with self.assertRaisesRegex(ValueError, "no reward functions"):
            etrl.reward_functions(URL, "math-tools", metrics=["nope"])


class EnvironmentFactoryTests(unittest.TestCase):
    def test_tools_are_methods_transformers_can_describe(self) -> None:
        Env = etrl.environment_factory(URL, "math-tools", args={"difficulty": "easy"})
        trainer = FakeTrainer(Env, 2)
        try:
            names = sorted(t.__name__ for t in trainer.tools)
            self.assertEqual(names, ["calculator", "javascript", "reply"])
            self.assertEqual(sorted(Env.tool_names), names)
            self.assertEqual(sorted(trainer.async_tools[0]), names)  # coroutine methods by default
            server_tools = {t["function"]["name"]: t["function"] for t in envworker.examples(URL, "math-tools", count=0).tools}
            for schema in trainer.tool_schemas():
                fn = schema["function"]
                if fn["name"] == "reply":
                    self.assertEqual(fn["parameters"]["required"], ["message"])
                    continue
                server = server_tools[fn["name"]]
                self.assertEqual(fn["description"], " ".join(server["description"].split()))
                self.assertEqual(set(fn["parameters"]["properties"]), set(server["parameters"]["properties"]))
                self.assertEqual(fn["parameters"].get("required", []), server["parameters"].get("required", []))
                for pname, p in fn["parameters"]["properties"].items():
                    sp = server["parameters"]["properties"][pname]
                    self.assertEqual(p["type"], sp["type"], pname)
                    self.assertEqual(p["description"], " ".join(sp["description"].split()), pname)
        finally:
            trainer.close()

    def test_docstrings_survive_the_parser(self) -> None:
        """Descriptions that would break get_json_schema's parser (sections, choices, newlines)."""

        def call(self: Any, arguments: Dict[str, Any]) -> str:
            return repr(sorted(arguments.items()))

        params = {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "exact"], "description": "How.\nReturns: nothing (choices: x)"},
                "n": {"type": "integer"},
                "xs": {"type": "array", "items": {"type": "number"}, "description": "Numbers."},
                "opt": {"type": ["string", "null"], "description": "Maybe."},
            },
            "required": ["mode", "n"],
        }
        method = etrl._make_method("tune", "Tune it.\n\nArgs: none here. Raises: never", params, call, False, "Done.")
        holder = type("Holder", (), {"tune": method})()
        fn = get_json_schema(holder.tune)["function"]
        self.assertEqual(fn["name"], "tune")
        self.assertEqual(fn["description"], "Tune it. Args - none here. Raises - never")
        props = fn["parameters"]["properties"]
        self.assertEqual(props["mode"]["enum"], ["fast", "exact"])
        self.assertEqual(props["mode"]["type"], "string")
        self.assertEqual(props["n"], {"type": "integer", "description": "The n."})
        self.assertEqual(props["xs"]["items"], {"type": "number"})
        self.assertTrue(props["opt"]["nullable"])
        self.assertEqual(fn["parameters"]["required"], ["mode", "n"])
        self.assertEqual(holder.tune(mode="fast", n=2), "[('mode', 'fast'), ('n', 2)]")
        with self.assertRaises(TypeError):
            holder.tune(mode="fast")  # missing n
        with self.assertRaises(TypeError):
            holder.tune(mode="fast", n=1, bogus=3)

    def test_tool_episode_lifecycle(self) -> None:
        """Rows from dataset(): reset → calculator → reply with the boxed answer → get_reward."""
        exs = easy_compute_examples(2)
        Env = etrl.environment_factory(URL, "math-tools")
        inputs = [{"prompt": copy.deepcopy(e.prompt), "example": e.example} for e in exs]
        trainer = FakeTrainer(Env, len(inputs))
        try:
            prompts = trainer.reset(inputs)
            self.assertEqual(prompts[0], exs[0].prompt)  # the row has the prompt: reset adds nothing
            ids = [env._client.episode_id for env in trainer.environments]
            self.assertTrue(all(ids))
            expressions = [re.fullmatch(r"Compute (.+)\.", e.prompt[-1]["content"]).group(1) for e in exs]
            # Both rollouts' tool calls run at once on the trainer's loop.
            values = trainer.call_tools_concurrently([(i, "calculator", {"expression": x}) for i, x in enumerate(expressions)])
            bad = trainer.call_tool(0, "calculator", {"expression": "1/0"})
            self.assertIn("division by zero", bad["content"].lower())
            unknown_arg = trainer.call_tool(0, "calculator", {"expr": "1"})
            self.assertIn("error", unknown_arg["content"])
            final = trainer.call_tool(0, "reply", {"message": f"\\boxed{{{values[0]}}}"})
            self.assertIn("The episode is over.", final["content"])
            after = trainer.call_tool(0, "calculator", {"expression": "1+1"})
            self.assertIn("episode is over", after["content"])
            # Rollout 1 never answers: graded as it stands (no answer → 0), like a truncation.
            completions = [[{"role": "assistant", "content": "done"}], [{"role": "assistant", "content": "done"}]]
            (rewards,) = trainer.calculate_rewards(inputs, prompts, completions)
            self.assertEqual(rewards, [1.0, 0.0])
            for eid in ids:  # the episodes are closed once the reward is taken
                with EnvClient(URL, "math-tools") as probe:
                    with self.assertRaises(EnvworkerError) as err:
                        probe.state(eid)
                    self.assertEqual(err.exception.code, "UNKNOWN_EPISODE")
            metrics = etrl.environment_metrics(Env, ["num_tool_calls", "correct_answer"])
            self.assertEqual(metrics.weights, [0.0, 0.0])
            # Rollout 0: two calculator calls reached the server (the one with an unknown argument
            # was refused before it was sent); rollout 1: one.
            self.assertEqual(metrics[0](prompts=prompts, completions=completions, environments=trainer.environments), [2.0, 1.0])
            self.assertEqual(metrics[1](prompts=prompts, completions=completions, environments=trainer.environments), [1.0, 0.0])
        finally:
            trainer.close()

    def test_game_with_environment_owned_data_and_groups(self) -> None:
        """No dataset (TRL's placeholder rows): reset returns the prompt text; a group of
        group_size rollouts plays one example; a multi-turn game goes through reply()."""
        G = 2
        Env = etrl.environment_factory(URL, "alphabet-sort", seed=1234, group_size=G, asynchronous=False)
        inputs = [{"prompt": [{"role": "user", "content": ""}]} for _ in range(2 * G)]
        trainer = FakeTrainer(Env, len(inputs))
        try:
            self.assertEqual(sorted(trainer.sync_tools[0]), ["reply"])
            prompts = trainer.reset(inputs)
            texts = [p[-1]["content"] for p in prompts]
            self.assertTrue(all(texts))
            self.assertEqual(texts[0], texts[1])  # one group, one example
            self.assertEqual(texts[2], texts[3])
            self.assertNotEqual(texts[0], texts[2])
            episode_prompt = trainer.environments[0]._prompt
            self.assertEqual(texts[0], "\n\n".join(m["content"] for m in episode_prompt))
            # Rollout 0 plays every turn with the gold answer; rollout 1 plays one wrong turn.
            env0 = trainer.environments[0]
            history = list(env0._prompt)
            while True:
                answer = alphabet_sort_gold(history)
                message = trainer.call_tool(0, "reply", {"message": answer})["content"]
                history.append({"role": "assistant", "content": answer})
                if message.endswith("The episode is over."):
                    break
                history.append({"role": "user", "content": message})
            trainer.call_tool(1, "reply", {"message": "no idea"})
            completions = [[{"role": "assistant", "content": ""}] for _ in inputs]
            (rewards,) = trainer.calculate_rewards(inputs, prompts, completions)
            self.assertEqual(rewards[0], 1.0)
            self.assertLess(rewards[1], 1.0)
            self.assertEqual(trainer.reward_names, ["AlphabetSortEnv"])  # how TRL names get_reward
        finally:
            trainer.close()

    def test_reward_functions_grade_rollouts_through_environments(self) -> None:
        """owns_reward=False: reward_functions find each rollout's example via `environments`."""
        Env = etrl.environment_factory(URL, "reverse-text", owns_reward=False)
        self.assertFalse(hasattr(Env, "get_reward"))
        funcs = etrl.reward_functions(URL, "reverse-text")
        self.addCleanup(close_functions, funcs)
        inputs = [{"prompt": [{"role": "user", "content": ""}]} for _ in range(2)]
        trainer = FakeTrainer(Env, 2, funcs)
        try:
            prompts = trainer.reset(inputs)
            episode_prompts = [env._prompt for env in trainer.environments]
            completions = [[{"role": "assistant", "content": reverse_text_gold(episode_prompts[0])}], [{"role": "assistant", "content": "x"}]]
            total, metric = trainer.calculate_rewards(inputs, prompts, completions)
            self.assertEqual(total[0], 1.0)
            self.assertLess(total[1], 0.5)
            # Graded: the episodes are closed on the server (nothing else would close them).
            with EnvClient(URL, "reverse-text") as probe:
                for env in trainer.environments:
                    self.assertIsNone(env._client.episode_id)
                    with self.assertRaises(EnvworkerError) as caught:
                        probe.state(env._last.episode_id)
                    self.assertEqual(caught.exception.code, "UNKNOWN_EPISODE")
        finally:
            trainer.close()

    def test_unrun_tool_calls_of_the_last_segment_are_not_graded(self) -> None:
        """TRL stops its tool loop after max_tool_calling_iterations with the last turn's calls
        unrun: they are no tool calls of the episode (num_tool_calls counts the run ones)."""
        ex = easy_compute_examples(1)[0]
        expression = re.fullmatch(r"Compute (.+)\.", ex.prompt[-1]["content"]).group(1)
        call = {"type": "function", "function": {"name": "calculator", "arguments": {"expression": expression}}}
        completion = [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": "calculator", "content": "1"},
            {"role": "assistant", "content": "again", "tool_calls": [call, call]},
        ]
        converted = etrl.to_score_messages(completion)
        self.assertEqual(converted[-1], {"role": "assistant", "content": "again"})
        self.assertIn("tool_calls", converted[0])
        funcs = etrl.reward_functions(URL, "math-tools", metrics=["num_tool_calls"])
        self.addCleanup(close_functions, funcs)
        _, calls = [f(prompts=[ex.prompt], completions=[completion], example=[ex.example]) for f in funcs]
        self.assertEqual(calls, [1.0])

    def test_environment_owned_prompt_keeps_the_system_message(self) -> None:
        Env = etrl.environment_factory(URL, "wordle", seed=3)
        env = Env()
        text = env.reset(prompt=[{"role": "user", "content": ""}])
        system, user = env._prompt[0], env._prompt[-1]
        self.assertEqual(system["role"], "system")
        self.assertEqual(text, system["content"] + "\n\n" + user["content"].strip())
        reply = env.reply(message="<guess>[crane]</guess>")  # a sync call through the coroutine is not possible
        self.assertTrue(hasattr(reply, "__await__"))
        reply.close()
        env._finish()

    def test_factory_validation(self) -> None:
        with self.assertRaises(EnvworkerError):
            etrl.environment_factory(URL, "no-such-env")
        with self.assertRaisesRegex(ValueError, "no tools"):
            etrl.environment_factory(URL, "wordle", reply_tool=None)
        with self.assertRaisesRegex(ValueError, "reply_tool"):
            etrl.environment_factory(URL, "wordle", reply_tool="reset")
        env = etrl.environment_factory(URL, "wordle", reply_tool="guess")()
        with self.assertRaisesRegex(RuntimeError, "reset"):
            env.get_reward()


def _missing_training_stack() -> str:
    missing = [m for m in ("trl", "transformers", "torch", "datasets", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        from _support import trainer_missing  # a trainers venv that pins trl and torch must have them

        trainer_missing("trl", *missing)
        trainer_missing("torch", *missing)
    return ", ".join(missing)


@unittest.skipIf(_missing_training_stack(), f"a real GRPOTrainer run needs {_missing_training_stack()} installed")
class RealTrainerTests(unittest.TestCase):
    """GRPOTrainer for a few steps on a tiny random model whose tokenizer is built in code."""

    def trainer(self, tmp: str, tools: bool = False, **kwargs: Any) -> Any:
        from _tiny_model import bundled_qwen3_template, tiny_model_and_tokenizer  # type: ignore[import-not-found]
        from trl import GRPOConfig, GRPOTrainer  # type: ignore[import-not-found]

        if tools and bundled_qwen3_template() is None:
            self.skipTest("this TRL ships no Qwen3 chat template to build a tool-calling tokenizer from")
        model, tokenizer = tiny_model_and_tokenizer(tools=tools)
        config = GRPOConfig(
            output_dir=tmp,
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=16,
            max_steps=2,
            logging_steps=1,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            reward_weights=kwargs.pop("reward_weights", None),
        )
        return GRPOTrainer(model=model, processing_class=tokenizer, args=config, **kwargs)

    def test_reward_functions_and_dataset(self) -> None:
        import tempfile

        funcs = etrl.reward_functions(URL, "reverse-text")
        self.addCleanup(close_functions, funcs)
        with tempfile.TemporaryDirectory() as tmp:
            t = self.trainer(tmp, train_dataset=etrl.dataset(URL, "reverse-text", count=8), reward_funcs=list(funcs), reward_weights=funcs.weights)
            t.train()
            logged = {k for entry in t.state.log_history for k in entry}
            self.assertIn("rewards/reverse-text/mean", logged)
            self.assertIn("rewards/reverse-text/lcs_reward_func/mean", logged)

    def test_dataset_alone(self) -> None:
        import tempfile

        def length_penalty(completions: List[Any], **kwargs: Any) -> List[float]:
            return [-len(c[-1]["content"]) / 100.0 for c in completions]

        with tempfile.TemporaryDirectory() as tmp:
            t = self.trainer(tmp, train_dataset=etrl.dataset(URL, "wordle", count=8), reward_funcs=[length_penalty])
            t.train()
            self.assertTrue(any("rewards/length_penalty/mean" in entry for entry in t.state.log_history))

    def test_environment_factory_without_dataset(self) -> None:
        import tempfile

        Env = etrl.environment_factory(URL, "wordle", reply_tool="guess", group_size=2)
        with tempfile.TemporaryDirectory() as tmp:
            t = self.trainer(tmp, tools=True, environment_factory=Env)
            t.train()
            logged = {k for entry in t.state.log_history for k in entry}
            self.assertIn("rewards/WordleEnv/mean", logged)

    def test_environment_factory_graded_by_reward_functions_leaves_no_episode_open(self) -> None:
        """math-tools with tools, owns_reward=False + reward_functions: after train() every
        environment's last episode is closed on the server."""
        import tempfile

        Env = etrl.environment_factory(URL, "math-tools", owns_reward=False, args={"difficulty": "easy"})
        funcs = etrl.reward_functions(URL, "math-tools")
        self.addCleanup(close_functions, funcs)
        with tempfile.TemporaryDirectory() as tmp:
            t = self.trainer(tmp, tools=True, environment_factory=Env, train_dataset=etrl.dataset(URL, "math-tools", count=8, args={"difficulty": "easy"}), reward_funcs=list(funcs), reward_weights=funcs.weights)
            t.train()
            played = [e for e in t.environments if e._last is not None]
            self.assertTrue(played)
            with EnvClient(URL, "math-tools") as probe:
                for e in played:
                    with self.assertRaises(EnvworkerError) as caught:
                        probe.state(e._last.episode_id)
                    self.assertEqual(caught.exception.code, "UNKNOWN_EPISODE")

    def test_environment_factory(self) -> None:
        import tempfile

        Env = etrl.environment_factory(URL, "reverse-text", group_size=2)
        with tempfile.TemporaryDirectory() as tmp:
            t = self.trainer(tmp, tools=True, environment_factory=Env, reward_funcs=list(etrl.environment_metrics(Env)), reward_weights=[0.0])
            t.train()
            logged = {k for entry in t.state.log_history for k in entry}
            self.assertIn("rewards/ReverseTextEnv/mean", logged)


if __name__ == "__main__":
    unittest.main()
