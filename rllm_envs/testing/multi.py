"""``check_multiagent_env``: the multi-agent (PettingZoo) contract, rule by rule."""

from __future__ import annotations

import importlib
import inspect
import math
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import data_equivalence

from rllm_envs.testing import _common as kit
from rllm_envs.testing._common import ConformanceReport, Fail, Rule, SkipRule, describe, ensure

__all__ = ["MULTIAGENT_RULES", "AEC_ADVICE_WARNINGS", "check_multiagent_env"]

#: ``policy(env, agent, observation, info) -> action``.
AgentPolicy = Callable[[Any, str, Any, dict[str, Any]], Any]

#: What PettingZoo's AEC ``api_test`` says about any env whose spaces are not Box/Discrete and
#: whose observations are not arrays: advice for array envs, not API violations.
AEC_ADVICE_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
    "Action space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
)

_SAMPLE_TEXT = "Player 1 says: I pick answer 2 ☃ 中文 😀 \\boxed{7}"

MULTIAGENT_RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "parallel-api-test",
            "PettingZoo's `parallel_api_test` passes with zero warnings.",
            "read the message: agents, observations, rewards, terminations, truncations and "
            "infos must be dicts over the live agents, and finished agents leave `agents`.",
        ),
        Rule(
            "parallel-seed-test",
            "PettingZoo's `parallel_seed_test`: two envs reset with one seed play identically.",
            "seed all randomness from `reset(seed=)` (e.g. `np.random.default_rng(seed)`).",
        ),
        Rule(
            "aec-seed-test",
            "PettingZoo's `seed_test` on the AEC form (`parallel_to_aec`).",
            "as parallel-seed-test; the AEC form must not add randomness of its own.",
        ),
        Rule(
            "aec-api-test",
            "PettingZoo's AEC `api_test` passes (its observation-dtype helper made text-aware; "
            "only its advice for array envs tolerated).",
            "read the message; the AEC form comes from `pettingzoo.utils.parallel_to_aec`.",
        ),
        Rule(
            "text-spaces",
            "every agent's observation and action spaces are text spaces that contain any "
            "Unicode string, and the same object is returned on every call.",
            "build the spaces once in `__init__` with `rllm_envs.spaces.observation_space()` / "
            "`action_space()` and return them from `observation_space(agent)`.",
        ),
        Rule(
            "info-keys",
            "every agent's info carries the documented keys; `turn` counts joint steps; "
            "`acted` says whether the agent's action was read; rewards are the weighted sum of "
            "`reward_components`; some live agent is always acting.",
            "derive from `rllm_envs.multiagent.MultiAgentTextEnv` or add the keys of "
            "`MA_INFO_KEYS` / `MA_STEP_INFO_KEYS`.",
        ),
        Rule(
            "determinism",
            "two fresh envs with the same seeds and actions give identical episodes.",
            "draw every random choice from the env's seeded generator; keep timings out of "
            "info; or pass `nondeterministic=True`.",
        ),
        Rule(
            "different-seeds",
            "different seeds give different tasks when the task source has more than one.",
            "pick the task index with the env's seeded generator.",
        ),
        Rule(
            "reset-options",
            "`options={'index': i}` selects task i whatever the seed, `options={'task': env.task}`"
            " replays it, other env-specific options are ignored and a near-miss ('indx') raises.",
            "select the task with `rllm_envs.core.select_task`; reject near-misses of the known "
            "option keys with `InvalidEnvConfig`.",
        ),
        Rule(
            "programmer-errors",
            "stepping before reset or after the end raises ResetNeeded; unknown agents and "
            "non-dict actions raise; bad reward weights and render modes raise at construction.",
            "validate the joint action's keys and type, and constructor arguments, with "
            "`InvalidEnvConfig`.",
        ),
        Rule(
            "pickle",
            "the parallel env and its AEC form pickle mid-episode and continue identically.",
            "hold no lambdas, open files, locks or processes as attributes.",
        ),
        Rule(
            "render",
            "`render_mode='ansi'` makes `render()` return non-empty text.",
            "return the current state as text from `render()` in 'ansi' mode.",
        ),
        Rule(
            "scripted-policies",
            "the scripted oracle, heuristic and random policies play whole episodes, and the "
            "oracle never makes an invalid move.",
            "make `scripted_action(kind, agent, rng)` return legal actions for acting agents.",
        ),
        Rule(
            "oracle-beats-garbage",
            "the oracle earns more in total than garbage; garbage earns <= 0 per agent, is "
            "flagged `invalid_action` and is never correct.",
            "score unparsable output 0 (or a documented penalty) and flag it.",
        ),
        Rule(
            "hostile-actions",
            "empty, 1 MB, surrogate-laden, None, bytes, int and arbitrary-object actions for "
            "every agent never raise; a too long action read from an acting agent is flagged.",
            "convert actions with `str()`, cut to `max_length`, turn parse errors into "
            "transitions.",
        ),
        Rule(
            "random-unicode",
            "random Unicode actions for every live agent (acting or not), in the parallel and "
            "AEC forms, never raise; observations stay in their spaces, rewards are finite.",
            "catch parse errors inside `step`; ignore the actions of waiting agents.",
        ),
        Rule(
            "docstring",
            f"the class docstring is its documentation page with the sections {kit.DOC_SECTIONS} "
            "and names every agent role.",
            "add the missing `## ...` sections and describe each role.",
        ),
    )
}


def check_multiagent_env(
    env: Any,
    *,
    kwargs: dict[str, Any] | None = None,
    rules: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    oracle: AgentPolicy | None = None,
    garbage: str = kit.GARBAGE,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    nondeterministic: bool = False,
    info_keys: Sequence[str] | None = None,
    step_info_keys: Sequence[str] | None = None,
    num_cycles: int = 50,
    fuzz_episodes: int = 10,
    raise_on_failure: bool = True,
) -> ConformanceReport:
    """Hold a PettingZoo parallel text env to the rllm-envs multi-agent contract.

    Runs the rules of :data:`MULTIAGENT_RULES`: PettingZoo's own ``parallel_api_test``,
    ``parallel_seed_test``, AEC ``seed_test`` and ``api_test``, plus ours (text spaces, info
    keys, determinism, reset options, programmer errors, pickling, scripted policies, oracle
    versus garbage, hostile and random-Unicode actions, docstring).

    Args:
        env: A registered multi-agent id (made with :func:`rllm_envs.make_parallel`), a
            ``ParallelEnv`` class or zero-argument factory. Constructor checks (bad reward
            weights, ``render_mode='ansi'``) need an id or a class.
        kwargs: Constructor kwargs for an id or a class.
        rules: Names of the rules to run (default: all).
        skip: Names of rules not to run (reported as skipped).
        oracle: ``policy(env, agent, obs, info) -> action``; default the env's scripted
            oracle (``rllm_envs.multiagent.ScriptedPolicy("oracle")``) for rllm-envs envs.
        garbage: The garbage answer.
        seeds: Seeds of the oracle-versus-garbage episodes.
        nondeterministic: Skip the determinism rules.
        info_keys: Keys required in every agent's info (default ``MA_INFO_KEYS``).
        step_info_keys: Keys required on ``step`` only (default ``MA_STEP_INFO_KEYS``).
        num_cycles: Cycles of PettingZoo's tests.
        fuzz_episodes: Episodes of random Unicode actions per form.
        raise_on_failure: Raise :class:`ConformanceError` when a rule fails.

    Returns:
        The :class:`ConformanceReport`.

    Raises:
        ConformanceError: When a rule fails and ``raise_on_failure`` is true.
    """
    from rllm_envs.multiagent.base import MA_INFO_KEYS, MA_STEP_INFO_KEYS

    make, make_with, label = _factory(env, kwargs)
    ctx = _Ctx(
        make,
        garbage,
        tuple(seeds),
        tuple(MA_INFO_KEYS if info_keys is None else info_keys),
        tuple(MA_STEP_INFO_KEYS if step_info_keys is None else step_info_keys),
        fuzz_episodes,
        make_with=make_with,
        oracle=oracle,
        nondeterministic=nondeterministic,
        num_cycles=num_cycles,
    )
    return kit.run_rules(label, MULTIAGENT_RULES, _CHECKS, ctx, rules, skip, raise_on_failure)


# ------------------------------------------------------------------------------ plumbing


def _factory(
    env: Any, kwargs: dict[str, Any] | None
) -> tuple[Callable[[], Any], Callable[..., Any] | None, str]:
    kw = dict(kwargs or {})
    if isinstance(env, str):
        import rllm_envs

        def make_with(**extra: Any) -> Any:
            return rllm_envs.make_parallel(env, **{**kw, **extra})

        return make_with, make_with, kit.label(env, kw)
    if inspect.isclass(env):

        def make_cls(**extra: Any) -> Any:
            return env(**{**kw, **extra})

        return make_cls, make_cls, kit.label(env.__name__, kw)
    if callable(env):
        name = getattr(env, "__name__", type(env).__name__)
        return partial(env, **kw), None, kit.label(name, kw)
    raise TypeError(
        f"Expects `env` to be a multi-agent env id, a ParallelEnv class or a factory, actual: "
        f"{type(env)} (pass the class or `lambda: MyEnv()`, not an instance)."
    )


@dataclass
class _Ctx(kit.Context):
    make_with: Callable[..., Any] | None
    oracle: AgentPolicy | None
    nondeterministic: bool
    num_cycles: int

    def aec(self) -> Any:
        from pettingzoo.utils.conversions import parallel_to_aec

        return parallel_to_aec(self.make())

    def scripted(self, kind: str, seed: int = 0) -> AgentPolicy | None:
        if kind == "oracle" and self.oracle is not None:
            return self.oracle
        from rllm_envs.multiagent.base import MultiAgentTextEnv, ScriptedPolicy

        probe = self.make()
        if not isinstance(getattr(probe, "unwrapped", probe), MultiAgentTextEnv):
            return None
        policy = ScriptedPolicy(kind, seed=seed)
        return lambda env, agent, obs, info: policy(env, agent)


def _acting(infos: dict[str, dict[str, Any]], agent: str) -> bool:
    return bool(infos.get(agent, {}).get("acting", True))


def _run_parallel(
    env: Any, policy: AgentPolicy, *, seed: int, limit: int = 1_000
) -> list[tuple[Any, ...]]:
    obs, infos = env.reset(seed=seed)
    steps: list[tuple[Any, ...]] = [(obs, {}, {}, {}, infos)]
    for _ in range(limit):
        actions = {a: policy(env, a, obs[a], infos[a]) for a in env.agents if _acting(infos, a)}
        obs, rewards, terms, truncs, infos = env.step(actions)
        steps.append((obs, rewards, terms, truncs, infos))
        if not env.agents:
            return steps
    raise Fail(f"the episode did not end within {limit} steps")


def _returns(steps: list[tuple[Any, ...]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for _, rewards, *_ in steps:
        for agent, reward in rewards.items():
            total[agent] = total.get(agent, 0.0) + float(reward)
    return total


def _final_infos(steps: list[tuple[Any, ...]]) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    for _, _, terms, truncs, infos in steps[1:]:
        for agent, info in infos.items():
            if terms.get(agent) or truncs.get(agent):
                last[agent] = info
    return last


def _garbage_policy(text: str) -> AgentPolicy:
    return lambda env, agent, obs, info: text


# ---------------------------------------------------------------------------------- rules


def _parallel_api_test(ctx: _Ctx) -> None:
    from pettingzoo.test import parallel_api_test

    messages = kit.record_warnings(parallel_api_test, ctx.make(), num_cycles=ctx.num_cycles)
    ensure(not messages, f"parallel_api_test warned: {messages}")


def _parallel_seed_test(ctx: _Ctx) -> None:
    if ctx.nondeterministic:
        raise SkipRule("the env is declared nondeterministic")
    from pettingzoo.test import parallel_seed_test

    parallel_seed_test(ctx.make, num_cycles=ctx.num_cycles)


def _aec_seed_test(ctx: _Ctx) -> None:
    if ctx.nondeterministic:
        raise SkipRule("the env is declared nondeterministic")
    from pettingzoo.test import seed_test

    seed_test(ctx.aec, num_cycles=ctx.num_cycles)


def _aec_api_test(ctx: _Ctx) -> None:
    from pettingzoo.test import api_test

    # pettingzoo 1.27's api_test compares `observation.dtype` with the space's and crashes on
    # str observations; only that helper is made text-aware, the rest runs unchanged.
    module = importlib.import_module("pettingzoo.test.api_test")
    original = getattr(module, "_test_observation_space_compatibility")  # noqa: B009
    seen_text: list[str] = []

    def compatible(expected: Any, seen: Any, recursed_keys: Any) -> None:
        if isinstance(expected, gym.spaces.Text):
            ensure(isinstance(seen, str), f"expected a str observation, got {type(seen)}")
            seen_text.append(seen)
            return
        original(expected, seen, recursed_keys)

    setattr(module, "_test_observation_space_compatibility", compatible)  # noqa: B010
    try:
        messages = kit.record_warnings(api_test, ctx.aec(), num_cycles=ctx.num_cycles)
    finally:
        setattr(module, "_test_observation_space_compatibility", original)  # noqa: B010
    bad = kit.unexpected(messages, AEC_ADVICE_WARNINGS)
    ensure(not bad, f"api_test warned: {bad}")


def _text_spaces(ctx: _Ctx) -> None:
    env = ctx.make()
    for agent in env.possible_agents:
        for kind in ("observation_space", "action_space"):
            space = getattr(env, kind)(agent)
            ensure(isinstance(space, gym.spaces.Text), f"{kind}({agent!r}) is {describe(space)}")
            ensure(_SAMPLE_TEXT in space, f"{kind}({agent!r}) rejects {describe(_SAMPLE_TEXT)}")
            ensure(
                getattr(env, kind)(agent) is space,
                f"{kind}({agent!r}) returns a new object on each call",
            )


def _info_keys(ctx: _Ctx) -> None:
    env = ctx.make()
    obs, infos = env.reset(seed=1)
    live = set(env.possible_agents)
    ensure(
        set(obs) == set(infos) == set(env.agents) == live,
        f"reset gave observations for {sorted(obs)} and infos for {sorted(infos)}, agents are "
        f"{sorted(env.agents)}",
    )
    for agent, info in infos.items():
        missing = [k for k in ctx.info_keys if k not in info]
        ensure(not missing, f"reset info of {agent} lacks {missing}")
        if "turn" in ctx.info_keys:
            ensure(info["turn"] == 0, f"reset info turn of {agent} is {info['turn']}")
    if "acting" in ctx.info_keys:
        ensure(any(i["acting"] for i in infos.values()), "after reset, nobody is acting")
    policy = ctx.scripted("oracle") or (lambda e, a, o, i: e.action_space(a).sample())
    weights = getattr(env, "reward_weights", None)
    defaults = getattr(env, "default_reward_weights", None)
    turn = 0
    while env.agents:
        actions = {a: policy(env, a, obs[a], infos[a]) for a in env.agents if _acting(infos, a)}
        live = set(env.agents)
        obs, rewards, terms, truncs, infos = env.step(actions)
        turn += 1
        ensure(
            set(obs) == set(rewards) == set(terms) == set(truncs) == set(infos) == live,
            f"step {turn}: the returned dicts do not all cover the live agents {sorted(live)}",
        )
        for agent, info in infos.items():
            missing = [k for k in (*ctx.info_keys, *ctx.step_info_keys) if k not in info]
            ensure(not missing, f"step {turn}: info of {agent} lacks {missing}")
            if "turn" in ctx.info_keys:
                ensure(info["turn"] == turn, f"step {turn}: {agent}'s info turn is {info['turn']}")
            if "acted" in ctx.step_info_keys:
                ensure(
                    info["acted"] == (agent in actions),
                    f"step {turn}: {agent}'s `acted` is {info['acted']}",
                )
            ensure(
                isinstance(rewards[agent], float), f"{agent}'s reward {describe(rewards[agent])}"
            )
            components = info.get("reward_components")
            if components is not None and defaults is not None:
                ensure(
                    set(components) == set(defaults),
                    f"reward_components {sorted(components)} != {sorted(defaults)}",
                )
            if components is not None and weights is not None:
                weighted = sum(weights[k] * float(v) for k, v in components.items())
                ensure(
                    math.isclose(rewards[agent], weighted, rel_tol=1e-9, abs_tol=1e-9),
                    f"{agent}'s reward {rewards[agent]} is not the weighted sum {weighted}",
                )
        if env.agents and "acting" in ctx.info_keys:
            ensure(any(infos[a]["acting"] for a in env.agents), "live agents but nobody acts")


def _determinism(ctx: _Ctx) -> None:
    if ctx.nondeterministic:
        raise SkipRule("the env is declared nondeterministic")
    runs = []
    for _ in range(2):
        env = ctx.make()
        rng = np.random.default_rng(7)
        candidates = [p for p in (ctx.scripted("random", 7), ctx.scripted("oracle")) if p]
        candidates.append(_garbage_policy(ctx.garbage))

        def policy(env: Any, agent: str, obs: Any, info: Any, rng=rng, mixed=candidates) -> Any:
            return mixed[int(rng.integers(len(mixed)))](env, agent, obs, info)

        runs.append([_run_parallel(env, policy, seed=s) for s in (123, 124)])
    ensure(data_equivalence(runs[0], runs[1]), "same seeds and actions gave different episodes")


def _different_seeds(ctx: _Ctx) -> None:
    env = ctx.make()
    tasks = getattr(env, "tasks", None)
    if tasks is None or len(tasks) < 2:
        raise SkipRule("the env has no task source of two or more tasks")
    agent = env.possible_agents[0]
    resets = [env.reset(seed=s) for s in range(8)]
    ensure(len({o[agent] for o, _ in resets}) > 1, "seeds 0-7 gave the same first observation")
    if "task_id" in ctx.info_keys:
        ensure(len({i[agent]["task_id"] for _, i in resets}) > 1, "seeds 0-7 gave one task id")


def _reset_options(ctx: _Ctx) -> None:
    env = ctx.make()
    agent = env.possible_agents[0]
    obs_a, info_a = env.reset(seed=0, options={"index": 0})
    obs_b, _ = env.reset(seed=99, options={"index": 0})
    ensure(obs_a == obs_b, "options={'index': 0} gave different tasks for seeds 0 and 99")
    if "task_index" in ctx.info_keys:
        ensure(info_a[agent]["task_index"] == 0, "options={'index': 0} gave task_index != 0")
    task = getattr(env, "task", None)
    if task is not None:
        obs_c, info_c = env.reset(options={"task": task})
        ensure(obs_c == obs_a, "options={'task': env.task} did not replay the task")
        if "task_index" in ctx.info_keys:
            ensure(info_c[agent]["task_index"] is None, "a passed task has task_index != None")
    env.reset(seed=0, options={"options": 1})  # PettingZoo's tests pass env-specific options
    kit.expect_raise(lambda: env.reset(options={"indx": 0}), "reset(options={'indx': 0}) (a typo)")
    if task is not None:
        kit.expect_raise(
            lambda: env.reset(options={"task": "not a record"}), "options={'task': str}"
        )


def _programmer_errors(ctx: _Ctx) -> None:
    env = ctx.make()
    kit.expect_raise(lambda: env.step({}), "step before reset", (gym.error.ResetNeeded,))
    env.reset(seed=0)
    kit.expect_raise(lambda: env.step({"nobody_0": "hi"}), "an action for an unknown agent")
    kit.expect_raise(lambda: env.step(["not", "a", "dict"]), "a list as the joint action")
    if ctx.make_with is not None:
        make_with = ctx.make_with
        kit.expect_raise(
            lambda: make_with(reward_weights={"nope": 1.0}), "reward_weights={'nope': 1.0}"
        )
        kit.expect_raise(lambda: make_with(render_mode="rgb_array"), "render_mode='rgb_array'")
    for _ in range(10_000):
        if not env.agents:
            break
        env.step(dict.fromkeys(env.agents, ""))
    ensure(not env.agents, "empty actions never ended the episode")
    kit.expect_raise(lambda: env.step({}), "step after the episode ended", (gym.error.ResetNeeded,))


def _pickle(ctx: _Ctx) -> None:
    env = ctx.make()
    obs, infos = env.reset(seed=5)
    policy = ctx.scripted("oracle") or _garbage_policy(ctx.garbage)
    actions = {a: policy(env, a, obs[a], infos[a]) for a in env.agents if _acting(infos, a)}
    clone = pickle.loads(pickle.dumps(env))
    ensure(
        data_equivalence(env.step(actions), clone.step(actions)),
        "after a pickle round trip the parallel env's next step differs",
    )
    aec = ctx.aec()
    aec.reset(seed=5)
    aec.step("anything")
    aec_clone = pickle.loads(pickle.dumps(aec))
    ensure(data_equivalence(aec.last(), aec_clone.last()), "the AEC copy's last() differs")
    aec.step("x")
    aec_clone.step("x")
    ensure(data_equivalence(aec.last(), aec_clone.last()), "the AEC copy diverged after a step")


def _render(ctx: _Ctx) -> None:
    if ctx.make_with is None:
        raise SkipRule("needs an id or a class to construct with render_mode='ansi'")
    env = ctx.make_with(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    ensure(isinstance(text, str) and text.strip(), f"render() returned {describe(text)}")


def _scripted_policies(ctx: _Ctx) -> None:
    kinds = ("oracle", "heuristic", "random")
    policies = {k: ctx.scripted(k, seed=0) for k in kinds}
    if not any(policies.values()):
        raise SkipRule("no scripted policies (not an rllm-envs env and no `oracle=` given)")
    env = ctx.make()
    for kind, policy in policies.items():
        if policy is None:
            continue
        for seed in range(3):
            steps = _run_parallel(env, policy, seed=seed)
            ended = set(_final_infos(steps))
            ensure(
                ended == set(env.possible_agents),
                f"{kind} policy, seed {seed}: agents {sorted(set(env.possible_agents) - ended)} "
                "never reached a terminal step",
            )
            if kind == "oracle":
                bad = [
                    (a, i.get("invalid_reason"))
                    for *_, infos in steps[1:]
                    for a, i in infos.items()
                    if i.get("invalid_action")
                ]
                ensure(not bad, f"oracle, seed {seed}: invalid moves {bad[:3]}")


def _oracle_beats_garbage(ctx: _Ctx) -> None:
    oracle = ctx.scripted("oracle")
    if oracle is None:
        raise SkipRule("no oracle: pass `oracle=`")
    env = ctx.make()
    for seed in ctx.seeds:
        good = sum(_returns(_run_parallel(env, oracle, seed=seed)).values())
        garbage_steps = _run_parallel(env, _garbage_policy(ctx.garbage), seed=seed)
        bad = _returns(garbage_steps)
        ensure(good > sum(bad.values()), f"seed {seed}: oracle {good} <= garbage {bad}")
        ensure(all(r <= 0.0 for r in bad.values()), f"seed {seed}: garbage earned {bad}")
        if "invalid_action" in ctx.step_info_keys:
            flagged = [
                i["invalid_action"] for *_, infos in garbage_steps[1:] for i in infos.values()
            ]
            ensure(any(flagged), f"seed {seed}: garbage was never flagged `invalid_action`")
        if "is_correct" in ctx.info_keys:
            correct = [a for a, i in _final_infos(garbage_steps).items() if i["is_correct"]]
            ensure(not correct, f"seed {seed}: garbage was correct for {correct}")


def _hostile_actions(ctx: _Ctx) -> None:
    env = ctx.make()
    for action in (*kit.HOSTILE_ACTIONS, object()):
        env.reset(seed=0)
        joint = dict.fromkeys(env.agents, action)
        obs, rewards, _, _, infos = kit.attempt(
            f"step with {describe(action, 40)}", env.step, joint
        )
        for agent, text in obs.items():
            ensure(text in env.observation_space(agent), f"{agent}'s observation left its space")
            ensure(
                isinstance(rewards[agent], float), f"{agent}'s reward {describe(rewards[agent])}"
            )
            info = infos[agent]
            if "action_truncated" in info and "acted" in info:
                huge = isinstance(action, str) and len(action) == 1_000_000
                ensure(
                    info["action_truncated"] is (huge and info["acted"]),
                    f"{agent}: action_truncated is {info['action_truncated']} for "
                    f"{describe(action, 40)}",
                )


def _random_unicode(ctx: _Ctx) -> None:
    rng = np.random.default_rng(2024)
    env = ctx.make()
    for episode in range(ctx.fuzz_episodes):
        env.reset(seed=episode)
        for _ in range(int(rng.integers(1, 12))):
            joint = dict(zip(env.agents, kit.fuzz_actions(rng, len(env.agents), 300), strict=True))
            obs, rewards, _, _, infos = kit.attempt(f"step({describe(joint)})", env.step, joint)
            for agent in obs:
                ensure(obs[agent] in env.observation_space(agent), f"{agent}'s obs left its space")
                ensure(np.isfinite(rewards[agent]), f"{agent}'s reward {rewards[agent]}")
                missing = [k for k in ctx.step_info_keys if k not in infos[agent]]
                ensure(not missing, f"{agent}'s step info lacks {missing}")
            if not env.agents:
                env.reset(seed=episode)
    aec = ctx.aec()
    for episode in range(ctx.fuzz_episodes):
        aec.reset(seed=episode)
        for action in kit.fuzz_actions(rng, int(rng.integers(1, 30)), 200):
            obs, _, terminated, truncated, _ = aec.last()
            ensure(obs in aec.observation_space(aec.agent_selection), "AEC observation left space")
            move = None if terminated or truncated else action
            kit.attempt(f"AEC step({describe(action)})", aec.step, move)
            if not aec.agents:
                aec.reset(seed=episode)


def _docstring(ctx: _Ctx) -> None:
    env = ctx.make()
    doc = kit.check_doc_sections(type(env))
    role = getattr(env, "_role", None)
    if callable(role):
        env.reset(seed=0)
        absent = [r for r in {role(a) for a in env.possible_agents} if r not in doc]
        ensure(not absent, f"the docstring never names the role(s) {absent}")


_CHECKS: dict[str, Callable[[_Ctx], None]] = {
    "parallel-api-test": _parallel_api_test,
    "parallel-seed-test": _parallel_seed_test,
    "aec-seed-test": _aec_seed_test,
    "aec-api-test": _aec_api_test,
    "text-spaces": _text_spaces,
    "info-keys": _info_keys,
    "determinism": _determinism,
    "different-seeds": _different_seeds,
    "reset-options": _reset_options,
    "programmer-errors": _programmer_errors,
    "pickle": _pickle,
    "render": _render,
    "scripted-policies": _scripted_policies,
    "oracle-beats-garbage": _oracle_beats_garbage,
    "hostile-actions": _hostile_actions,
    "random-unicode": _random_unicode,
    "docstring": _docstring,
}
assert set(_CHECKS) == set(MULTIAGENT_RULES)
