"""envworker.testing: an environment's tool and reward tested without a server, their code run in
envworker's own sandboxes (``envworker run-code``, here this checkout's)."""

from __future__ import annotations

import os
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

from envworker import Environment, Example, Reward, tool  # noqa: E402
from envworker.testing import LocalSandbox, call_tool, reward  # noqa: E402

RUN_CODE = [os.environ.get("ENVWORKER_NODE", "node"), str(ROOT / "bin" / "envworker.js"), "run-code"]


@tool
async def python(code: str, sandbox) -> str:
    """Runs Python; answers its output."""
    r = await sandbox.run(code, lang="python", timeout_ms=5000)
    return r.stdout if r.ok else f"{r.error['name']}: {r.error['message']}"


async def passes(completion_text: str, answer: str, sandbox) -> float:
    r = await sandbox.run(completion_text, lang="python", stdin=answer, timeout_ms=5000)
    return 1.0 if r.ok and r.stdout.strip() == "yes" else 0.0


environment = Environment(
    name="test-tools",
    description="a tool and a reward that run code",
    generate=lambda ctx: Example(prompt="p", answer="@42"),
    tools=[python],
    rubric=[Reward("passes", passes)],
)


@unittest.skipUnless((ROOT / "node_modules").exists(), "needs this checkout's npm install (the sandboxes)")
class LocalSandboxTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sandbox = LocalSandbox(RUN_CODE, cwd=str(ROOT))

    def test_a_tool_runs_its_code_in_the_sandbox(self) -> None:
        self.assertEqual(call_tool(environment, "python", {"code": "print(6 * 7)"}, self.sandbox), "42\n")
        # The guest is sandboxed: no file system of the host's.
        self.assertIn("Error", call_tool(environment, "python", {"code": "print(open('/etc/passwd').read())"}, self.sandbox))
        self.assertEqual(call_tool(environment, "python", {"code": "1/0"}, self.sandbox), "ZeroDivisionError: division by zero")

    def test_a_reward_runs_code_with_stdin_as_given(self) -> None:
        done = [{"role": "assistant", "content": "x"}]
        code = "import sys\nprint('yes' if sys.stdin.read() == '@42' else 'no')"
        self.assertEqual(reward(environment, "passes", {"completion": [{"role": "assistant", "content": code}], "answer": "@42", "sandbox": self.sandbox}), 1.0)
        self.assertEqual(reward(environment, "passes", {"completion": done, "answer": "@42", "sandbox": self.sandbox}), 0.0)

    def test_a_sandbox_that_cannot_run_raises_never_a_silent_zero(self) -> None:
        broken = LocalSandbox([sys.executable, "-c", "import sys; sys.exit(2)"])
        with self.assertRaisesRegex(RuntimeError, "the sandbox could not run"):
            call_tool(environment, "python", {"code": "print(1)"}, broken)


if __name__ == "__main__":
    unittest.main()
