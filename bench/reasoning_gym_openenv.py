"""The OpenEnv side of bench/reasoning-gym.ts (run by it, with a Python that has openenv-core and
reasoning-gym: the trainers venv of scripts/trainers-venv.sh).

    python bench/reasoning_gym_openenv.py server PORT DATASET
        OpenEnv's own FastAPI server (openenv.core.env_server.create_app) with a minimal OpenEnv
        environment wrapping reasoning-gym's DATASET as the catalog serves it: item seed % 2**31
        of create_dataset(DATASET, seed=0), reasoning-gym's default system prompt, reward
        score_answer(extract_answer(text), entry).
    python bench/reasoning_gym_openenv.py client DATASET EPISODES ROUNDS URL=NAME ...
        OpenEnv's client (GenericEnvClient, over the WebSocket) against each base URL in
        alternating rounds: per episode a reset and a step with the gold answer (drawn here, outside
        the clock); prints {NAME: [step ms, ...], ...} as JSON.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import uuid
from typing import Any, Dict, List, Optional

SIZE = 2**31


def dataset(name: str) -> Any:
    import reasoning_gym

    return reasoning_gym.create_dataset(name, seed=0, size=SIZE)


def serve(port: int, name: str) -> None:
    import uvicorn
    from openenv.core.env_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from reasoning_gym.utils import SYSTEM_PROMPTS, extract_answer

    ds = dataset(name)

    class RgAction(Action):
        content: str = ""

    class RgObservation(Observation):
        messages: List[Dict[str, Any]] = []

    class RgEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.entry: Optional[Dict[str, Any]] = None
            self._state = State(episode_id=None, step_count=0)

        def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> RgObservation:
            index = (seed if seed is not None else random.randrange(SIZE)) % SIZE
            random.seed(f"{name}:{index}")  # as the catalog draws
            self.entry = ds[index]
            self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
            return RgObservation(messages=[{"role": "system", "content": SYSTEM_PROMPTS["default"]}, {"role": "user", "content": self.entry["question"]}])

        def step(self, action: RgAction, timeout_s: Optional[float] = None, **kwargs: Any) -> RgObservation:
            assert self.entry is not None, "reset first"
            self._state.step_count += 1
            try:
                reward = float(ds.score_answer(extract_answer(action.content), self.entry))
            except Exception:  # noqa: BLE001 (as the catalog scores it)
                reward = 0.0
            return RgObservation(messages=[], done=True, reward=reward)

        @property
        def state(self) -> State:
            return self._state

    app = create_app(RgEnvironment, RgAction, RgObservation, env_name=f"rg-{name}", max_concurrent_envs=64)
    print(f"openenv serving on http://127.0.0.1:{port}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


async def play(url: str, name: str, seeds: List[int], golds: Dict[int, str]) -> List[float]:
    from openenv import GenericEnvClient

    times = []
    async with GenericEnvClient(base_url=url) as env:
        for seed in seeds:
            await env.reset(seed=seed)
            t0 = time.perf_counter()
            result = await env.step({"content": f"<answer>{golds[seed]}</answer>"})
            times.append((time.perf_counter() - t0) * 1000)
            if result.reward != 1.0:
                raise AssertionError(f"{url}: seed {seed} scored {result.reward} for the gold answer")
    return times


def client(name: str, episodes: int, rounds: int, targets: List[str]) -> None:
    ds = dataset(name)
    seeds = list(range(1000, 1000 + episodes))
    golds = {}
    for s in seeds:
        random.seed(f"{name}:{s}")
        golds[s] = ds[s]["answer"]
    out: Dict[str, List[float]] = {}
    pairs = [t.split("=", 1) for t in targets]
    for r in range(rounds):
        for url, label in pairs if r % 2 == 0 else list(reversed(pairs)):
            out.setdefault(label, []).extend(asyncio.run(play(url, name, seeds, golds)))
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]), sys.argv[3])
    else:
        client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
