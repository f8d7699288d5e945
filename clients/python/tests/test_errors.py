"""str(EnvworkerError) carries the server's details readably (no server needed)."""

from __future__ import annotations

import unittest

import _support  # noqa: F401  (puts the client on sys.path)

from envworker.errors import EnvworkerConnectionError, EnvworkerError


class ErrorTextTests(unittest.TestCase):
    def test_validation_issues_as_path_and_message(self) -> None:
        err = EnvworkerError("VALIDATION_ERROR", "invalid args for reverse-text", 400,
                             [{"path": "", "message": 'Unrecognized key: "max_wordz"'}, {"path": "min_words", "message": "Too small"}])
        self.assertEqual(str(err), '400 VALIDATION_ERROR: invalid args for reverse-text (Unrecognized key: "max_wordz"; min_words: Too small)')
        self.assertEqual(err.details[0]["path"], "")

    def test_other_details_as_compact_json_and_long_ones_cut(self) -> None:
        err = EnvworkerError("EXECUTION_ERROR", "x failed", 422, {"reason": "TIMEOUT"})
        self.assertEqual(str(err), '422 EXECUTION_ERROR: x failed ({"reason": "TIMEOUT"})')
        long = EnvworkerError("VALIDATION_ERROR", "bad", 400, {"k": "v" * 2000})
        self.assertLess(len(str(long)), 600)
        self.assertTrue(str(long).endswith("…)"))

    def test_no_details_no_parentheses(self) -> None:
        self.assertEqual(str(EnvworkerError("UNKNOWN_ENV", "no env x", 404)), "404 UNKNOWN_ENV: no env x")
        self.assertEqual(str(EnvworkerConnectionError("CONNECTION_ERROR", "refused", request_sent=False)), "CONNECTION_ERROR: refused")


if __name__ == "__main__":
    unittest.main()
