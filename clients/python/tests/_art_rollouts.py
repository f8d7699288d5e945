"""Plays envworker rollouts with ART (``envworker.art``) in a process of its own, for
test_trainers_skyrl_art.py: ``import art`` patches transformers for the whole process (ART 0.5.18
replaces ``transformers.masking_utils._preprocess_mask_arguments`` with a function of the older
signature), which breaks TRL's generation in any process that imported it.

    python _art_rollouts.py URL API_URL rollouts|group CASES_JSON   → JSON on stdout
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of litellm's cost map
os.environ.setdefault("WEAVE_DISABLED", "true")

import _support  # noqa: E402,F401  (puts ../src on sys.path)


def model(api: str):
    import art
    from openai import AsyncOpenAI

    m = art.Model(name="mock-model", project="envworker-test", inference_model_name="mock-model", inference_base_url=api, inference_api_key="mock")
    # The client model.openai_client() returns (ART caches it here): ART 0.5.18 builds its own with
    # an httpx.Timeout, which openai 3's httpx2 transport cannot add to a deadline.
    m._openai_client = AsyncOpenAI(base_url=api, api_key="mock")
    return m


def describe(t) -> dict:
    import art

    choices = [c for c in t.messages_and_choices if not isinstance(c, dict)]
    return {
        "type": type(t).__name__,
        "is_trajectory": isinstance(t, art.Trajectory),
        "reward": t.reward,
        "metrics": t.metrics,
        "metadata": t.metadata,
        "tools": [x["function"]["name"] for x in t.tools or []],
        "turns": [{"content": c.message.content, **({"tool_calls": [tc.model_dump() for tc in c.message.tool_calls]} if c.message.tool_calls else {})} for c in choices],
    }


async def main(url: str, api: str, what: str, cases: list) -> dict:
    import art

    from envworker import art as eart

    m = model(api)
    if what == "group":
        name, example, size = cases
        g = await eart.group(m, url, name, example=example, size=size)
        return {"is_group": isinstance(g, art.TrajectoryGroup), "trajectories": [describe(t) for t in g.trajectories]}
    return {"trajectories": [describe(await eart.rollout(m, url, name, example=example)) for name, example in cases]}


if __name__ == "__main__":
    url, api, what, cases = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    print(json.dumps(asyncio.run(main(url, api, what, cases))))
