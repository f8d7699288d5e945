"""Judged and group rewards from Python: ``run_group``, ``score_groups`` and the TRL reward
functions against a real envworker server whose operator set a judge (a stdlib mock of an
OpenAI-compatible endpoint, here) and the judged ``open-qa`` environment.

Run directly (``python3 tests/test_judge.py``) or with the rest (``npm run test:python``).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import REPO_ROOT, EnvworkerServer, reverse_text_gold  # noqa: E402

import envworker  # noqa: E402
from envworker import run_group, score_groups  # noqa: E402
from envworker import trl as etrl  # noqa: E402

QA = {row["question"]: row["answer"] for split in ("train", "eval") for row in json.loads((REPO_ROOT / "envs/open-qa/data" / f"{split}.json").read_text("utf-8"))}


def _norm(s: str) -> str:
    s = re.sub(r"^the\s+", "", s.strip().lower())
    return re.sub(r"[^\w.]+", " ", s).strip().rstrip(".")


class MockJudge(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat-completions endpoint grading like BrowseComp's grader."""

    calls: List[Dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        MockJudge.calls.append({"path": self.path, "authorization": self.headers.get("authorization"), "body": body})
        prompt = "\n".join(m["content"] for m in body.get("messages", []))
        response = re.search(r"\[response\]:\s*([\s\S]*?)\n\nYour judgement", prompt)
        correct = re.search(r"\[correct_answer\]:\s*(.*)", prompt)
        found = re.findall(r"^\W*exact answer\W*:\s*(.+)$", response.group(1) if response else "", re.I | re.M)
        ok = bool(found and correct and _norm(found[-1]) == _norm(correct.group(1)))
        text = f"extracted_final_answer: {found[-1] if found else 'None'}\n\nreasoning: mock\n\ncorrect: {'yes' if ok else 'no'}\n\nconfidence: 100"
        out = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4, "total_tokens": 0},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def setUpModule() -> None:
    global JUDGE, SERVER, URL
    JUDGE = ThreadingHTTPServer(("127.0.0.1", 0), MockJudge)
    threading.Thread(target=JUDGE.serve_forever, daemon=True).start()
    judge_url = f"http://127.0.0.1:{JUDGE.server_address[1]}/v1"
    SERVER = EnvworkerServer(
        "open-qa",
        "reverse-text",
        extra_env={"ENVWORKER_JUDGE_URL": judge_url, "ENVWORKER_JUDGE_MODEL": "mock-judge", "ENVWORKER_JUDGE_API_KEY": "sk-operator"},
    )
    URL = SERVER.start()


def tearDownModule() -> None:
    SERVER.stop()
    JUDGE.shutdown()
    JUDGE.server_close()


def answer_of(messages: List[Dict[str, Any]]) -> str:
    prompt = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    return QA[prompt.split("\n\n")[0]]


def reply(exact: str) -> str:
    return f"Explanation: known.\nExact Answer: {exact}\nConfidence: 80%"


class RunGroupTests(unittest.TestCase):
    def test_run_group_scores_the_group_together_with_the_judge(self) -> None:
        lock = threading.Lock()
        turn = [0]

        def policy(messages: List[Dict[str, Any]]) -> str:
            with lock:
                turn[0] += 1
                k = turn[0]
            # Three of four give the right answer; one a wrong one.
            return reply(answer_of(messages) if k % 4 else "Atlantis")

        group = run_group(URL, "open-qa", policy, group_size=4, index=3, split="train", normalize="none", max_concurrency=2)
        self.assertEqual(sorted(group.rewards), [0.0, 1.0, 1.0, 1.0])
        for e in group.episodes:
            right = e.reward == 1.0
            # group_agreement is the group's: 3/4 share the right answer, the wrong one is alone.
            self.assertAlmostEqual(e.metrics["group_agreement"], 0.75 if right else 0.25)
            # The verdict and a short reason: the judge's reply stays on the server.
            self.assertEqual(e.info["judge"]["correct"]["verdict"], right)
            self.assertLessEqual(len(e.info["judge"]["correct"].get("reason", "")), 201)
            self.assertIn("judge_calls", e.metrics)
        self.assertAlmostEqual(sum(group.advantages), 0.0)
        self.assertEqual(MockJudge.calls[-1]["authorization"], "Bearer sk-operator")

    def test_run_group_without_group_rewards_scores_nothing_more(self) -> None:
        group = run_group(URL, "reverse-text", reverse_text_gold, group_size=2, seed=3)
        self.assertEqual(group.rewards, [1.0, 1.0])
        self.assertNotIn("group_agreement", group.episodes[0].metrics)


class ScoreGroupsTests(unittest.TestCase):
    def test_score_groups(self) -> None:
        # open-qa judges its own questions only: the row q19 (the capital city of Canada, Ottawa).
        item = lambda a: {"completion": reply(a), "info": {"id": "q19"}}  # noqa: E731
        groups = score_groups(URL, "open-qa", [[item("Ottawa"), item("Toronto")], [item("Ottawa")]])
        self.assertEqual([[r.reward for r in g] for g in groups], [[1.0, 0.0], [1.0]])
        self.assertEqual([r.metrics["group_agreement"] for r in groups[0]], [0.5, 0.5])
        self.assertEqual(groups[0][1].info["judge"]["correct"]["verdict"], False)
        with self.assertRaises(ValueError):
            score_groups(URL, "open-qa", [[]])
        with self.assertRaises(ValueError):
            score_groups(URL, "open-qa", [[item("x")] * (envworker.GROUP_LIMIT + 1)])


class TrlGroupTests(unittest.TestCase):
    def test_reward_functions_send_each_prompts_completions_as_a_group(self) -> None:
        rows = etrl.dataset(URL, "open-qa", split="train", start=0, count=2, as_dataset=False)
        funcs = etrl.reward_functions(URL, "open-qa", metrics=["correct", "group_agreement"])
        try:
            # As GRPOTrainer calls them: num_generations=3 completions per prompt, side by side.
            prompts = [rows[0]["prompt"]] * 3 + [rows[1]["prompt"]] * 3
            examples = [rows[0]["example"]] * 3 + [rows[1]["example"]] * 3
            a0, a1 = answer_of(rows[0]["prompt"]), answer_of(rows[1]["prompt"])
            completions = [[{"role": "assistant", "content": reply(x)}] for x in (a0, a0, "nope", a1, "nope", "nope")]
            total, correct, agreement = (f(prompts=prompts, completions=completions, example=examples) for f in funcs)
        finally:
            funcs.close()
        self.assertEqual(total, [1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
        self.assertEqual(correct, total)
        for got, want in zip(agreement, [2 / 3, 2 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3]):
            self.assertAlmostEqual(got, want)


if __name__ == "__main__":
    unittest.main()
