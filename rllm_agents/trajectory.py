"""Token-exact trajectories: what the model saw and produced, turn by turn.

A :class:`Trajectory` is one episode. Each :class:`Step` records the full prompt token ids the
policy was given, the ids it produced with their logprobs, the text and the action sent to the
env, and the env's reward, flags and ``info``.

**The invariant** (checked by :meth:`Trajectory.check_token_exact`): every prompt extends the
previous prompt plus the previous completion, so the whole episode is one token sequence,
``steps[-1].prompt_ids + steps[-1].completion_ids``. The ids between one completion and the next
prompt's tail are template glue and the next observation (loss mask 0); completion ids are the
only ids with loss mask 1. What a trainer sees is exactly what was sampled.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from rllm_agents.error import AgentError
from rllm_envs.utils import to_jsonable

__all__ = ["Step", "Trajectory", "TokenExactnessError", "to_jsonable"]

Message = dict[str, Any]


class TokenExactnessError(AgentError, ValueError):
    """A trajectory breaks the prompt-extends-previous-sequence invariant."""


@dataclass
class Step:
    """One model turn and the env transition it caused.

    Attributes:
        prompt_ids: Every token id the policy was given for this turn (the whole history).
        completion_ids: The ids the policy produced (an end-of-turn token included when the
            policy emitted it).
        logprobs: Logprob of each completion id under the sampling policy (``[]`` when the
            backend did not return them).
        response: The completion as text (special tokens removed, cut at a stop string).
        action: What was passed to ``env.step`` (the agent's reading of ``response``).
        observation: The observation the env returned.
        reward: The env's reward.
        terminated: The env's ``terminated`` flag.
        truncated: The env's ``truncated`` flag.
        info: The env's ``info`` for this step (JSON-able).
        finish_reason: Why generation stopped: ``"stop"`` (end-of-turn token or stop string),
            ``"length"`` (``max_tokens`` reached) or ``"abort"``.
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    response: str
    action: str
    observation: str = ""
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = "stop"


@dataclass
class Trajectory:
    """One episode of an agent in an environment.

    Attributes:
        env_id: The environment id (or the env class name for unregistered envs).
        task_id: ``info["task_id"]`` after ``reset`` (``None`` if the env has none).
        seed: The seed passed to ``reset``.
        group: Index of the task group (samples of one task share it; GRPO groups).
        sample: Index of this sample within its group.
        initial_observation: The observation returned by ``reset``.
        initial_info: The ``info`` returned by ``reset`` (JSON-able).
        messages: The conversation as chat messages (for reading; training uses the ids).
        steps: The turns.
        token_exact: True when the ids are exactly what the model saw and sampled: every
            prompt built by appending to the previous sequence (local templating) and every
            completion id as the engine returned it (``token_source == "engine"``).
        token_source: Where the ids came from, as it happened: ``"engine"`` (the engine's
            ids, and its reported prompt ids, when it reports them, equal the trajectory's),
            ``"retokenized"`` (a server returned text only; its ids were re-tokenised
            locally), ``"prompt_mismatch"`` (the engine reports other prompt ids than the
            trajectory's) or ``"server_template"`` (a chat API templated the history itself).
        finish: ``"terminated"``, ``"truncated"`` (env turn limit), ``"context"`` (the next
            prompt would not fit the model's context) or ``"error"``.
        metadata: Backend, model, timings and other run facts.
    """

    env_id: str
    task_id: str | None = None
    seed: int | None = None
    group: int = 0
    sample: int = 0
    initial_observation: str = ""
    initial_info: dict[str, Any] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    token_exact: bool = True
    token_source: str = "engine"
    finish: str = "truncated"
    metadata: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- summaries

    @property
    def total_reward(self) -> float:
        """Sum of the env rewards over all steps."""
        return float(sum(s.reward for s in self.steps))

    @property
    def is_correct(self) -> bool:
        """``info["is_correct"]`` of the last step (False when absent)."""
        if not self.steps:
            return bool(self.initial_info.get("is_correct", False))
        return bool(self.steps[-1].info.get("is_correct", False))

    @property
    def num_turns(self) -> int:
        """Number of model turns."""
        return len(self.steps)

    @property
    def num_completion_tokens(self) -> int:
        """Number of ids the model produced over the episode."""
        return sum(len(s.completion_ids) for s in self.steps)

    # ------------------------------------------------------------ training view

    def token_ids(self) -> list[int]:
        """The whole episode as one id sequence: the last prompt and completion that have ids.

        A turn recorded without ids (a text-only reply, s41 att41e F2) is not the sequence:
        taken as it, the export held no id and no reward of the episode.
        """
        for step in reversed(self.steps):
            if step.prompt_ids or step.completion_ids:
                return list(step.prompt_ids) + list(step.completion_ids)
        return []

    def prompt_length(self) -> int:
        """Length of the first prompt (the part before the first model token)."""
        return len(self.steps[0].prompt_ids) if self.steps else 0

    def loss_mask(self) -> list[int]:
        """1 for ids the model produced, 0 for prompts, observations and template glue."""
        ids = self.token_ids()
        mask = [0] * len(ids)
        for span in self._spans_within(ids):
            if span is not None:
                mask[span[0] : span[1]] = [1] * (span[1] - span[0])
        return mask

    def _spans_within(self, ids: list[int]) -> list[tuple[int, int] | None]:
        """Each step's completion span in the last sequence ``ids``; None where it is not there.

        A history that does not extend (``token_exact=False``: a window that slid, a
        re-templated prompt) can place an earlier turn past the sequence's end (s40 att40p F1:
        such an episode broke every export) or over other tokens (s41 att41b F3, att41c F1:
        a re-rendered prompt's or an observation's tokens were trained as sampled, with an
        earlier turn's logprobs and reward). A step is in the sequence only where its prompt
        begins it and its completion (if any) follows, and its span is the leading ids that
        are its completion's: the training view holds only what the model sampled, after what
        it saw.
        """
        spans: list[tuple[int, int] | None] = []
        for step in self.steps:
            start = len(step.prompt_ids)
            if ids[:start] != list(step.prompt_ids):
                spans.append(None)
                continue
            completion = list(step.completion_ids)
            found = ids[start : start + len(completion)]
            kept = len(completion)
            if found != completion:
                pairs = zip(found, completion, strict=False)
                kept = sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs))
            # The first id of the sequence follows nothing: it is not trained (att41l F2: a
            # step with an empty prompt had its first id predicted from itself).
            first = max(start, 1) if kept else start
            spans.append((first, start + kept) if kept or not completion else None)
        return spans

    def logprobs(self) -> list[float]:
        """Sampling logprob of each id of :meth:`token_ids` (0.0 where the mask is 0).

        Where two turns' spans meet (a retried turn sharing its first ids with the one the
        history went on from), the ids are the logprobs of the turn whose whole completion is
        there: a retry's, sampled under other weights after a hot swap, were written over
        them (s41 att41l F1); of two such turns, the later.
        """
        ids = self.token_ids()
        out = [0.0] * len(ids)
        owned = [False] * len(ids)
        held = [
            (step, span, span[1] - len(step.prompt_ids) == len(step.completion_ids))
            for step, span in zip(self.steps, self._spans_within(ids), strict=True)
            if span is not None and step.logprobs
        ]
        for whole in (True, False):
            for step, (first, end), full in held:
                if full != whole:
                    continue
                start = len(step.prompt_ids)
                for i in range(first, end):
                    if whole or not owned[i]:
                        out[i], owned[i] = float(step.logprobs[i - start]), True
        return out

    def token_rewards(self) -> list[float]:
        """Each step's reward placed on the last id of its completion (0.0 elsewhere).

        A reward sits on an id the model sampled (mask 1), where a trainer reads it: a step
        whose completion is empty puts it on the last sampled id before it, and one with none
        before it, or that the last sequence does not hold (:meth:`_spans_within`), on the
        sequence's last sampled id (s41 att41e F1, att41j F1: on a prompt's id, a GAE batch
        dropped it). An episode with no sampled id puts its rewards on its last id.
        """
        ids = self.token_ids()
        out = [0.0] * len(ids)
        spans = self._spans_within(ids)
        sampled = [False] * len(ids)
        for span in spans:
            if span is not None:
                sampled[span[0] : span[1]] = [True] * (span[1] - span[0])
        last = max((i for i, s in enumerate(sampled) if s), default=len(ids) - 1)
        for step, span in zip(self.steps, spans, strict=True):
            end = span[1] if span is not None else 0
            at = next((i for i in range(end - 1, -1, -1) if sampled[i]), last)
            if at >= 0:
                out[at] += float(step.reward)
        return out

    def check_token_exact(self) -> None:
        """Raise :class:`TokenExactnessError` unless every prompt extends the last sequence.

        Also checks that each step has one logprob per completion id (when it has any).
        """
        previous: list[int] = []
        for index, step in enumerate(self.steps):
            if step.logprobs and len(step.logprobs) != len(step.completion_ids):
                raise TokenExactnessError(
                    f"Step {index}: {len(step.logprobs)} logprobs for "
                    f"{len(step.completion_ids)} completion ids."
                )
            if list(step.prompt_ids[: len(previous)]) != previous:
                mismatch = next(
                    (
                        i
                        for i, (a, b) in enumerate(zip(step.prompt_ids, previous, strict=False))
                        if a != b
                    ),
                    min(len(step.prompt_ids), len(previous)),
                )
                raise TokenExactnessError(
                    f"Step {index}: the prompt does not extend the previous prompt + completion "
                    f"(first difference at position {mismatch})."
                )
            previous = list(step.prompt_ids) + list(step.completion_ids)

    # -------------------------------------------------------------- (de)serialise

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_dict` inverts it."""
        data = asdict(self)
        data["initial_info"] = to_jsonable(self.initial_info)
        data["messages"] = to_jsonable(self.messages)
        data["metadata"] = to_jsonable(self.metadata)
        for step in data["steps"]:
            step["info"] = to_jsonable(step["info"])
        data["total_reward"] = self.total_reward
        data["is_correct"] = self.is_correct
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        """Rebuild a trajectory written by :meth:`to_dict` (extra summary keys ignored)."""
        fields = dict(data)
        fields.pop("total_reward", None)
        fields.pop("is_correct", None)
        steps = [Step(**s) for s in fields.pop("steps", [])]
        return cls(steps=steps, **fields)

    def to_json(self) -> str:
        """One line of JSON."""
        return json.dumps(self.to_dict(), ensure_ascii=False)
