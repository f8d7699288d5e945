"""The Python authoring API (envworker.authoring) and its worker's protocol (envworker.worker), without
a server: what an environment declares, how its args are checked, what its functions are given, and
the frames a worker process speaks (its sandbox requests, its output kept off the protocol)."""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from dataclasses import dataclass, field
from typing import List, Literal, Optional

import _support  # noqa: F401  (puts ../src on sys.path)
from envworker import ArgsError, Environment, Example, Reply, Reward, tool
from envworker._frames import frame, read_frame
from envworker.worker import load_target


@dataclass
class Args:
    n: int = 3
    ratio: float = 0.5
    mode: Literal["a", "b"] = "a"
    cap: Optional[int] = None
    tags: List[str] = field(default_factory=list)

    def __post_init__(self):
        if self.n < 0:
            raise ValueError("n must be at least 0")


def calculator(expression: str, digits: int = 2) -> str:
    """Evaluate an arithmetic expression.

    More text that the model does not need."""
    return expression


def make(**kw):
    base = dict(name="t-env", generate=lambda ctx: Example(prompt="p", answer="a"), rubric=[Reward("r", lambda answer: 1.0)])
    base.update(kw)
    return Environment(**base)


class DeclarationTest(unittest.TestCase):
    def test_args_schema_from_the_dataclass(self):
        schema = make(args=Args).args_schema()
        self.assertEqual(schema["additionalProperties"], False)
        p = schema["properties"]
        self.assertEqual(p["n"], {"type": "integer", "default": 3})
        self.assertEqual(p["ratio"], {"type": "number", "default": 0.5})
        self.assertEqual(p["mode"], {"enum": ["a", "b"], "default": "a"})
        self.assertEqual(p["cap"], {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None})
        self.assertEqual(p["tags"], {"type": "array", "items": {"type": "string"}, "default": []})

    def test_args_are_checked_like_zod(self):
        env = make(args=Args)
        self.assertEqual(env.parse_args({}), Args())
        self.assertEqual(env.parse_args({"n": 4, "ratio": 1, "cap": 2, "tags": ["x"]}), Args(n=4, ratio=1.0, cap=2, tags=["x"]))
        for bad, why in [({"zz": 1}, "unknown"), ({"n": "3"}, "expected int"), ({"n": True}, "expected int"), ({"mode": "c"}, "one of"), ({"tags": [1]}, "tags"), ({"n": -1}, "at least 0")]:
            with self.assertRaises(ArgsError) as caught:
                env.parse_args(bad)
            self.assertIn(why, str(caught.exception))

    def test_a_field_without_a_default_is_refused(self):
        @dataclass
        class NoDefault:
            n: int

        with self.assertRaisesRegex(TypeError, "needs a default"):
            make(args=NoDefault)

    def test_mistakes_are_said_at_definition(self):
        with self.assertRaisesRegex(ValueError, "kebab-case"):
            make(name="Bad_Name")
        with self.assertRaisesRegex(ValueError, "exactly one of dataset or generate"):
            make(dataset=lambda a, s: [])
        with self.assertRaisesRegex(ValueError, "rubric"):
            make(rubric=[])
        with self.assertRaisesRegex(ValueError, "duplicate reward"):
            make(rubric=[Reward("r", lambda: 1), Reward("r", lambda: 1)])
        with self.assertRaisesRegex(ValueError, "max_turns"):
            make(max_turns=0)
        with self.assertRaisesRegex(TypeError, "is none of"):
            Reward("r", lambda completion, answers: 1)

    def test_tools_from_type_hints_and_docstrings(self):
        t = tool(calculator)
        self.assertEqual(t.name, "calculator")
        self.assertEqual(t.description, "Evaluate an arithmetic expression.")
        self.assertEqual(
            t.parameters,
            {"type": "object", "properties": {"expression": {"type": "string"}, "digits": {"type": "integer", "default": 2}}, "required": ["expression"], "additionalProperties": False},
        )

        @tool(name="run_it", timeout_ms=500)
        async def run(code: str, sandbox) -> str:
            """Run code."""
            return code

        self.assertEqual((run.name, run.timeout_ms, list(run.parameters["properties"])), ("run_it", 500, ["code"]))
        with self.assertRaisesRegex(ValueError, "description"):
            tool(lambda x: x, name="undocumented")

    def test_the_spec_the_server_reads(self):
        env = make(args=Args, system_prompt=lambda a: f"n={a.n}", max_turns=4, tools=[tool(calculator)], rubric=[Reward("r", lambda: 1, weight=0.5)])
        spec = json.loads(json.dumps(env.spec()))
        self.assertEqual(spec["system_prompt"], {"dynamic": True})
        self.assertEqual(spec["max_turns"], {"static": 4})
        self.assertEqual(spec["rubric"], [{"name": "r", "weight": 0.5}])
        self.assertEqual(spec["tools"][0]["name"], "calculator")
        self.assertEqual(spec["source"], "generate")


class CallsTest(unittest.TestCase):
    def test_generate_is_seeded_like_random_random(self):
        import random

        env = make(generate=lambda ctx: Example(prompt=str(ctx.rng.random()), answer=str(ctx.seed)))
        ex = asyncio.run(env.example(42, None, None, "train"))
        self.assertEqual(ex.prompt, str(random.Random(42).random()))
        self.assertEqual(ex.answer, "42")

    def test_rewards_get_the_arguments_they_declare_sync_or_async(self):
        async def later(completion_text, answer):
            await asyncio.sleep(0)
            return completion_text == answer

        seen = {}

        def everything(**kw):
            seen.update(kw)
            return 0.25

        env = make(rubric=[Reward("later", later), Reward("all", everything)])
        inputs = {"completion_text": "x", "answer": "x", "prompt": [], "completion": [], "info": {}, "state": {}, "args": None, "sandbox": None}
        self.assertEqual(asyncio.run(env.reward("later", inputs)), 1.0)
        self.assertEqual(asyncio.run(env.reward("all", inputs)), 0.25)
        self.assertEqual(set(seen), set(inputs))
        bad = make(rubric=[Reward("bad", lambda: "high")])
        with self.assertRaisesRegex(TypeError, "not a number"):
            asyncio.run(bad.reward("bad", inputs))

    def test_respond_may_return_a_string_a_reply_or_nothing(self):
        from envworker import Turn

        for value, expected in [("hi", Reply("hi")), (Reply("x", done=True), Reply("x", done=True)), (None, Reply())]:
            env = make(respond=lambda turn, v=value: v)
            t = Turn(messages=[], last_text="", turn=1, answer="", info={}, state={}, args=None, sandbox=None)
            self.assertEqual(asyncio.run(env.reply(t)), expected)


ENV_SOURCE = textwrap.dedent(
    """
    from envworker import Environment, Example, Reward

    async def runs_code(completion_text, sandbox):
        r = await sandbox.run("print(6*7)", lang="python", timeout_ms=500)
        return 1.0 if r.ok and r.stdout.strip() == "42" else 0.0

    def noisy(answer):
        print("this goes to stderr, not the protocol")
        return 0.5

    environments = [
        Environment(name="first", generate=lambda ctx: Example(prompt="p", answer="a"), rubric=[Reward("code", runs_code)]),
        Environment(name="second", dataset=lambda args, split: [Example(prompt="q", answer="b")], rubric=[Reward("noisy", noisy)]),
    ]
    """
)


class WorkerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "env.py")
        with open(self.path, "w") as f:
            f.write(ENV_SOURCE)

    def test_targets_a_file_a_folder_and_a_module(self):
        self.assertEqual([e.name for e in load_target(self.path)], ["first", "second"])
        with tempfile.TemporaryDirectory() as other:
            with open(os.path.join(other, "x.py"), "w") as f:
                f.write("value = 1\n")
            with self.assertRaisesRegex(ImportError, "neither `environment`"):
                load_target(os.path.join(other, "x.py"))

    def test_the_protocol(self):
        boot = f"import sys; sys.path.insert(0, {str(_support.SRC)!r}); import envworker.worker as w; w.main()"
        proc = subprocess.Popen([sys.executable, "-I", "-B", "-c", boot, self.path, "100000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def send(fields, body=None):
            proc.stdin.write(frame(fields, json.dumps(body).encode() if body is not None else b""))
            proc.stdin.flush()

        def receive():
            """The next frame but the `started` ones (a forked call's child: its pid)."""
            while True:
                fields, body = read_frame(proc.stdout.fileno(), 100000)
                if fields["t"] != "started":
                    return fields, json.loads(body) if body else None

        try:
            fields, hello = receive()
            self.assertEqual(fields["t"], "hello")
            self.assertEqual([s["name"] for s in hello["envs"]], ["first", "second"])
            send({"t": "call", "id": 1, "method": "reward"}, {"env": "second", "name": "noisy", "answer": "b"})
            self.assertEqual(receive(), ({"t": "done", "id": 1, "n": 3}, 0.5))
            # A sandbox run is a request to the server; the call waits for its answer.
            send({"t": "call", "id": 2, "method": "reward"}, {"env": "first", "name": "code", "completion": []})
            fields, req = receive()
            self.assertEqual((fields["t"], fields["id"], req["code"], req["lang"], req["options"]), ("sandbox", 2, "print(6*7)", "python", {"timeoutMs": 500}))
            send({"t": "sandbox-result", "id": 2, "sid": fields["sid"]}, {"result": {"ok": True, "result": None, "stdout": "42\n", "stderr": "", "elapsedMs": 3}})
            self.assertEqual(receive(), ({"t": "done", "id": 2, "n": 3}, 1.0))
            send({"t": "call", "id": 3, "method": "dataset"}, {"env": "second", "args": {}, "split": "train"})
            self.assertEqual(receive()[1], [{"prompt": "q", "answer": "b", "info": {}}])
            send({"t": "call", "id": 4, "method": "dataset"}, {"env": "second", "args": {"x": 1}, "split": "train"})
            fields, error = receive()
            self.assertEqual((fields["t"], error["type"]), ("failed", "ArgsError"))
            send({"t": "call", "id": 5, "method": "dataset"}, {"env": "nope", "args": {}, "split": "train"})
            self.assertEqual(receive()[1]["type"], "KeyError")
            # A killed call's child goes, and says nothing more; the next call is served.
            send({"t": "call", "id": 6, "method": "reward"}, {"env": "first", "name": "code", "completion": []})
            self.assertEqual(receive()[0]["t"], "sandbox")
            send({"t": "kill", "id": 6})
            send({"t": "call", "id": 7, "method": "reward"}, {"env": "second", "name": "noisy", "answer": "b"})
            self.assertEqual(receive(), ({"t": "done", "id": 7, "n": 3}, 0.5))
        finally:
            proc.stdin.close()
            proc.wait(timeout=10)
            proc.stdout.close()
        self.assertIn(b"this goes to stderr", proc.stderr.read())
        proc.stderr.close()


class ServedTest(unittest.TestCase):
    """A Python environment served by envworker, played through the Python client as any other."""

    @classmethod
    def setUpClass(cls):
        # The workers' interpreter: python3, not the ENVWORKER_PYTHON this suite may run under (CI's
        # trainer venv, under $HOME, which a worker's own user cannot read when the tests run as root).
        cls.server = _support.EnvworkerServer("reverse-text", "./envs/reverse-text/env.py", extra_env={"ENVWORKER_PYTHON": "python3"})
        cls.url = cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_an_episode_and_score_through_the_client(self):
        from envworker import EnvClient, list_envs

        self.assertEqual(sorted(e.name for e in list_envs(self.url)), ["reverse-text", "reverse-text-py"])
        with EnvClient(self.url, "reverse-text-py") as env:
            reset = env.reset(seed=11, split="eval")
            self.assertEqual([m["role"] for m in reset.observation.messages], ["system", "user"])
            step = env.step(_support.reverse_text_gold(reset.observation.messages))
            self.assertEqual((step.reward, step.done, step.observation.metrics), (1.0, True, {"lcs_reward_func": 1.0}))
            scored = env.score([{"completion": "<reversed_text>nope</reversed_text>", "answer": "epon"}])
            import difflib

            self.assertEqual(scored[0].reward, difflib.SequenceMatcher(None, "nope", "epon").ratio())
        with EnvClient(self.url, "reverse-text") as ts:
            self.assertEqual(ts.reset(seed=11, split="eval").observation.messages, reset.observation.messages)


if __name__ == "__main__":
    unittest.main()
