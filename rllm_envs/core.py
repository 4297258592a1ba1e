"""The base class of every single-agent rllm-envs environment.

:class:`TextEnv` implements what all task families share, so a family only writes the task
rules: how a task starts (:meth:`TextEnv._start`), what one model action does
(:meth:`TextEnv._act`) and what an expert would do (:meth:`TextEnv.oracle_action`).

Information keys (stable; present on every ``step``, and all but the step-only ones on
``reset``):

=====================  ======================================================================
``task_id``            ``str``: id of the current task; ``custom-<digest>`` for a passed record
                       (:func:`custom_task`), a namespace no task source uses.
``task_index``         ``int | None``: index in the task source (``None`` for a passed record).
``custom_task``        ``bool``: the task is a record passed with ``options={"task": ...}``,
                       not one of the source's tasks: leaderboards and pass@k of the source
                       leave such episodes out.
``turn``               ``int``: actions taken so far in this episode (0 after ``reset``).
``max_turns``          ``int``: the turn limit; reaching it truncates the episode.
``is_correct``         ``bool``: whether the task is solved (so far).
``reward_components``  ``dict[str, float]`` (step): named, unweighted reward terms; the reward
                       is their weighted sum with the env's ``reward_weights``.
``invalid_action``     ``bool`` (step): the action could not be used (unparsable, illegal).
``invalid_reason``     ``str | None`` (step): why, in words; ``None`` for a valid action.
``action_truncated``   ``bool`` (step): the action was longer than the action space allows
                       and only its first ``action_space.max_length`` characters were read.
=====================  ======================================================================

A ``reset`` checks all its arguments before it changes anything: one that raises on a bad
argument (an unknown option, an index out of range, an unusable or oversized task record, a
bad seed) leaves the previous episode exactly as it was, still playable. If the family's own
start fails after that (``_start`` raised), the episode is ended (``step`` raises
``ResetNeeded``): never half-switched.

Only on a step whose action copies a worked example an agent shows
(:mod:`rllm_envs.demonstrations`): ``copied_demonstration`` (``str``, its name). Such a step
earns 0 in every reward component and is an invalid action.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, SupportsFloat

import gymnasium as gym
import numpy as np

from rllm_envs.demonstrations import DEMONSTRATIONS, Demonstration, copied_demonstration
from rllm_envs.error import InvalidEnvConfig, did_you_mean
from rllm_envs.spaces import UnicodeText, action_space, observation_space
from rllm_envs.tasks import _HIDDEN_FIELDS as _TASK_HIDDEN_FIELDS
from rllm_envs.tasks import Task, TaskSource
from rllm_envs.utils import to_jsonable

__all__ = [
    "TextEnv",
    "Transition",
    "INFO_KEYS",
    "STEP_INFO_KEYS",
    "CUSTOM_ID_PREFIX",
    "MAX_TASK_CHARS",
    "HIDDEN_TASK_FIELDS",
    "custom_task",
    "spec_demonstrations",
]

#: Keys present in the ``info`` of ``reset`` and ``step``.
INFO_KEYS = ("task_id", "task_index", "custom_task", "turn", "max_turns", "is_correct")
#: Keys present only in the ``info`` of ``step``.
STEP_INFO_KEYS = ("reward_components", "invalid_action", "invalid_reason", "action_truncated")

#: Prefix of the id of every task record passed with ``options={"task": ...}``: the rest is a
#: digest of the record's content, so a client-written task never carries a source's task id.
CUSTOM_ID_PREFIX = "custom-"
#: Largest task record a ``reset`` accepts, in characters of its canonical JSON: linear costs
#: (prompt building, grading against the problem text) stay bounded. Families whose cost grows
#: faster with some field cap that field in their ``_check_task`` (FrozenLake: the map size).
MAX_TASK_CHARS = 4 * 1024 * 1024

#: Fields of a task record a policy never sees (answers, solutions, hidden tests, grading
#: data): a custom task's id is not a function of them (:func:`custom_task`).
HIDDEN_TASK_FIELDS = _TASK_HIDDEN_FIELDS | {
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "client_id",
    "solution_cpp",
}

_TRUNCATION_MARKER = "\n[... observation truncated ...]"


@dataclass
class Transition:
    """What a task family's :meth:`TextEnv._act` returns for one action.

    Attributes:
        observation: The next observation (feedback, a new board, a tool result).
        reward_components: Unweighted reward terms by name; every name the env declares in
            ``default_reward_weights`` should be present on every step.
        terminated: The episode reached a terminal state (solved, failed, answered).
        correct: Whether the task is now solved; ``None`` keeps the previous value.
        invalid_reason: Why the action could not be used, or ``None`` if it was valid.
        info: Extra family-specific ``info`` entries (documented by the family).
    """

    observation: str
    reward_components: dict[str, float]
    terminated: bool = False
    correct: bool | None = None
    invalid_reason: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


class TextEnv(gym.Env[str, str]):
    """Base class for text environments: string observations in, string actions out.

    Subclasses implement :meth:`_start`, :meth:`_act` and :meth:`oracle_action`, set
    ``default_reward_weights`` and call ``super().__init__`` with their task source.

    ``reset(seed=, options=)`` picks a task: ``options={"index": i}`` selects task ``i`` of the
    source, ``options={"task": record}`` plays a given task record, and otherwise the task
    index is drawn from ``self.np_random`` (so the same seed gives the same episode).
    ``options={"max_turns": k}`` ends this episode after at most ``k`` turns (a rollout loop's
    own limit); a Gymnasium ``TimeLimit`` around the env caps it the same way.

    Model output never raises: any string (or any object, converted with ``str``) is a normal
    step. Programmer errors -- bad arguments, stepping before ``reset`` -- raise early.

    Args:
        tasks: Where tasks come from.
        max_turns: Number of actions after which the episode is truncated.
        reward_weights: Overrides of ``default_reward_weights`` by component name.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the current text) or
            ``"human"`` (``render()`` prints it).
        max_observation_length: Observations are cut to this many characters.
        max_action_length: Actions beyond this many characters are cut (and flagged).
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}
    #: Weight of each reward component; the reward is the weighted sum. 0 means log only.
    default_reward_weights: ClassVar[Mapping[str, float]] = {}
    #: Worked examples agents show: an action copying one earns nothing (costs stay). A
    #: registered id also knows the worked examples of its agent-facing spec.
    demonstrations: ClassVar[tuple[Demonstration, ...]] = DEMONSTRATIONS
    #: Largest passed task record, in characters of canonical JSON (:data:`MAX_TASK_CHARS`).
    max_task_chars: ClassVar[int] = MAX_TASK_CHARS

    observation_space: UnicodeText
    action_space: UnicodeText

    def __init__(
        self,
        *,
        tasks: TaskSource,
        max_turns: int,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
        max_observation_length: int | None = None,
        max_action_length: int | None = None,
    ) -> None:
        if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
            raise InvalidEnvConfig(f"Expects `max_turns` to be an int >= 1, actual: {max_turns!r}.")
        check_render_mode(self.metadata, render_mode)
        self.tasks = tasks
        self.max_turns = max_turns
        #: The turn limit as configured; ``max_turns`` is the current episode's (see ``reset``).
        self._configured_turns = self._episode_turns = max_turns
        self.reward_weights = resolve_reward_weights(self, reward_weights)
        self.render_mode = render_mode
        self.observation_space = (
            observation_space()
            if max_observation_length is None
            else observation_space(max_observation_length)
        )
        self.action_space = (
            action_space() if max_action_length is None else action_space(max_action_length)
        )
        self.task: Task | None = None
        self.task_index: int | None = None
        self.turn = 0
        self.is_correct = False
        self.done = True
        self.last_observation = ""

    # ----------------------------------------------------------------- hooks for families

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        """Begin an episode on ``task``; return the first observation and extra info."""
        raise NotImplementedError

    def _act(self, action: str) -> Transition:
        """Apply one model action (already a ``str`` within the length limit)."""
        raise NotImplementedError

    def _check_task(self, task: Task) -> None:
        """Validate a task record passed with ``options={"task": ...}``; raise if unusable."""

    def _closing_components(self) -> dict[str, float]:
        """Reward components of an episode ended where it stands (:meth:`settle`): none here."""
        return {}

    def oracle_action(self) -> str:
        """The action an expert takes in the current state (reference answer, best move).

        This is the one way every env exposes its oracle: tests and baselines call
        ``env.unwrapped.oracle_action()`` (or ``vector_env.call("oracle_action")``).
        """
        raise NotImplementedError(f"{type(self).__name__} has no oracle.")

    def random_action(self) -> str:
        """A uniformly random action: the baseline every leaderboard reports.

        Defaults to a random string from ``action_space`` (seed it with
        ``action_space.seed``); families with a small set of well-formed actions override it to
        pick one of those uniformly. Never touches ``np_random``, so episodes stay seeded.
        """
        return self.action_space.sample()

    # ------------------------------------------------------------------------- gym API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a new episode; see the class docstring for ``options``.

        Every argument is checked before anything changes: a reset that raises on one leaves
        the previous episode as it was. If the family's start fails after that, the episode
        is ended (``step`` raises ``ResetNeeded``).
        """
        options = dict(options or {})
        unknown = set(options) - {"index", "task", "max_turns"}
        if unknown:
            raise InvalidEnvConfig(
                f"Unknown reset option(s) {sorted(unknown)}; expects 'index', 'task' or "
                "'max_turns'."
            )
        cap = options.pop("max_turns", None)
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            raise InvalidEnvConfig(
                f"Expects reset option `max_turns` to be an int >= 1, actual: {cap!r}."
            )
        drawn = "task" not in options and options.get("index") is None
        chosen = None if drawn else self._select(options, None)
        super().reset(seed=seed)  # a bad seed raises here, before any state changed
        task, index = self._select(options, self.np_random) if chosen is None else chosen
        self.task, self.task_index = task, index
        if self.max_turns != self._episode_turns:
            self._configured_turns = self.max_turns  # set by the user since the last reset
        # The episode ends where whoever drives it stops it: its own limit, a Gymnasium
        # TimeLimit around it, or a rollout loop's (the `max_turns` option), so its last
        # turn settles the episode (FrozenLake's progress refund: att36i, att37b).
        caps = [c for c in (_outer_time_limit(), cap) if c is not None]
        self.max_turns = min([self._configured_turns, *caps])
        self._episode_turns = self.max_turns
        self.turn, self.is_correct, self.done = 0, False, False
        try:
            observation, extra = self._start(task)
        except BaseException:
            self.done = True  # ended, never half-started: step() raises ResetNeeded
            raise
        self.last_observation = self._clip(observation)
        return self.last_observation, {**self._info(), **extra}

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Apply a model action. Never raises on the action's content."""
        if self.task is None or self.done:
            raise gym.error.ResetNeeded(
                "Cannot call step() before reset() or after the episode ended; call reset()."
            )
        text = action if isinstance(action, str) else action_to_text(action)
        action_truncated = len(text) > self.action_space.max_length
        if action_truncated:
            text = text[: self.action_space.max_length]
        self.turn += 1
        result = self._without_copied_demonstration(text, self._act(text))
        if result.correct is not None:
            self.is_correct = result.correct
        components = {name: float(value) for name, value in result.reward_components.items()}
        reward = sum(self.reward_weights.get(name, 0.0) * v for name, v in components.items())
        terminated = bool(result.terminated)
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        self.last_observation = self._clip(result.observation)
        info = {
            **self._info(),
            "reward_components": components,
            "invalid_action": result.invalid_reason is not None,
            "invalid_reason": result.invalid_reason,
            "action_truncated": action_truncated,
            **result.info,
        }
        if self.render_mode == "human":
            self.render()
        return self.last_observation, float(reward), terminated, truncated, info

    def settle(self) -> tuple[float, dict[str, float]]:
        """End the running episode where it stands, as its turn limit would; its closing reward.

        For a driver that stops an episode without another step, such as a rollout loop whose
        context is full: an env whose last turn settles the episode (FrozenLake refunds its
        progress shaping when an episode ends without the goal) pays that end here, so a
        policy cannot keep shaping by filling its context (s37 att37g F2). The driver adds
        the reward to the episode's last step. ``step`` then needs a ``reset``.

        Returns:
            The weighted closing reward and its components (``0.0, {}`` when no episode runs).
        """
        closing = self.closing_reward()
        self.done = True
        return closing

    def closing_reward(self) -> tuple[float, dict[str, float]]:
        """What :meth:`settle` would pay now, without ending the episode."""
        if self.task is None or self.done:
            return 0.0, {}
        components = {name: float(v) for name, v in self._closing_components().items()}
        reward = sum(self.reward_weights.get(name, 0.0) * v for name, v in components.items())
        return float(reward), components

    def _without_copied_demonstration(self, action: str, result: Transition) -> Transition:
        """``result``, or, for an action that copies a demonstration, the same step paying 0.

        The worked examples agents show are in every prompt, so a policy can learn to copy
        them; a copy earns nothing in any component (format included) and is flagged. What
        the step costs it still costs (a component whose weighted value is negative: a fall,
        an unreadable reply, a step away from a goal): the step happened (att35n: a move with
        a demonstration's answer in the reply was free, so stepping back and forth with it
        earned FrozenLake's progress twice, and a fall cost nothing).
        """
        name = copied_demonstration(
            action, correct=bool(result.correct), demonstrations=self._known_demonstrations()
        )
        if name is None:
            return result
        weights = self.reward_weights
        return Transition(
            observation=result.observation
            + "\n[This reply copies the worked example shown before the task; it earns nothing.]",
            reward_components={
                key: value if weights.get(key, 0.0) * value < 0.0 else 0.0
                for key, value in result.reward_components.items()
            },
            terminated=result.terminated,
            correct=False if result.correct is not None else None,
            invalid_reason=f"the reply copies the worked example ({name}), not an answer",
            info={**result.info, "copied_demonstration": name},
        )

    def _known_demonstrations(self) -> tuple[Demonstration, ...]:
        """``demonstrations`` and those of the registered id's spec (looked up once)."""
        known = self.__dict__.get("_demonstrations_known")
        if known is None:
            spec_id = getattr(getattr(self, "spec", None), "id", None)
            known = (*self.demonstrations, *spec_demonstrations(spec_id, self.demonstrations))
            self.__dict__["_demonstrations_known"] = known
        return known

    def render(self) -> str | None:
        """Return (``"ansi"``) or print (``"human"``) the current state as text."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'.")
            return None
        text = self._render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _render_text(self) -> str:
        """The text shown by :meth:`render`; the last observation by default."""
        return self.last_observation

    # ---------------------------------------------------------------------- internals

    def _select(
        self, options: Mapping[str, Any], rng: np.random.Generator | None
    ) -> tuple[Task, int | None]:
        return select_task(
            self.tasks, options, rng, self._check_task, max_task_chars=self.max_task_chars
        )

    def _info(self) -> dict[str, Any]:
        assert self.task is not None
        return {
            "task_id": self.task["id"],
            "task_index": self.task_index,
            "custom_task": self.task_index is None,
            "turn": self.turn,
            "max_turns": self.max_turns,
            "is_correct": self.is_correct,
        }

    def _clip(self, observation: str) -> str:
        return clip_observation(observation, self.observation_space.max_length)


# --------------------------------------------------- shared with the multi-agent base class


def _outer_time_limit() -> int | None:
    """The step limit of a Gymnasium ``TimeLimit`` whose ``reset`` is resetting this env.

    ``gym.make(id, max_episode_steps=k)`` (or ``TimeLimit(env, k)``) truncates an episode
    from outside, and Gymnasium gives the env no way to learn ``k``; an env whose last turn
    settles the episode (FrozenLake refunds its progress shaping on an episode that ends
    without the goal) then never saw its last turn (s37 att37b: +0.55 progress a map, no goal
    reached). The wrapper is found in the frames of the call to ``reset`` (a few, once an
    episode), and the episode's turn limit is capped at it.
    """
    import sys

    frame: Any = sys._getframe(2)
    for _ in range(64):
        if frame is None:
            return None
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "reset" else None
        if isinstance(owner, gym.wrappers.TimeLimit):
            steps = getattr(owner, "_max_episode_steps", None)
            return steps if isinstance(steps, int) and steps >= 1 else None
        frame = frame.f_back
    return None


def select_task(
    tasks: TaskSource,
    options: Mapping[str, Any],
    rng: np.random.Generator | None,
    check_task: Callable[[Task], None],
    *,
    max_task_chars: int = MAX_TASK_CHARS,
) -> tuple[Task, int | None]:
    """The task of a ``reset``: a passed record, ``options["index"]`` or a draw.

    ``options["task"]`` goes through :func:`custom_task`; only a draw uses ``rng``, so the
    other two can be checked before the env is seeded (``rng=None``).

    Returns:
        The task and its index in ``tasks`` (``None`` for a passed record).
    """
    if "task" in options and "index" in options:
        raise InvalidEnvConfig("Pass either options['index'] or options['task'], not both.")
    if "task" in options:
        return custom_task(options["task"], check_task, max_chars=max_task_chars), None
    index = options.get("index")
    if index is None:
        if rng is None:
            raise ValueError("select_task needs an rng to draw a task index.")
        # A one-task source draws nothing, so wrapped envs keep their RNG stream.
        n = len(tasks)
        index = 0 if n == 1 else int(rng.integers(n))
    return tasks[index], index


def custom_task(
    record: Any, check_task: Callable[[Task], None], *, max_chars: int = MAX_TASK_CHARS
) -> Task:
    """A task record passed with ``options={"task": record}``, checked and given its own id.

    A passed record never passes for one of the source's tasks: its ``id`` is always
    ``custom-<digest>`` (:data:`CUSTOM_ID_PREFIX`, then 16 hex digits of the SHA-256 of the
    canonical JSON of the fields a policy sees), so the same question always gets the same
    id. The fields a policy never sees (answers, solutions, hidden tests, grading data:
    :data:`HIDDEN_TASK_FIELDS`) are left out of the digest: an id that depended on the answer
    would let anything that sees ``info`` test candidate answers against it. An ``id`` the
    client gave is kept as ``client_id``. Replaying the result (``env.unwrapped.task``)
    gives the same task and id.

    Raises:
        InvalidEnvConfig: For a record that is not a mapping, is larger than ``max_chars``
            characters of canonical JSON, or that ``check_task`` refuses.
    """
    if not isinstance(record, Mapping):
        raise InvalidEnvConfig(
            "Expects options['task'] to be a task record (dict), actual type: "
            f"{type(record).__name__}."
        )
    task = dict(record)
    given = task.pop("id", None)
    client_id = task.pop("client_id", None)
    size = len(_canonical_json(task))
    if size > max_chars:
        raise InvalidEnvConfig(
            f"The task record is too large: {size:,} characters of JSON, over the limit of "
            f"{max_chars:,} (`max_task_chars` of the env class)."
        )
    check_task(task)
    seen = _canonical_json({k: v for k, v in task.items() if k not in HIDDEN_TASK_FIELDS})
    task_id = CUSTOM_ID_PREFIX + hashlib.sha256(seen.encode("utf-8", "replace")).hexdigest()[:16]
    if given is not None and str(given) != task_id:
        client_id = given
    if client_id is not None:
        task["client_id"] = str(client_id)[:256]
    task["id"] = task_id
    return task


def _canonical_json(task: Mapping[str, Any]) -> str:
    """``task`` as JSON with sorted keys and no spaces (values that are not JSON as text)."""
    try:
        return json.dumps(
            to_jsonable(task), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
    except (TypeError, ValueError, RecursionError):
        return repr(sorted(task.items(), key=lambda kv: str(kv[0])))


def spec_demonstrations(
    env_id: str | None, known: tuple[Demonstration, ...] = ()
) -> tuple[Demonstration, ...]:
    """The worked examples the agent-facing spec of a registered ``env_id`` shows, minus ``known``.

    An unregistered id (or ``None``) has none.
    """
    if not env_id:
        return ()
    import rllm_envs

    try:
        spec = rllm_envs.agent_spec(env_id)
    except (rllm_envs.UnknownEnvironment, InvalidEnvConfig):
        return ()

    def ident(messages: Any) -> tuple[tuple[str, str], ...]:
        return tuple((str(m["role"]), str(m["content"])) for m in messages)

    seen = {ident(d.messages) for d in known}
    found = []
    for key, messages in [("", spec.demonstration), *spec.demonstrations.items()]:
        if messages and ident(messages) not in seen:
            seen.add(ident(messages))
            found.append(Demonstration(f"{env_id}:{key or 'default'}", tuple(messages)))
    return tuple(found)


def check_render_mode(metadata: Mapping[str, Any], render_mode: str | None) -> None:
    """Raise :class:`InvalidEnvConfig` unless ``render_mode`` is None or declared in metadata."""
    if render_mode is not None and render_mode not in metadata["render_modes"]:
        raise InvalidEnvConfig(
            f"Expects `render_mode` to be one of {metadata['render_modes']} or None, "
            f"actual: {render_mode!r}."
        )


def resolve_reward_weights(env: Any, overrides: Mapping[str, float] | None) -> dict[str, float]:
    """``env.default_reward_weights`` with ``overrides`` applied; unknown names raise."""
    weights = dict(env.default_reward_weights)
    for name, value in (overrides or {}).items():
        if name not in weights:
            raise InvalidEnvConfig(
                f"Unknown reward component `{name}` for {type(env).__name__}; known: "
                f"{sorted(weights)}.{did_you_mean(name, weights)}"
            )
        try:
            weight = float(value)
        except (TypeError, ValueError):
            weight = math.nan
        if not math.isfinite(weight):
            # A NaN weight passes every comparison an env checks its weights with (TicTacToe's
            # illegal_move <= loss) and makes every reward NaN (s19 att25i).
            raise InvalidEnvConfig(
                f"Expects reward weight `{name}` to be a finite number, actual: {value!r}."
            )
        if name in PENALTY_COMPONENTS and weight > 0:
            # A sign slip (`+0.05` for `-0.05`) would pay garbage: 40 bad tool calls earned
            # 6.0 an episode on ToolUse (s37 att37b).
            raise InvalidEnvConfig(
                f"Reward component `{name}` counts what the policy did wrong: its weight must "
                f"be <= 0 (a penalty, e.g. -0.05), actual: {value!r}."
            )
        weights[name] = weight
    return weights


#: Components that count a policy's mistakes (invalid replies, tool calls, moves): a weight
#: over 0 would pay for them, so every env refuses one.
PENALTY_COMPONENTS = frozenset({"invalid_action", "invalid_call", "illegal_move"})


def clip_observation(observation: str, limit: int) -> str:
    """Cut an observation to ``limit`` characters, ending with a visible marker."""
    if len(observation) <= limit:
        return observation
    return observation[: limit - len(_TRUNCATION_MARKER)] + _TRUNCATION_MARKER


def action_to_text(action: Any) -> str:
    """Best-effort conversion of a non-string action to text (it is still model output)."""
    if action is None:
        return ""
    if isinstance(action, (bytes, bytearray)):
        return bytes(action).decode("utf-8", errors="replace")
    try:
        return str(action)
    except Exception:  # a hostile __str__ must not crash the env
        return ""
