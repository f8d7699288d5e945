"""examples/python/trl_grpo.py without TRL: one message saying what to install, no traceback."""

from __future__ import annotations

import subprocess
import sys
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "python" / "trl_grpo.py"

# Run the example as if trl were not installed, whatever this machine has.
HIDE_TRL = """
import runpy, sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "trl" or name.startswith("trl."):
            raise ModuleNotFoundError("No module named 'trl'", name="trl")
        return None
sys.meta_path.insert(0, Hide())
sys.argv = [sys.argv[1], "--model", "some/model", "--env", "wordle"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


class InstallHintTests(unittest.TestCase):
    def test_missing_trl_says_how_to_install(self) -> None:
        r = subprocess.run([sys.executable, "-c", HIDE_TRL, str(SCRIPT)], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("training needs trl", r.stderr)
        self.assertIn("pip install trl transformers torch datasets jmespath", r.stderr)
        self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
