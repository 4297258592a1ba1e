"""rllm-envs: Gymnasium and PettingZoo text environments for RL of language models.

``import rllm_envs`` registers every environment under the ``rllm/`` namespace::

    import gymnasium as gym
    import rllm_envs

    env = gym.make("rllm/FrozenLake-v0")
    observation, info = env.reset(seed=0)

The registry below is the single table of environments; the test-suite's conformance matrix
is built from it, so registering an env enrols it in every contract test.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import pettingzoo

from rllm_envs.error import (
    DependencyNotInstalled,
    InvalidDataset,
    InvalidEnvConfig,
    RllmEnvsError,
    UnknownEnvironment,
    did_you_mean,
)
from rllm_envs.spec import AgentSpec

if TYPE_CHECKING:
    from rllm_envs.multiagent.base import MultiAgentTextEnv

__version__ = "0.1.0"

__all__ = [
    "AgentSpec",
    "EnvEntry",
    "ENVS",
    "env_entry",
    "agent_spec",
    "resolve",
    "list_envs",
    "make",
    "make_vec",
    "MULTIAGENT_ENVS",
    "list_multiagent_envs",
    "make_parallel",
    "make_aec",
    "DependencyNotInstalled",
    "InvalidDataset",
    "InvalidEnvConfig",
    "RllmEnvsError",
    "UnknownEnvironment",
]


@dataclass(frozen=True)
class EnvEntry:
    """One row of the registry.

    The row is the env's identity: besides how to build it, it names the family, the family's
    agent-facing spec (:class:`rllm_envs.spec.AgentSpec`, read by the agent layer), the
    scripted opponents of a competitive multi-agent env and the family's pure scorer. Paths
    are ``"module:name"`` strings resolved only when used (:func:`resolve`), so
    ``import rllm_envs`` imports no spec, scorer or env module.

    Attributes:
        id: Namespaced, versioned id, e.g. ``"rllm/FrozenLake-v0"``.
        entry_point: Lazy ``"module:Class"`` path.
        description: One line for ``rllm-envs list`` and the README.
        family: The task family (``"Code"`` for every code variant); rows of one family
            share their scorer.
        spec: ``"module:NAME"`` of the :class:`rllm_envs.spec.AgentSpec` of this variant
            (prompt, demonstration, token limit, stops), in the family's folder.
        scorer: ``"module:function"`` of the family's ``score(answer, task) -> float`` in
            [0, 1], or ``None`` for a family scored only by playing it (FrozenLake, games).
        opponents: Multi-agent only: ``{agent name: scripted policy kind}`` for the agents a
            scripted player plays (``"heuristic"``, ``"oracle"``, ``"random"``); the other
            agents are the evaluated policy's. Empty: the policy plays every agent.
        kwargs: Default constructor kwargs (variants are kwargs, not classes).
        nondeterministic: True for envs touching sandboxes, networks or clocks.
        extra: The pip extra the env needs, if any (tests skip it when missing).
    """

    id: str
    entry_point: str
    description: str
    family: str
    spec: str
    scorer: str | None = None
    opponents: dict[str, str] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    nondeterministic: bool = False
    extra: str | None = None

    def __post_init__(self) -> None:
        for name in ("entry_point", "spec", "scorer"):
            value = getattr(self, name)
            if value is not None and not _is_path(value):
                raise InvalidEnvConfig(
                    f"Expects `{name}` of `{self.id}` to be a 'module:name' path, actual: "
                    f"{value!r}."
                )


def _is_path(value: object) -> bool:
    module, sep, name = str(value).partition(":")
    return bool(isinstance(value, str) and sep and module and name)


def resolve(path: str) -> Any:
    """Import the object a ``"module:name"`` path names (a spec, a scorer, an env).

    Raises:
        InvalidEnvConfig: When the module or the name does not exist.
    """
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise InvalidEnvConfig(f"Cannot import {path!r}: {e}") from e


# =============================================================================================
# The registry: one row per environment id, grouped by family.
# =============================================================================================
ENVS: tuple[EnvEntry, ...] = (
    # ----------------------------------------------------------------------- FrozenLake
    EnvEntry(
        id="rllm/FrozenLake-v0",
        entry_point="rllm_envs.frozenlake.frozenlake_env:FrozenLakeEnv",
        description="Walk a frozen-lake grid to the goal, avoiding holes (multi-turn, "
        "Gymnasium's dynamics, random or fixed maps).",
        family="FrozenLake",
        spec="rllm_envs.frozenlake.spec:SPEC",
    ),
    # ----------------------------------------------------------------------- Math
    EnvEntry(
        id="rllm/Math-v0",
        entry_point="rllm_envs.math.math_env:MathEnv",
        description="Single-turn math with a \\boxed{} answer graded exactly (procedural families "
        "with a difficulty knob, or MATH/GSM8K/AIME/DeepScaleR files).",
        family="Math",
        spec="rllm_envs.math.spec:SPEC",
        scorer="rllm_envs.math.math_env:score",
    ),
    EnvEntry(
        id="rllm/Countdown-v0",
        entry_point="rllm_envs.countdown.countdown_env:CountdownEnv",
        description="Single-turn Countdown: combine the given numbers with + - * / into the "
        "target, exact arithmetic, each number once (procedural with a difficulty knob, or "
        "nums/target files such as Countdown-Tasks-3to4).",
        family="Countdown",
        spec="rllm_envs.countdown.spec:SPEC",
        scorer="rllm_envs.countdown.rules:score",
    ),
    # ----------------------------------------------------------------------- Code
    EnvEntry(
        id="rllm/Code-v0",
        entry_point="rllm_envs.code.code_env:CodeEnv",
        description="Competitive programming: a Python program judged on hidden tests in a "
        "sandbox (LiveCodeBench rules; embedded problems, or LCB/TACO/CF/HumanEval/MBPP data).",
        family="Code",
        spec="rllm_envs.code.spec:SPEC",
        scorer="rllm_envs.code.judge:score",
        # Verdicts near a time limit depend on machine load (TLE vs AC).
        nondeterministic=True,
    ),
    EnvEntry(
        id="rllm/CodeMultiTurn-v0",
        entry_point="rllm_envs.code.code_env:CodeEnv",
        description="Competitive programming with retries: feedback on the first failing example "
        "test, up to 4 attempts.",
        family="Code",
        spec="rllm_envs.code.spec:SPEC",
        scorer="rllm_envs.code.judge:score",
        kwargs={"multi_turn": True, "max_turns": 4},
        nondeterministic=True,
    ),
    EnvEntry(
        id="rllm/CodeCpp-v0",
        entry_point="rllm_envs.code.code_env:CodeEnv",
        description="Competitive programming in C++17: compiled with g++ and judged in the "
        "sandbox (stdin problems; needs `apt-get install g++`).",
        family="Code",
        spec="rllm_envs.code.spec:SPEC",
        scorer="rllm_envs.code.judge:score",
        kwargs={"language": "cpp"},
        nondeterministic=True,
    ),
    # ----------------------------------------------------------------------- Tool use
    EnvEntry(
        id="rllm/ToolUse-v0",
        entry_point="rllm_envs.tooluse.tooluse_env:ToolUseEnv",
        description="Multi-turn function calling: catalogue look-ups, unit and date arithmetic, "
        "directory chains and exact math through tools (calculator, sandboxed Python).",
        family="ToolUse",
        spec="rllm_envs.tooluse.spec:SPEC",
        scorer="rllm_envs.tooluse.tasks:score",
        # The Python tool runs model code in the sandbox, whose output can vary run to run.
        nondeterministic=True,
    ),
    # ----------------------------------------------------------------------- Search
    EnvEntry(
        id="rllm/Search-v0",
        entry_point="rllm_envs.search.search_env:SearchEnv",
        description="Multi-turn retrieval-augmented QA: search a BM25 index (in process, cached "
        "on disk) and answer; an invented knowledge base with single- and multi-hop questions.",
        family="Search",
        spec="rllm_envs.search.spec:SPEC",
        scorer="rllm_envs.search.scoring:score",
        extra="search",
    ),
    # ----------------------------------------------------------------------- reasoning-gym
    EnvEntry(
        id="rllm/ReasoningGym-v0",
        entry_point="rllm_envs.reasoning_gym.reasoning_gym_env:ReasoningGymEnv",
        description="Any of reasoning-gym's ~100 procedural task families (dataset=<name>, "
        "size, task_seed, config, curriculum level), scored by reasoning-gym's score_answer.",
        family="ReasoningGym",
        spec="rllm_envs.reasoning_gym.spec:SPEC",
        scorer="rllm_envs.reasoning_gym.scoring:score",
        extra="reasoning-gym",
    ),
    # ----------------------------------------------------------------------- SWE
    EnvEntry(
        id="rllm/SWE-v0",
        entry_point="rllm_envs.swe.swe_env:SWEEnv",
        description="Repository-level software engineering: fix an issue in a Python repository "
        "with tools (read, search, edit, run tests in a sandbox), judged by hidden fail-to-pass "
        "and pass-to-pass tests (embedded repos with seeded bugs, or SWE-bench JSONL over local "
        "git repositories).",
        family="SWE",
        spec="rllm_envs.swe.spec:SPEC",
        scorer="rllm_envs.swe.judge:score",
        # Verdicts run tests in a sandbox under time limits.
        nondeterministic=True,
    ),
)

for _row in ENVS:
    if _row.id not in gym.registry:
        gym.register(
            id=_row.id,
            entry_point=_row.entry_point,
            kwargs=dict(_row.kwargs),
            nondeterministic=_row.nondeterministic,
            # Our spaces write real Unicode text through shared memory (see rllm_envs.spaces),
            # so AsyncVectorEnv's default shared memory works; nothing to override here.
        )


# =============================================================================================
# Multi-agent (PettingZoo) registry: same rows, made with `make_parallel` / `make_aec`, and
# registered in PettingZoo's own registry (`pettingzoo.make("parallel", id)`) at the bottom.
# The entry point is the `ParallelEnv` class; the AEC form is PettingZoo's `parallel_to_aec`.
# =============================================================================================
MULTIAGENT_ENVS: tuple[EnvEntry, ...] = (
    # ----------------------------------------------------------------------- Math
    EnvEntry(
        id="rllm/SolverJudge-v0",
        entry_point="rllm_envs.multiagent.solver_judge:SolverJudgeEnv",
        description="Solver agents answer a math problem, a judge agent selects one answer; "
        "solvers scored on correctness, the judge on picking a correct one.",
        family="SolverJudge",
        spec="rllm_envs.multiagent.spec:SOLVER_JUDGE",
        scorer="rllm_envs.math.math_env:score",
    ),
    EnvEntry(
        id="rllm/Debate-v0",
        entry_point="rllm_envs.multiagent.debate:DebateEnv",
        description="Debater agents answer a math problem, read each other's answers and "
        "revise over several rounds; scored on their final answers.",
        family="Debate",
        spec="rllm_envs.multiagent.spec:DEBATE",
        scorer="rllm_envs.math.math_env:score",
    ),
    # ----------------------------------------------------------------------- Games
    EnvEntry(
        id="rllm/TicTacToe-v0",
        entry_point="rllm_envs.multiagent.tictactoe:TicTacToeEnv",
        description="Two agents play tic-tac-toe in text from seeded openings; win/draw/loss "
        "rewards, an illegal move ends the game with a penalty.",
        family="TicTacToe",
        spec="rllm_envs.multiagent.spec:TICTACTOE",
        # The evaluated policy plays player_0 against this scripted player.
        opponents={"player_1": "heuristic"},
    ),
)


def list_envs() -> dict[str, str]:
    """Return ``{env_id: one-line description}`` for every registered environment."""
    return {entry.id: entry.description for entry in ENVS}


def env_entry(env_id: str) -> EnvEntry:
    """The registry row of a single- or multi-agent env id (``"rllm_envs:"`` prefix allowed).

    Raises:
        UnknownEnvironment: For an id in neither table (with the closest ids).
    """
    key = env_id.split(":", 1)[1] if env_id.startswith("rllm_envs:") else env_id
    for row in (*ENVS, *MULTIAGENT_ENVS):
        if row.id == key:
            return row
    known = {**list_envs(), **list_multiagent_envs()}
    raise UnknownEnvironment(
        f"No rllm-envs environment with id `{env_id}`; known ids: {sorted(known)}."
        + did_you_mean(key, known)
    )


def agent_spec(env_id: str) -> AgentSpec:
    """The agent-facing spec of a registered id (:class:`rllm_envs.spec.AgentSpec`).

    Raises:
        UnknownEnvironment: For an id in neither table (with the closest ids).
    """
    spec = resolve(env_entry(env_id).spec)
    if not isinstance(spec, AgentSpec):
        raise InvalidEnvConfig(f"Expects {env_entry(env_id).spec!r} to name an AgentSpec.")
    return spec


def _entry(env_id: str) -> EnvEntry:
    for row in ENVS:
        if row.id == env_id:
            return row
    raise UnknownEnvironment(
        f"No rllm-envs environment with id `{env_id}`; known ids: {sorted(list_envs())}."
        + did_you_mean(env_id, list_envs())
    )


def _check_kwargs(entry: EnvEntry, kwargs: dict[str, Any]) -> None:
    """Reject unknown constructor kwargs early, with a suggestion."""
    module, _, name = entry.entry_point.partition(":")
    cls = getattr(__import__(module, fromlist=[name]), name)
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    allowed = [p for p in params if p != "self"]
    for key in kwargs:
        if key not in allowed:
            raise InvalidEnvConfig(
                f"`{entry.id}` has no argument `{key}`.{did_you_mean(key, allowed)} "
                f"Its arguments: {allowed}."
            )


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` with rllm-envs errors: unknown ids and kwargs get suggestions."""
    entry = _entry(env_id)
    _check_kwargs(entry, kwargs)
    return gym.make(env_id, **kwargs)


def make_vec(
    env_id: str,
    num_envs: int = 1,
    vectorization_mode: str = "sync",
    vector_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """``gymnasium.make_vec`` with rllm-envs errors; ``"async"`` works with its defaults."""
    entry = _entry(env_id)
    _check_kwargs(entry, kwargs)
    return gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode=vectorization_mode,
        vector_kwargs=vector_kwargs,
        **kwargs,
    )


# ------------------------------------------------------------------------- multi-agent API


def list_multiagent_envs() -> dict[str, str]:
    """Return ``{env_id: one-line description}`` for every multi-agent environment."""
    return {entry.id: entry.description for entry in MULTIAGENT_ENVS}


def _multiagent_entry(env_id: str) -> EnvEntry:
    for entry in MULTIAGENT_ENVS:
        if entry.id == env_id:
            return entry
    hint = " (it is a single-agent env: use `rllm_envs.make`)" if env_id in list_envs() else ""
    raise UnknownEnvironment(
        f"No rllm-envs multi-agent environment with id `{env_id}`{hint}; known ids: "
        f"{sorted(list_multiagent_envs())}." + did_you_mean(env_id, list_multiagent_envs())
    )


def make_parallel(env_id: str, **kwargs: Any) -> MultiAgentTextEnv:
    """Make a multi-agent env in PettingZoo's parallel form (every live agent steps at once).

    Args:
        env_id: A multi-agent id, e.g. ``"rllm/Debate-v0"`` (see :func:`list_multiagent_envs`).
        **kwargs: Constructor arguments (documented in the env class docstring).

    Returns:
        The ``pettingzoo.ParallelEnv``.

    Raises:
        UnknownEnvironment: For an unknown id (with the closest ids).
        InvalidEnvConfig: For an unknown or invalid argument.
    """
    entry = _multiagent_entry(env_id)
    _check_kwargs(entry, kwargs)
    module, _, name = entry.entry_point.partition(":")
    cls = getattr(importlib.import_module(module), name)
    env: MultiAgentTextEnv = cls(**{**entry.kwargs, **kwargs})
    return env


def make_aec(env_id: str, **kwargs: Any) -> pettingzoo.AECEnv[str, str, str | None]:
    """Make a multi-agent env in PettingZoo's AEC form (agents step one after another).

    This is PettingZoo's ``parallel_to_aec`` of :func:`make_parallel`: in each cycle every live
    agent steps once; a waiting agent's action (``infos[agent]["acting"]`` false) is ignored,
    so step it with ``None``. Arguments and errors as :func:`make_parallel`.
    """
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(make_parallel(env_id, **kwargs))


for _row in MULTIAGENT_ENVS:
    # Creators resolve the env module only when called, so `import rllm_envs` stays light.
    if _row.id not in pettingzoo.parallel_registry:
        pettingzoo.register("parallel", _row.id, entry_point=partial(make_parallel, _row.id))
    if _row.id not in pettingzoo.aec_registry:
        pettingzoo.register("aec", _row.id, entry_point=partial(make_aec, _row.id))
