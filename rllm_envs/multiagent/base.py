"""The base class of every multi-agent rllm-envs environment (a PettingZoo ``ParallelEnv``).

:class:`MultiAgentTextEnv` implements what the multi-agent families share, the way
:class:`rllm_envs.core.TextEnv` does for single-agent envs: text spaces, seeding, task
selection, action coercion, named and weighted reward components per agent, the agent
bookkeeping PettingZoo expects, and stable ``info`` keys. A family writes the rules: how a
task starts (:meth:`MultiAgentTextEnv._start`), who acts now
(:meth:`MultiAgentTextEnv._acting_agents`), what one joint action does
(:meth:`MultiAgentTextEnv._act`) and what each agent sees
(:meth:`MultiAgentTextEnv._observe`).

Turns. Every family is a sequence of *phases*; in each phase a subset of the live agents acts
(all debaters at once; the solvers, then the judge; one tic-tac-toe player at a time). In the
parallel API every live agent gets an observation each step and ``info[agent]["acting"]``
says whether its action will be read at the next step; actions of waiting agents may be left
out of the ``actions`` dict (or be ``None``) and are ignored. This is also how the AEC form
(PettingZoo's :func:`~pettingzoo.utils.conversions.parallel_to_aec`) works: a waiting
agent's turn is a no-op (step it with ``None``).

Information keys (stable; present for every agent on ``reset`` and ``step``; ``step``-only
ones marked):

=====================  ======================================================================
``task_id``            ``str``: id of the current task.
``task_index``         ``int | None``: index in the task source (``None`` for a passed record).
``turn``               ``int``: joint steps taken so far in this episode (0 after ``reset``).
``role``               ``str``: the agent's role (``"solver"``, ``"judge"``, ``"debater"``...).
``acting``             ``bool``: whether this agent's action is read at the next ``step``.
``is_correct``         ``bool``: whether this agent's scored output is correct (a correct
                       answer, a correct selection, a won game). Known only from the step
                       at which the whole episode ends; ``False`` while any agent plays.
``reward_components``  ``dict[str, float]`` (step): this agent's named, unweighted reward terms
                       (every name of ``default_reward_weights``, on every step).
``acted``              ``bool`` (step): whether this agent's action was read at this step.
``invalid_action``     ``bool`` (step): the agent's action could not be used.
``invalid_reason``     ``str | None`` (step): why, in words; ``None`` for a valid or no action.
``action_truncated``   ``bool`` (step): the action was longer than the action space allows and
                       only its first ``action_space(agent).max_length`` characters were read.
=====================  ======================================================================

Grading stays hidden while any agent still plays: no agent's ``info`` holds anything derived
from the reference answer or from the grading of any agent (``is_correct`` is ``False``, and
the family's :attr:`MultiAgentTextEnv.grading_info_keys` are left out) until the step at
which the whole episode ends. Otherwise a policy that reads an ``info`` learns which answer
is right before it acts (a judge told which solution scored, a debater told its answer is
wrong). The usual policy plays every seat and so reads every seat's view, a finished one's
too (in AEC form, ``observe`` of any agent): a family ends every agent at the same step
(its observations and rewards of the earlier steps hold no grade either), and whatever it
puts under ``grading_info_keys`` for an agent that finishes early is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from rllm_envs.core import (
    action_to_text,
    check_render_mode,
    clip_observation,
    resolve_reward_weights,
    select_task,
)
from rllm_envs.error import InvalidEnvConfig, did_you_mean
from rllm_envs.spaces import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
    action_space,
    observation_space,
)
from rllm_envs.tasks import Task, TaskSource

__all__ = [
    "MultiAgentTextEnv",
    "AgentOutcome",
    "ScriptedPolicy",
    "POLICY_KINDS",
    "MA_INFO_KEYS",
    "MA_STEP_INFO_KEYS",
    "RESET_OPTIONS",
]

#: Keys present in every agent's ``info`` on ``reset`` and ``step``.
MA_INFO_KEYS = ("task_id", "task_index", "custom_task", "turn", "role", "acting", "is_correct")
#: Keys present in every agent's ``info`` on ``step`` only.
MA_STEP_INFO_KEYS = (
    "reward_components",
    "acted",
    "invalid_action",
    "invalid_reason",
    "action_truncated",
)
#: The reset options every multi-agent env understands.
RESET_OPTIONS = ("index", "task")
#: The kinds of scripted policy every family provides.
POLICY_KINDS = ("oracle", "heuristic", "random")


@dataclass
class AgentOutcome:
    """What one joint action did to one agent (returned by :meth:`MultiAgentTextEnv._act`).

    Attributes:
        reward_components: Unweighted reward terms by name; missing names count as 0.
        correct: Whether the agent's scored output is now correct; ``None`` keeps the value.
        invalid_reason: Why the agent's action could not be used, or ``None``.
        info: Extra family-specific ``info`` entries for this agent (documented by the family).
    """

    reward_components: dict[str, float] = field(default_factory=dict)
    correct: bool | None = None
    invalid_reason: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


class MultiAgentTextEnv(ParallelEnv[str, str, str]):
    """Base class for multi-agent text environments: per-agent string observations and actions.

    Subclasses set ``possible_agents`` (via ``super().__init__``), ``default_reward_weights``
    and ``metadata["name"]``, and implement :meth:`_start`, :meth:`_acting_agents`,
    :meth:`_act`, :meth:`_observe`, :meth:`_role` and the scripted policies
    :meth:`oracle_action`, :meth:`heuristic_action` and :meth:`random_action`.

    ``reset(seed=, options=)`` picks a task: ``options={"index": i}`` selects task ``i`` of the
    source, ``options={"task": record}`` plays a given task record, and otherwise the task index
    is drawn from ``self.np_random`` (so the same seed gives the same episode). Other option keys
    are ignored (PettingZoo passes env-specific options), except near-misses of the known
    ones (``"indx"``), which raise.

    Model output never raises. Programmer errors (bad arguments, stepping before ``reset``,
    actions for agents that do not exist) raise early with the fix in the message.

    Args:
        tasks: Where tasks come from.
        possible_agents: Every agent name, in a fixed order.
        reward_weights: Overrides of ``default_reward_weights`` by component name.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the text) or ``"human"``
            (``render()`` prints it).
        max_observation_length: Observations are cut to this many characters.
        max_action_length: Actions beyond this many characters are cut (and flagged).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": "multiagent_text"}
    #: Weight of each reward component; an agent's reward is its weighted sum. 0 = log only.
    default_reward_weights: ClassVar[Mapping[str, float]] = {}
    #: ``info`` keys that carry grading (scores, correctness): every agent gets them only at
    #: the step at which the whole episode ends; before that they are dropped.
    grading_info_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        tasks: TaskSource,
        possible_agents: Sequence[str],
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
        max_observation_length: int = OBSERVATION_MAX_LENGTH,
        max_action_length: int = ACTION_MAX_LENGTH,
    ) -> None:
        check_render_mode(self.metadata, render_mode)
        self.tasks = tasks
        self.reward_weights = resolve_reward_weights(self, reward_weights)
        self.render_mode = render_mode
        self.possible_agents: list[str] = list(possible_agents)
        self.agents: list[str] = []
        # PettingZoo requires the very same space object per agent on every call.
        self.observation_spaces: dict[str, UnicodeText] = {
            a: observation_space(max_observation_length) for a in self.possible_agents
        }
        self.action_spaces: dict[str, UnicodeText] = {
            a: action_space(max_action_length) for a in self.possible_agents
        }
        self.np_random: np.random.Generator | None = None
        self.np_random_seed: int | None = None
        self.task: Task | None = None
        self.task_index: int | None = None
        self.turn = 0
        self.correct: dict[str, bool] = {}

    # ----------------------------------------------------------------- hooks for families

    def _start(self, task: Task) -> None:
        """Begin an episode on ``task`` (set the family's state)."""
        raise NotImplementedError

    def _acting_agents(self) -> list[str]:
        """The live agents whose actions the next ``step`` reads (non-empty while live)."""
        raise NotImplementedError

    def _act(self, actions: dict[str, str]) -> tuple[dict[str, AgentOutcome], set[str]]:
        """Apply one joint action of the acting agents (all present, already ``str``).

        Returns:
            An :class:`AgentOutcome` per agent that should hear about it (others get an empty
            one), and the agents whose episode ends at this step (they are terminated and
            leave ``agents``; return every live agent to end the episode).
        """
        raise NotImplementedError

    def _observe(self, agent: str) -> str:
        """What ``agent`` sees now (before clipping)."""
        raise NotImplementedError

    def _role(self, agent: str) -> str:
        """The role name of ``agent``."""
        raise NotImplementedError

    def _check_task(self, task: Task) -> None:
        """Validate a task record passed with ``options={"task": ...}``; raise if unusable."""

    def _render_text(self) -> str:
        """The text shown by :meth:`render` (a global view of the episode)."""
        return "\n\n".join(f"[{a}]\n{self._observe(a)}" for a in self.agents)

    # ---------------------------------------------------------------- scripted policies

    def oracle_action(self, agent: str) -> str:
        """The action an expert takes for ``agent`` now (it may use the reference answer)."""
        raise NotImplementedError(f"{type(self).__name__} has no oracle.")

    def heuristic_action(self, agent: str, rng: np.random.Generator) -> str:
        """A reasonable scripted action for ``agent`` that does not peek at hidden answers."""
        raise NotImplementedError(f"{type(self).__name__} has no heuristic policy.")

    def random_action(self, agent: str, rng: np.random.Generator) -> str:
        """A random well-formed action for ``agent`` (random over moves, not over strings)."""
        raise NotImplementedError(f"{type(self).__name__} has no random policy.")

    def scripted_action(self, kind: str, agent: str, rng: np.random.Generator) -> str:
        """The action of the scripted policy ``kind`` (one of :data:`POLICY_KINDS`).

        A waiting agent's action is ignored by :meth:`step`, so it gets ``""``.
        """
        if kind not in POLICY_KINDS:
            raise InvalidEnvConfig(
                f"Expects a policy kind in {POLICY_KINDS}, actual: {kind!r}."
                + did_you_mean(kind, POLICY_KINDS)
            )
        if agent not in self.agents or agent not in self._acting_agents():
            return ""
        if kind == "oracle":
            return self.oracle_action(agent)
        if kind == "heuristic":
            return self.heuristic_action(agent, rng)
        return self.random_action(agent, rng)

    # -------------------------------------------------------------------- PettingZoo API

    def observation_space(self, agent: str) -> UnicodeText:
        """The (shared, cached) text observation space of ``agent``."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> UnicodeText:
        """The (shared, cached) text action space of ``agent``."""
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Start a new episode; see the class docstring for ``options``.

        Every argument is checked before anything changes (the random generator included): a
        reset that raises on one leaves the previous episode as it was. If the family's start
        fails after that, the episode is ended (``step`` raises ``ResetNeeded``).
        """
        options = dict(options or {})
        _check_option_names(options)
        drawn = "task" not in options and options.get("index") is None
        chosen = None if drawn else self._select_task(options, None)
        if seed is not None or self.np_random is None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        task, index = self._select_task(options, self.np_random) if chosen is None else chosen
        self.task, self.task_index = task, index
        self.turn = 0
        self.agents = list(self.possible_agents)
        self.correct = dict.fromkeys(self.possible_agents, False)
        try:
            self._start(task)
        except BaseException:
            self.agents = []  # ended, never half-started
            raise
        acting = set(self._acting_agents())
        observations = {a: self._clip(a, self._observe(a)) for a in self.agents}
        infos = {a: self._info(a, acting) for a in self.agents}
        return observations, infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, str],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Apply the acting agents' actions. Never raises on the actions' content.

        Args:
            actions: ``{agent: action}``. Actions of waiting agents (``info["acting"]`` false)
                and of agents that already finished are ignored and may be omitted; an acting
                agent's missing or ``None`` action counts as an empty reply.

        Returns:
            Observations, rewards, terminations, truncations and infos of every agent that was
            live before this step.
        """
        if self.task is None or not self.agents:
            raise gym.error.ResetNeeded(
                "Cannot call step() before reset() or after every agent finished; call reset()."
            )
        if not isinstance(actions, Mapping):
            raise InvalidEnvConfig(
                f"Expects `actions` to be a dict {{agent: action}}, actual type: "
                f"{type(actions).__name__}."
            )
        unknown = [a for a in actions if a not in self.possible_agents]
        if unknown:
            raise InvalidEnvConfig(
                f"Unknown agent(s) {unknown} in `actions`; agents: {self.possible_agents}."
                + did_you_mean(str(unknown[0]), self.possible_agents)
            )
        acting = self._acting_agents()
        texts: dict[str, str] = {}
        cut: dict[str, bool] = {}
        for agent in acting:
            raw = actions.get(agent)
            text = raw if isinstance(raw, str) else action_to_text(raw)
            limit = self.action_spaces[agent].max_length
            cut[agent] = len(text) > limit
            texts[agent] = text[:limit]
        self.turn += 1
        outcomes, finished = self._act(texts)
        live = list(self.agents)
        self.agents = [a for a in live if a not in finished]
        next_acting = set(self._acting_agents()) if self.agents else set()
        observations: dict[str, str] = {}
        rewards: dict[str, float] = {}
        infos: dict[str, dict[str, Any]] = {}
        for agent in live:
            outcome = outcomes.get(agent) or AgentOutcome()
            if outcome.correct is not None:
                self.correct[agent] = bool(outcome.correct)
            components = dict.fromkeys(self.reward_weights, 0.0)
            for name, value in outcome.reward_components.items():
                components[name] = float(value)
            rewards[agent] = float(
                sum(self.reward_weights[name] * value for name, value in components.items())
            )
            observations[agent] = self._clip(agent, self._observe(agent))
            extra = outcome.info
            if self.agents:  # someone still plays: it may read any agent's view
                extra = {k: v for k, v in extra.items() if k not in self.grading_info_keys}
            infos[agent] = {
                **self._info(agent, next_acting),
                "reward_components": components,
                "acted": agent in texts,
                "invalid_action": outcome.invalid_reason is not None,
                "invalid_reason": outcome.invalid_reason,
                "action_truncated": cut.get(agent, False),
                **extra,
            }
        terminations = {a: a in finished for a in live}
        truncations = dict.fromkeys(live, False)
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """Return (``"ansi"``) or print (``"human"``) a global text view of the episode."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'.")
            return None
        text = self._render_text() if self.task is not None else ""
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release (no windows, processes or sockets)."""

    # ---------------------------------------------------------------------- internals

    def _select_task(
        self, options: dict[str, Any], rng: np.random.Generator | None
    ) -> tuple[Task, int | None]:
        _check_option_names(options)
        return select_task(self.tasks, options, rng, self._check_task)

    def _info(self, agent: str, acting: set[str]) -> dict[str, Any]:
        assert self.task is not None
        return {
            "task_id": self.task["id"],
            "task_index": self.task_index,
            "custom_task": self.task_index is None,
            "turn": self.turn,
            "role": self._role(agent),
            "acting": agent in acting,
            # Hidden while any agent still plays (see the module docstring).
            "is_correct": not self.agents and self.correct.get(agent, False),
        }

    def _clip(self, agent: str, observation: str) -> str:
        return clip_observation(observation, self.observation_spaces[agent].max_length)


#: The one unknown reset option tolerated (and ignored): PettingZoo's own API tests check that
#: ``reset`` takes options with ``options={"options": 1}``. The OpenEnv server refuses it too.
_PETTINGZOO_PROBE = "options"


def _check_option_names(options: Mapping[str, Any], *, probe: bool = True) -> None:
    """Refuse every reset option but :data:`RESET_OPTIONS`, as the single-agent envs do.

    Only names close to a known one were refused: ``{"zzz": 1}`` started a drawn episode as
    if the client had asked for nothing (issue #31, T1). ``probe``: let PettingZoo's API-test
    probe pass (:data:`_PETTINGZOO_PROBE`).
    """
    for key in options:
        if key not in RESET_OPTIONS and not (probe and key == _PETTINGZOO_PROBE):
            raise InvalidEnvConfig(
                f"Unknown reset option `{key}`.{did_you_mean(str(key), RESET_OPTIONS)} "
                f"Known options: {list(RESET_OPTIONS)}."
            )


class ScriptedPolicy:
    """A scripted player for any multi-agent env: ``policy(env, agent) -> action``.

    ``kind`` is ``"oracle"`` (an expert; it may read the reference answer or search the game
    tree), ``"heuristic"`` (a sensible baseline that does not peek) or ``"random"`` (random
    well-formed moves). It works on the parallel env, its AEC form, or any wrapper of them.
    Picklable, with its own seeded generator.

    Example:
        >>> import rllm_envs
        >>> env = rllm_envs.make_parallel("rllm/TicTacToe-v0")
        >>> observations, infos = env.reset(seed=0)
        >>> oracle = ScriptedPolicy("oracle")
        >>> while env.agents:
        ...     actions = {a: oracle(env, a) for a in env.agents if infos[a]["acting"]}
        ...     observations, rewards, terminations, truncations, infos = env.step(actions)
        >>> sorted(rewards)
        ['player_0', 'player_1']

    Args:
        kind: One of :data:`POLICY_KINDS`.
        seed: Seed of the policy's own generator (heuristic and random policies).
    """

    def __init__(self, kind: str, seed: int | None = None) -> None:
        if kind not in POLICY_KINDS:
            raise InvalidEnvConfig(
                f"Expects `kind` in {POLICY_KINDS}, actual: {kind!r}."
                + did_you_mean(kind, POLICY_KINDS)
            )
        self.kind = kind
        self.rng = np.random.default_rng(seed)

    def __call__(self, env: Any, agent: str) -> str:
        """The action for ``agent`` in ``env``'s current state."""
        base = getattr(env, "unwrapped", env)
        if not isinstance(base, MultiAgentTextEnv):
            raise InvalidEnvConfig(
                f"ScriptedPolicy needs an rllm-envs multi-agent env, actual: {type(base).__name__}."
            )
        return base.scripted_action(self.kind, agent, self.rng)

    def __repr__(self) -> str:
        return f"ScriptedPolicy({self.kind!r})"
