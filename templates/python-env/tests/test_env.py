"""Unit tests of __NAME__'s functions, without a server: `python -m unittest` or `python -m pytest`.
`npx envworker validate .` checks the served environment (episodes, /score, OpenEnv's checks)."""

import asyncio
import unittest

from __MODULE__.env import Args, environment, guesses_in, parse_guess
from envworker import ArgsError, Turn


def assistant(text):
    return {"role": "assistant", "content": text}


class EnvTest(unittest.TestCase):
    def test_the_same_seed_gives_the_same_secret(self):
        args = environment.parse_args({})
        a = asyncio.run(environment.example(7, None, args, "train"))
        b = asyncio.run(environment.example(7, None, args, "train"))
        self.assertEqual(a, b)
        self.assertTrue(1 <= int(a.answer) <= 100)

    def test_args_are_checked(self):
        self.assertEqual(environment.parse_args({"max_guesses": 3}).max_guesses, 3)
        for bad in ({"max_guesses": 0}, {"max_number": "x"}, {"nope": 1}):
            with self.assertRaises(ArgsError):
                environment.parse_args(bad)

    def test_respond_says_higher_lower_and_correct(self):
        def reply(text, turn=1):
            t = Turn(messages=[], last_text=text, turn=turn, answer="40", info={}, state={}, args=Args(), sandbox=None)
            return asyncio.run(environment.reply(t))

        self.assertEqual(reply("<guess>50</guess>").messages, "Lower.")
        self.assertEqual(reply("<guess>10</guess>").messages, "Higher.")
        self.assertTrue(reply("<guess>40</guess>").done)
        self.assertTrue(reply("<guess>1</guess>", turn=7).done)
        self.assertIn("<guess>", reply("forty").messages)

    def test_rewards(self):
        completion = [assistant("<guess>50</guess>"), {"role": "user", "content": "Lower."}, assistant("<guess>40</guess>")]
        inputs = {"completion": completion, "answer": "40", "args": Args()}
        self.assertEqual(guesses_in(completion), [50, 40])
        self.assertEqual(asyncio.run(environment.reward("solved", inputs)), 1.0)
        self.assertAlmostEqual(asyncio.run(environment.reward("efficiency", inputs)), 1 - 1 / 6)
        self.assertEqual(asyncio.run(environment.reward("num_guesses", inputs)), 2.0)
        self.assertEqual(asyncio.run(environment.reward("solved", {**inputs, "answer": "41"})), 0.0)
        self.assertIsNone(parse_guess("no guess"))


if __name__ == "__main__":
    unittest.main()
