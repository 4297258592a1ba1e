"""``check_text_env``: the single-agent contract, rule by rule."""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env, data_equivalence

from rllm_envs.core import INFO_KEYS, STEP_INFO_KEYS
from rllm_envs.testing import _common as kit
from rllm_envs.testing._common import ConformanceReport, Fail, Rule, SkipRule, describe, ensure

__all__ = ["TEXT_ENV_RULES", "check_text_env", "EnvSource"]

#: An env, a zero-argument factory (a class counts), or a registered Gymnasium id.
EnvSource = gym.Env | Callable[[], gym.Env] | str
#: ``policy(env, observation, info) -> action``.
Policy = Callable[[gym.Env, Any, dict[str, Any]], Any]

_FIELDS = ("observation", "reward", "terminated", "truncated", "info")
_SAMPLE_TEXT = "What is 85 + 63? Réponds en français ☃ 中文 😀\n\\boxed{148}"

TEXT_ENV_RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "text-spaces",
            "observation and action spaces are text spaces that contain any Unicode string "
            "(Gymnasium's default Text charset is alphanumeric only).",
            "use `rllm_envs.spaces.observation_space()` / `action_space()` (UnicodeText), or a "
            "Text space given a real charset.",
        ),
        Rule(
            "check-env",
            "Gymnasium's `check_env(env.unwrapped, skip_render_check=True)` passes with zero "
            "warnings.",
            "read the warning: usually `reset` must call `super().reset(seed=seed)`, return "
            "(obs, info) with obs in observation_space, and `step` must return a float reward "
            "and bool terminated/truncated.",
        ),
        Rule(
            "passive-checker",
            "reset and a sampled step through Gymnasium's PassiveEnvChecker give a str "
            "observation and a float reward, with no warnings.",
            "return `str` observations and `float(reward)` from step.",
        ),
        Rule(
            "determinism",
            "two fresh envs reset with the same seed and fed the same actions give identical "
            "transitions (observations, rewards, flags and info).",
            "draw every random choice from `self.np_random` (seeded by `super().reset(seed=)`), "
            "keep timings and ids out of `info`, or register the env `nondeterministic=True`.",
        ),
        Rule(
            "different-seeds",
            "different seeds give different tasks when the task source has more than one.",
            "pick the task index with `self.np_random`, not a fixed index.",
        ),
        Rule(
            "vector-sync",
            "the env works in `gymnasium.vector.SyncVectorEnv`: reset returns the same text as "
            "the single env and step returns text and a reward per env.",
            "keep the env's state in the instance (no module globals) and its spaces Text.",
        ),
        Rule(
            "vector-async",
            "the env works in `gymnasium.vector.AsyncVectorEnv` with its defaults (shared "
            "memory), returning the real text, not '000...'.",
            "use `rllm_envs.spaces.UnicodeText` spaces (they move text through shared memory); "
            "with plain Text spaces, users must pass `shared_memory=False`.",
        ),
        Rule(
            "pickle",
            "the env pickles mid-episode and the copy continues exactly like the original.",
            "hold no lambdas, open files, locks or live processes as attributes (use module "
            "functions or `__getstate__`).",
        ),
        Rule(
            "oracle",
            "the oracle policy solves every checked task: return 1 and `info['is_correct']`.",
            "make `oracle_action()` return the reference answer in the format the first "
            "observation asks for, and score it 1.",
        ),
        Rule(
            "garbage",
            "a garbage answer earns a return <= 0, is not correct, and is flagged with "
            "`info['invalid_action']`.",
            "score unparsable output 0 (or a documented penalty) and set `invalid_action`.",
        ),
        Rule(
            "hostile-actions",
            "empty, 1 MB, surrogate-laden, None, bytes and int actions never raise; a too long "
            "action is cut and flagged `info['action_truncated']`.",
            "convert any action with `str()` (bytes: decode with errors='replace'), cut it to "
            "`action_space.max_length`, and turn every parse error into a transition.",
        ),
        Rule(
            "random-unicode",
            "random Unicode actions never raise; observations stay in their space, rewards are "
            "finite floats and the step info keys are present.",
            "catch parse/tool errors inside `step` and report them in the observation and "
            "`info['invalid_reason']`.",
        ),
        Rule(
            "info-keys",
            "reset and step info carry the documented keys; `turn` counts actions; "
            "`reward_components` names match `default_reward_weights` and the reward is their "
            "weighted sum.",
            "derive from `rllm_envs.core.TextEnv` (it fills them) or add the keys of "
            "`rllm_envs.core.INFO_KEYS` / `STEP_INFO_KEYS`.",
        ),
        Rule(
            "reset-options",
            "`reset(options={'index': i})` selects task i whatever the seed, "
            "`options={'task': record}` plays that record, and an unknown option raises.",
            "select the task with `rllm_envs.core.select_task` and reject unknown option keys "
            "with `InvalidEnvConfig`.",
        ),
        Rule(
            "step-before-reset",
            "`env.unwrapped.step()` before `reset()` raises `gymnasium.error.ResetNeeded`.",
            "raise `gymnasium.error.ResetNeeded` from `step` when no episode is running.",
        ),
        Rule(
            "random-action",
            "`random_action()` returns a string in the action space and leaves `np_random` "
            "untouched (so episodes stay seeded).",
            "sample from `self.action_space` or a separate generator, never `self.np_random`.",
        ),
        Rule(
            "docstring",
            f"the class docstring is its documentation page with the sections {kit.DOC_SECTIONS}.",
            "add the missing `## ...` sections to the env class docstring.",
        ),
    )
}


def check_text_env(
    env: EnvSource,
    *,
    kwargs: Mapping[str, Any] | None = None,
    rules: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    oracle: Policy | None = None,
    garbage: str = kit.GARBAGE,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    nondeterministic: bool | None = None,
    info_keys: Sequence[str] = INFO_KEYS,
    step_info_keys: Sequence[str] = STEP_INFO_KEYS,
    allowed_warnings: Iterable[str] = (),
    fuzz_episodes: int = 10,
    raise_on_failure: bool = True,
) -> ConformanceReport:
    """Hold a single-agent text env to the rllm-envs contract and report every broken rule.

    Runs the rules of :data:`TEXT_ENV_RULES` (Gymnasium's ``check_env`` with no warnings,
    seeded determinism, sync and async vector envs carrying text, pickling mid-episode,
    hostile and random-Unicode actions, oracle and garbage returns, info keys, reset options,
    docstring sections). Each check builds fresh envs, so the rules are independent; a rule
    that does not apply (no oracle, a nondeterministic env) is reported as skipped.

    Example:
        >>> from rllm_envs.testing import check_text_env
        >>> report = check_text_env("rllm/Math-v1", kwargs={"difficulty": 3}, rules=["oracle"])
        >>> report.passed
        ['oracle']

    Args:
        env: An env instance (copied by pickling, never stepped itself), a zero-argument
            factory such as the env class, or a registered Gymnasium id.
        kwargs: Constructor kwargs when ``env`` is an id or a factory.
        rules: Names of the rules to run (default: all, in order).
        skip: Names of rules not to run (reported as skipped).
        oracle: ``policy(env, obs, info) -> action`` that solves the task; default
            ``env.unwrapped.oracle_action()`` when the env has one (else the oracle rule
            is skipped).
        garbage: The garbage answer for the garbage rule.
        seeds: Seeds of the oracle episodes (garbage uses the first three).
        nondeterministic: Skip the determinism rule; default ``env.spec.nondeterministic``.
        info_keys: Keys required in the info of ``reset`` and ``step``.
        step_info_keys: Keys required in the info of ``step`` only.
        allowed_warnings: Substrings of ``check_env`` warnings to tolerate.
        fuzz_episodes: Episodes of random Unicode actions.
        raise_on_failure: Raise :class:`ConformanceError` when a rule fails (else only report).

    Returns:
        The :class:`ConformanceReport` (passed, skipped with reasons, failures).

    Raises:
        ConformanceError: When a rule fails and ``raise_on_failure`` is true; its message names
            each broken rule, what was seen and how to fix it.
        ValueError: For an unknown rule name.
    """
    make, label = _factory(env, kwargs)
    ctx = _Ctx(
        make,
        garbage,
        tuple(seeds),
        tuple(info_keys),
        tuple(step_info_keys),
        fuzz_episodes,
        oracle=oracle,
        nondeterministic=nondeterministic,
        allowed_warnings=tuple(allowed_warnings),
    )
    return kit.run_rules(label, TEXT_ENV_RULES, _CHECKS, ctx, rules, skip, raise_on_failure)


# ------------------------------------------------------------------------------ plumbing


def _factory(env: EnvSource, kwargs: Mapping[str, Any] | None) -> tuple[Callable[[], Any], str]:
    kw = dict(kwargs or {})
    if isinstance(env, str):
        return partial(gym.make, env, **kw), kit.label(env, kw)
    if isinstance(env, gym.Env):
        if kw:
            raise ValueError("`kwargs` needs an env id or a factory, not an env instance.")
        spec = getattr(env, "spec", None)
        label = spec.id if spec is not None else type(env.unwrapped).__name__
        try:
            blob = pickle.dumps(env)
        except Exception as e:
            failure = kit.RuleFailure(
                TEXT_ENV_RULES["pickle"], label, f"the env instance does not pickle: {e!r}"
            )
            raise kit.ConformanceError(kit.ConformanceReport(label, failures=[failure])) from e
        return partial(pickle.loads, blob), label
    if callable(env):
        name = getattr(env, "__name__", None) or type(env).__name__
        return partial(env, **kw), kit.label(name, kw)
    raise TypeError(
        f"Expects `env` to be a gymnasium.Env, a factory or an env id, actual: {type(env)}."
    )


@dataclass
class _Ctx(kit.Context):
    oracle: Policy | None
    nondeterministic: bool | None
    allowed_warnings: tuple[str, ...]

    def new(self) -> Any:
        return self.make()

    def oracle_policy(self, env: Any) -> Policy:
        if self.oracle is not None:
            return self.oracle
        method = getattr(env.unwrapped, "oracle_action", None)
        if method is None:
            raise SkipRule("the env has no `oracle_action()`; pass `oracle=` to check it")
        try:
            env.reset(seed=self.seeds[0] if self.seeds else 0)
            method()
        except NotImplementedError as e:
            raise SkipRule(f"the env's oracle is not implemented ({e})") from e
        return _call_oracle

    def oracle_or_none(self, env: Any) -> Policy | None:
        try:
            return self.oracle_policy(env)
        except SkipRule:
            return None


def _call_oracle(env: Any, obs: Any, info: dict[str, Any]) -> Any:
    return env.unwrapped.oracle_action()


def _run_episode(
    env: Any, policy: Policy, *, seed: int, options: Any = None, limit: int = 10_000
) -> list[tuple[Any, float, bool, bool, dict[str, Any]]]:
    obs, info = env.reset(seed=seed, options=options)
    steps = [(obs, 0.0, False, False, info)]
    for _ in range(limit):
        obs, reward, terminated, truncated, info = env.step(policy(env, obs, info))
        steps.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            return steps
    raise Fail(f"the episode did not end within {limit} steps")


# ---------------------------------------------------------------------------------- rules


def _text_spaces(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        for name in ("observation_space", "action_space"):
            space = getattr(env, name)
            ensure(
                isinstance(space, gym.spaces.Text),
                f"{name} is {describe(space)}, not a text space",
            )
            ensure(
                _SAMPLE_TEXT in space,
                f"{name} {describe(space)} rejects ordinary text {describe(_SAMPLE_TEXT)}",
            )


def _check_env(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        messages = kit.record_warnings(check_env, env.unwrapped, skip_render_check=True)
    bad = kit.unexpected(messages, ctx.allowed_warnings)
    ensure(not bad, f"check_env warned: {bad}")


def _passive_checker(ctx: _Ctx) -> None:
    from gymnasium.wrappers import PassiveEnvChecker

    with closing(ctx.new()) as env:

        def run() -> tuple[Any, Any]:
            checked = PassiveEnvChecker(env.unwrapped)
            obs, _ = checked.reset(seed=0)
            ensure(isinstance(obs, str) and obs.strip(), f"reset observation {describe(obs)}")
            obs, reward, *_ = checked.step(checked.action_space.sample())
            return obs, reward

        messages = kit.record_warnings(run)
        ensure(not messages, f"the passive checker warned: {messages}")
        obs, reward = run()
        ensure(isinstance(obs, str), f"step observation is {type(obs).__name__}, not str")
        ensure(type(reward) is float, f"step reward is {type(reward).__name__}, not float")


def _mixed_policy(oracle: Policy | None, rng: np.random.Generator) -> Policy:
    def policy(env: Any, obs: Any, info: dict[str, Any]) -> Any:
        if oracle is not None and rng.random() < 0.5:
            return oracle(env, obs, info)
        return env.action_space.sample()

    return policy


def _determinism(ctx: _Ctx) -> None:
    runs = []
    for _ in range(2):
        with closing(ctx.new()) as env:
            flag = ctx.nondeterministic
            if flag is None:
                flag = bool(getattr(getattr(env, "spec", None), "nondeterministic", False))
            if flag:
                raise SkipRule("the env is declared nondeterministic")
            oracle = ctx.oracle_or_none(env)
            env.action_space.seed(7)
            runs.append(
                _run_episode(env, _mixed_policy(oracle, np.random.default_rng(7)), seed=123)
            )
    a, b = runs
    ensure(len(a) == len(b), f"same seed, episodes of {len(a) - 1} and {len(b) - 1} steps")
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        for field, u, v in zip(_FIELDS, x, y, strict=True):
            ensure(
                data_equivalence(u, v),
                f"same seed and actions, {field} differs at step {i}: {describe(u)} != "
                f"{describe(v)}",
            )


def _different_seeds(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        tasks = getattr(env.unwrapped, "tasks", None)
        try:
            n = len(tasks) if tasks is not None else None
        except TypeError:
            n = None
        if n is None:
            raise SkipRule("the env has no `tasks` source with a length")
        if n < 2:
            raise SkipRule(f"the task source has {n} task(s)")
        resets = [env.reset(seed=s) for s in range(8)]
    observations = {obs for obs, _ in resets}
    ensure(len(observations) > 1, f"seeds 0-7 all gave the same first observation ({n} tasks)")
    if "task_id" in resets[0][1]:
        ids = {info["task_id"] for _, info in resets}
        ensure(len(ids) > 1, f"seeds 0-7 all gave task {ids} of {n}")


def _vector(ctx: _Ctx, mode: str) -> None:
    with closing(ctx.new()) as single:
        expected = [single.reset(seed=s)[0] for s in (3, 4)]
        has_oracle = callable(getattr(single.unwrapped, "oracle_action", None))
    cls = gym.vector.SyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv
    venv = cls([ctx.make, ctx.make])
    try:
        obs, _ = venv.reset(seed=[3, 4])
        ensure(
            list(obs) == expected,
            f"{mode} vector reset gave {describe(list(obs))}, the single env {describe(expected)}",
        )
        actions: list[Any] = []
        if has_oracle:
            try:
                actions = list(venv.call("oracle_action"))
            except NotImplementedError:
                actions = []
        if not actions:
            actions = [venv.single_action_space.sample() for _ in range(2)]
        obs, rewards, terminated, truncated, _ = venv.step(tuple(actions))
        ensure(all(isinstance(o, str) for o in obs), f"{mode} step observations {describe(obs)}")
        ensure(np.shape(rewards) == (2,), f"{mode} step rewards have shape {np.shape(rewards)}")
    finally:
        venv.close()


def _pickle(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        policy = ctx.oracle_or_none(env)
        obs, info = env.reset(seed=5)
        action = policy(env, obs, info) if policy else env.action_space.sample()
        try:
            clone = pickle.loads(pickle.dumps(env))
        except Exception as e:
            raise Fail(f"pickling mid-episode failed: {e!r}") from e
        with closing(clone):
            a, b = env.step(action), clone.step(action)
    for field, u, v in zip(_FIELDS, a, b, strict=True):
        ensure(
            data_equivalence(u, v),
            f"after a pickle round trip the next {field} differs: {describe(u)} != {describe(v)}",
        )


def _oracle(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        policy = ctx.oracle_policy(env)
        for seed in ctx.seeds:
            steps = _run_episode(env, policy, seed=seed)
            total = sum(float(s[1]) for s in steps)
            info = steps[-1][4]
            if "is_correct" in ctx.info_keys:
                ensure(info.get("is_correct"), f"seed {seed}: the oracle did not solve the task")
            ensure(math.isclose(total, 1.0, abs_tol=1e-6), f"seed {seed}: oracle return {total}")


def _garbage(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        for seed in ctx.seeds[:3] or (0,):
            steps = _run_episode(env, lambda e, o, i: ctx.garbage, seed=seed)
            total = sum(float(s[1]) for s in steps)
            ensure(total <= 0.0, f"seed {seed}: garbage {describe(ctx.garbage)} earned {total}")
            if "is_correct" in ctx.info_keys:
                ensure(not steps[-1][4].get("is_correct"), f"seed {seed}: garbage was correct")
            if "invalid_action" in ctx.step_info_keys:
                ensure(
                    any(s[4].get("invalid_action") for s in steps[1:]),
                    f"seed {seed}: garbage was never flagged `invalid_action`",
                )


def _step_in_space(base: Any, action: Any, what: str) -> tuple[Any, ...]:
    """``base.step(action)``; failing the rule if it raises or leaves the observation space."""
    transition = kit.attempt(what, base.step, action)
    obs = transition[0]
    ensure(
        obs in base.observation_space,
        f"{what} observation {describe(obs)} is not in the observation space",
    )
    return tuple(transition)


def _hostile_actions(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        base = env.unwrapped
        info: dict[str, Any] = {}
        for action in kit.HOSTILE_ACTIONS:
            base.reset(seed=0)
            what = f"step({describe(action, 40)})"
            _, reward, _, _, info = _step_in_space(base, action, what)
            ensure(type(reward) is float, f"{what} reward {describe(reward)}")
        if "action_truncated" not in ctx.step_info_keys:
            return
        limit = getattr(base.action_space, "max_length", None)
        ensure(info.get("action_truncated") is False, "a short action was flagged truncated")
        if limit is not None:
            base.reset(seed=0)
            *_, info = base.step("y" * (limit + 1))
            ensure(
                info.get("action_truncated") is True,
                f"an action of max_length + 1 = {limit + 1} chars was not flagged truncated",
            )


def _random_unicode(ctx: _Ctx) -> None:
    rng = np.random.default_rng(2024)
    with closing(ctx.new()) as env:
        base = env.unwrapped
        for episode in range(ctx.fuzz_episodes):
            base.reset(seed=episode)
            for action in kit.fuzz_actions(rng, int(rng.integers(1, 7))):
                what = f"step({describe(action)})"
                _, reward, terminated, truncated, info = _step_in_space(base, action, what)
                ensure(
                    isinstance(reward, float) and math.isfinite(reward),
                    f"{what} reward {describe(reward)}",
                )
                missing = [k for k in ctx.step_info_keys if k not in info]
                ensure(not missing, f"{what} info lacks {missing}")
                if terminated or truncated:
                    base.reset(seed=episode)


def _info_keys(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        policy = ctx.oracle_or_none(env)
        obs, info = env.reset(seed=1)
        missing = [k for k in ctx.info_keys if k not in info]
        ensure(not missing, f"reset info lacks {missing} (has {sorted(info)})")
        if "turn" in ctx.info_keys:
            ensure(info["turn"] == 0, f"reset info turn is {info['turn']}, not 0")
        action = policy(env, obs, info) if policy else env.action_space.sample()
        _, reward, _, _, info = env.step(action)
        missing = [k for k in (*ctx.info_keys, *ctx.step_info_keys) if k not in info]
        ensure(not missing, f"step info lacks {missing} (has {sorted(info)})")
        if "turn" in ctx.info_keys:
            ensure(info["turn"] == 1, f"step info turn after one action is {info['turn']}")
        weights = getattr(env.unwrapped, "reward_weights", None)
        defaults = getattr(env.unwrapped, "default_reward_weights", None)
        components = info.get("reward_components")
        if components is None or defaults is None:
            return
        ensure(
            set(components) == set(defaults),
            f"reward_components {sorted(components)} != default_reward_weights {sorted(defaults)}",
        )
        if weights is not None:
            weighted = sum(weights[k] * float(v) for k, v in components.items())
            ensure(
                math.isclose(float(reward), weighted, rel_tol=1e-9, abs_tol=1e-9),
                f"reward {reward} is not the weighted sum {weighted} of {components}",
            )


def _reset_options(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        obs_a, info_a = env.reset(seed=0, options={"index": 0})
        obs_b, _ = env.reset(seed=99, options={"index": 0})
        ensure(obs_a == obs_b, "options={'index': 0} gave different tasks for seeds 0 and 99")
        if "task_index" in ctx.info_keys:
            ensure(info_a["task_index"] == 0, f"task_index is {info_a['task_index']}, not 0")
        task = getattr(env.unwrapped, "task", None)
        if task is not None:
            obs_c, info_c = env.reset(options={"task": task})
            ensure(obs_c == obs_a, "options={'task': env.unwrapped.task} did not replay the task")
            if "task_index" in ctx.info_keys:
                ensure(
                    info_c["task_index"] is None,
                    f"a passed task record has task_index {info_c['task_index']}, not None",
                )
        kit.expect_raise(
            lambda: env.reset(options={"indx": 0}),
            "reset(options={'indx': 0}) (a typo)",
            (ValueError, gym.error.Error),
        )


def _step_before_reset(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        try:
            env.unwrapped.step("anything")
        except gym.error.ResetNeeded:
            return
        except Exception as e:
            raise Fail(
                f"step before reset raised {type(e).__name__}, not gymnasium.error.ResetNeeded"
            ) from e
        raise Fail("step before reset did not raise")


def _random_action(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        base = env.unwrapped
        if not callable(getattr(base, "random_action", None)):
            raise SkipRule("the env has no `random_action()`")
        base.reset(seed=0)
        state = base.np_random.bit_generator.state
        actions = [base.random_action() for _ in range(5)]
        bad = [a for a in actions if not (isinstance(a, str) and a in base.action_space)]
        ensure(not bad, f"random_action() gave {describe(bad)}, not strings in the action space")
        ensure(base.np_random.bit_generator.state == state, "random_action() drew from np_random")


def _docstring(ctx: _Ctx) -> None:
    with closing(ctx.new()) as env:
        kit.check_doc_sections(type(env.unwrapped))


_CHECKS: dict[str, Callable[[_Ctx], None]] = {
    "text-spaces": _text_spaces,
    "check-env": _check_env,
    "passive-checker": _passive_checker,
    "determinism": _determinism,
    "different-seeds": _different_seeds,
    "vector-sync": partial(_vector, mode="sync"),
    "vector-async": partial(_vector, mode="async"),
    "pickle": _pickle,
    "oracle": _oracle,
    "garbage": _garbage,
    "hostile-actions": _hostile_actions,
    "random-unicode": _random_unicode,
    "info-keys": _info_keys,
    "reset-options": _reset_options,
    "step-before-reset": _step_before_reset,
    "random-action": _random_action,
    "docstring": _docstring,
}
assert set(_CHECKS) == set(TEXT_ENV_RULES)
