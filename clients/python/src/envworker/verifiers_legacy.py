"""envworker environments as verifiers (legacy) environments: what ``vf.load_environment("envworker", ...)``,
``vf-eval envworker`` and rLLM's ``VerifiersWorkflow`` load.

verifiers imports the module named by the environment id and calls its ``load_environment``
(``verifiers/legacy/utils/env_utils.py``): for the id ``envworker`` that is
:func:`envworker.load_environment`, which builds the :class:`EnvworkerMultiTurnEnv` here. Needs
``verifiers`` (>= 0.3.1, the releases with ``verifiers.legacy``); the rest of the client does not.

One rollout is one envworker episode:

* the dataset comes from ``POST /examples`` (prompts and example references, never answers);
* the rollout resets its episode by the row's example reference, and its tool definitions are
  the episode's tools;
* each assistant turn (content and tool calls) is sent as a step; the environment's reply is the
  next messages; the rollout stops when the episode is done;
* the rubric is the episode's reward (weight 1) and each of the environment's reward functions
  (weight 0, recorded as metrics); a rollout verifiers cut short (a token or time limit, an error)
  is scored by ``POST /score`` on the conversation it has;
* the episode is always closed when the rollout ends.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._verifiers import require_legacy

require_legacy()
import verifiers as vf  # noqa: E402  the legacy surface (verifiers.legacy), as `import verifiers as vf` gives it

from ._content import content_text
from ._rows import example_rows, tool_defs
from .client import DEFAULT_TIMEOUT, EnvClient, _env_path
from ._transport import Transport
from .errors import EnvworkerError
from .types import StepResult

Message = Dict[str, Any]

#: Names verifiers' MultiTurnEnv records itself: an environment metric of the same name is
#: recorded as ``envworker_<name>`` (verifiers would otherwise add the two).
_VERIFIERS_METRICS = frozenset({"num_turns"})
#: The metric under which the episode's reward (the rubric's weight-1 function) is recorded.
REWARD_NAME = "envworker_reward"


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name, None)


def _wire_tool_calls(message: Any) -> List[Dict[str, Any]]:
    """verifiers' tool calls (``{id, name, arguments}``) as the server's OpenAI-style ones."""
    calls = []
    for c in _field(message, "tool_calls") or []:
        fn = _field(c, "function")
        name = _field(fn, "name") if fn is not None else _field(c, "name")
        arguments = _field(fn, "arguments") if fn is not None else _field(c, "arguments")
        calls.append({"id": str(_field(c, "id")), "type": "function", "function": {"name": str(name), "arguments": arguments if isinstance(arguments, str) else str(arguments or "")}})
    return calls


def wire_message(message: Any) -> Message:
    """One verifiers message (typed or a dict) as the server's message (for ``/score``)."""
    role = _field(message, "role")
    content = content_text(_field(message, "content"))
    if role == "assistant":
        out: Message = {"role": "assistant", "content": content}
        calls = _wire_tool_calls(message)
        if calls:
            out["tool_calls"] = calls
        return out
    if role == "tool":
        return {"role": "tool", "content": content or "", "tool_call_id": str(_field(message, "tool_call_id"))}
    return {"role": str(role), "content": content or ""}


def action_of(message: Any) -> Dict[str, Any]:
    """The model's turn (an assistant message) as the step's action."""
    action: Dict[str, Any] = {"content": content_text(_field(message, "content"))}
    calls = _wire_tool_calls(message)
    if calls:
        action["tool_calls"] = calls
    return action


def _vf_message(m: Mapping[str, Any]) -> Any:
    """The environment's reply message (user or tool) as verifiers' typed message."""
    if m.get("role") == "tool":
        return vf.ToolMessage(tool_call_id=str(m.get("tool_call_id")), content=m.get("content") or "")
    return vf.UserMessage(content=m.get("content") or "")


def _outcome_of(result: StepResult) -> Dict[str, Any]:
    return {"reward": float(result.reward or 0.0), "metrics": dict(result.observation.metrics or {})}


class EnvworkerMultiTurnEnv(vf.MultiTurnEnv):
    """A verifiers MultiTurnEnv whose rollouts are episodes of an envworker environment."""

    def __init__(
        self,
        *,
        base_url: str,
        env: str,
        split: Optional[str] = None,
        args: Optional[Mapping[str, Any]] = None,
        token: Optional[str] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        num_examples: Optional[int] = None,
        seed: int = 0,
        eval_split: Optional[str] = None,
        num_eval_examples: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        self.envworker = {"base_url": base_url, "env": env, "split": split, "args": dict(args) if args is not None else None, "token": token, "timeout": timeout}
        rows, first = example_rows(base_url, env, split=split, args=args, num_examples=num_examples, seed=seed, token=token, timeout=timeout)
        if not rows:
            raise ValueError(f"{env} gave no examples (split {split!r}, num_examples {num_examples})")
        eval_rows = None
        if eval_split is not None or num_eval_examples is not None:
            eval_rows, _ = example_rows(base_url, env, split=eval_split or split, args=args, num_examples=num_eval_examples, seed=seed, token=token, timeout=timeout)
        from datasets import Dataset

        self.metric_names = [str(r["name"]) for r in first.rubric]
        super().__init__(
            dataset=Dataset.from_list(rows),
            # Without an eval split of its own, evaluation uses the same examples.
            eval_dataset=Dataset.from_list(eval_rows if eval_rows else rows),
            rubric=self._rubric(),
            tool_defs=tool_defs(first.tools) or None,
            # The server ends the episode (done) at its own turn limit; verifiers' own limit stays off.
            max_turns=kwargs.pop("max_turns", -1),
            **kwargs,
        )
        # verifiers wraps the rubric (a RubricGroup with its own metrics): the one rollouts are scored by.
        self.rubric.score_rollout = _taking_score_sem(self.rubric.score_rollout)  # type: ignore[method-assign]

    # -- what rLLM's VerifiersWorkflow passes -------------------------------------------------------

    async def rollout(self, input: Any, client: Any, model: str, sampling_args: Optional[Dict[str, Any]] = None) -> vf.State:
        """verifiers' rollout, taking what rLLM's ``VerifiersWorkflow`` (rllm-org/rllm,
        examples/verifiers_env/workflow.py) passes as well: an OpenAI-style client of its own (its
        ``RolloutEngineAsyncClient``: anything with ``chat.completions.create``), which verifiers
        0.3 refuses (``Unsupported client type``), and ``task: "default"``, a plain string verifiers
        0.3 no longer takes (``Serialized task payloads must be JSON objects``)."""
        return await super().rollout(_rollout_input(input), _vf_client(client), model, sampling_args)

    # -- the episode -----------------------------------------------------------------------------

    def _client(self) -> EnvClient:
        c = self.envworker
        return EnvClient(c["base_url"], c["env"], token=c["token"], timeout=c["timeout"])

    async def setup_state(self, state: vf.State) -> vf.State:
        client = self._client()
        state["envworker_client"] = client
        info = state.get("info") or {}
        ref = info.get("example") if isinstance(info, Mapping) else None
        if isinstance(ref, str) and ref:
            result = await asyncio.to_thread(client.reset, example=ref)
        else:  # a row of the user's own dataset without a reference: the environment picks
            c = self.envworker
            result = await asyncio.to_thread(client.reset, split=c["split"], args=c["args"])
            state["info"] = {**(info if isinstance(info, Mapping) else {}), "example": (result.observation.info or {}).get("example")}
        state["envworker_episode_id"] = result.episode_id
        state["envworker_last"] = result
        if result.observation.tools:
            state["tool_defs"] = self._normalize_tool_defs(tool_defs(result.observation.tools)) or []
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        client: EnvClient = state["envworker_client"]
        result = await asyncio.to_thread(client.step, action_of(messages[-1]))
        state["envworker_last"] = result
        reply = [_vf_message(m) for m in result.observation.messages]
        if result.done:
            state["envworker_outcome"] = _outcome_of(result)
            state["final_env_response"] = reply
        return reply

    @vf.cleanup(priority=-100)
    async def close_episode(self, state: vf.State) -> None:
        """Close the rollout's episode however the rollout ended."""
        client: Optional[EnvClient] = state.get("envworker_client")
        if client is None:
            return
        state["envworker_client"] = None
        try:
            await asyncio.to_thread(client.close)
        except EnvworkerError:
            pass  # already gone: nothing to free
        finally:
            await asyncio.to_thread(client._transport.close)

    # -- scoring ---------------------------------------------------------------------------------

    async def outcome(self, state: vf.State) -> Dict[str, Any]:
        """The episode's reward and metrics: the server's, or ``POST /score`` on the conversation
        of a rollout that ended before its episode did."""
        if "envworker_outcome" in state:
            return state["envworker_outcome"]
        info = state.get("info") or {}
        ref = info.get("example") if isinstance(info, Mapping) else None
        if not ref:
            outcome: Dict[str, Any] = {"reward": 0.0, "metrics": {}}
        else:
            completion = [wire_message(m) for m in state.get("completion") or []] or [{"role": "assistant", "content": ""}]
            c = self.envworker
            transport = Transport(c["base_url"], token=c["token"], timeout=c["timeout"])
            try:
                from .client import _score

                result = (await asyncio.to_thread(_score, transport, _env_path(c["env"]), [{"example": ref, "completion": completion}]))[0]
            finally:
                transport.close()
            outcome = {"reward": float(result.reward), "metrics": dict(result.metrics)}
        state["envworker_outcome"] = outcome
        return outcome

    def _rubric(self) -> vf.Rubric:
        async def envworker_reward(state: vf.State, **kwargs: Any) -> float:
            return (await self.outcome(state))["reward"]

        envworker_reward.__name__ = REWARD_NAME
        funcs: List[Any] = [envworker_reward]
        for name in self.metric_names:

            async def metric(state: vf.State, _name: str = name, **kwargs: Any) -> float:
                return float((await self.outcome(state))["metrics"].get(_name, 0.0))

            metric.__name__ = f"envworker_{name}" if name in _VERIFIERS_METRICS or name == REWARD_NAME else name
            funcs.append(metric)
        return vf.Rubric(funcs=funcs, weights=[1.0] + [0.0] * (len(funcs) - 1))


def _taking_score_sem(score_rollout: Any) -> Any:
    """``score_rollout`` also taking the ``score_sem`` that rLLM's ``VerifiersWorkflow`` passes
    (older verifiers took one; 0.3 does not): the rollouts are scored from the episode, so there
    is nothing to bound."""

    async def score(state: vf.State, score_sem: Any = None, **kwargs: Any) -> Any:
        out = await score_rollout(state, **kwargs)
        # Each turn's reward, where verifiers left none, is the episode's (an outcome reward): what
        # rLLM's workflow reads per step, as a number.
        for step in state.get("trajectory") or []:
            if isinstance(step, dict) and step.get("reward") is None:
                step["reward"] = state.get("reward")
        return out

    return score


def _rollout_input(input: Any) -> Any:
    """A rollout input without a plain-string ``task`` (a name such as rLLM's ``"default"``)."""
    if isinstance(input, Mapping) and isinstance(input.get("task"), str):
        import json

        try:
            if isinstance(json.loads(input["task"]), Mapping):
                return input
        except ValueError:
            pass
        return {k: v for k, v in input.items() if k != "task"}
    return input


class ChatCompletionsCreateClient(vf.OpenAIChatCompletionsClient):
    """verifiers' chat-completions client over any object with ``chat.completions.create`` (an
    ``AsyncOpenAI``, or rLLM's ``RolloutEngineAsyncClient``, which has nothing else: verifiers'
    own client posts raw HTTP through ``client.post``)."""

    async def get_native_response(self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any) -> Any:
        args = {k: v for k, v in dict(sampling_args or {}).items() if v is not None}
        if "max_tokens" in args:
            args["max_completion_tokens"] = args.pop("max_tokens")
        args.update(args.pop("extra_body", None) or {})
        if tools:
            args["tools"] = tools
        return await self.client.chat.completions.create(model=model, messages=prompt, **args)


def _vf_client(client: Any) -> Any:
    """verifiers' own client or config as it is; an OpenAI-style client (``chat.completions.create``) in :class:`ChatCompletionsCreateClient`."""
    if isinstance(client, (vf.Client, vf.ClientConfig)):
        return client
    if callable(getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)):
        return ChatCompletionsCreateClient(client)
    return client


def load_environment(
    base_url: str,
    env: str,
    split: Optional[str] = None,
    args: Optional[Mapping[str, Any]] = None,
    token: Optional[str] = None,
    **kwargs: Any,
) -> EnvworkerMultiTurnEnv:
    """The envworker environment ``env`` at ``base_url`` as a verifiers ``MultiTurnEnv``.

    ``split`` and ``args`` choose the examples (``args``: the environment's own arguments);
    ``num_examples`` (default: a dataset's every row, a generated environment's 100 seeds from
    ``seed``), ``eval_split`` / ``num_eval_examples`` (an eval dataset; default: the same rows),
    ``timeout``, and verifiers' own ``MultiTurnEnv`` arguments go in ``kwargs``.
    """
    return EnvworkerMultiTurnEnv(base_url=base_url, env=env, split=split, args=args, token=token, **kwargs)
