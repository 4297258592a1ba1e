"""The public conformance kit holds a user's env to the contract and fails loudly, rule by rule.

``ReverseEnv`` is a small, correct user env (the kind the README's example checks); each
``Broken*`` env below breaks exactly one rule, and the kit must name that rule and its fix.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from rllm_envs.core import TextEnv, Transition
from rllm_envs.tasks import ProceduralTasks
from rllm_envs.testing import (
    MULTIAGENT_RULES,
    TEXT_ENV_RULES,
    ConformanceError,
    check_multiagent_env,
    check_text_env,
)

WORDS = ("kayak", "gymnasium", "entropy", "päivää", "日本語", "rocket")


def make_word(rng: np.random.Generator) -> dict:
    word = WORDS[int(rng.integers(len(WORDS)))]
    return {"word": word, "answer": word[::-1]}


class ReverseEnv(TextEnv):
    """Reverse a word.

    ## Description
    The model reverses one word, answering ``Answer: <reversed>``.

    ## Observation
    The word and the answer format.

    ## Action
    ``Answer: <text>``.

    ## Reward
    ``correct``: 1 for the reversed word.

    ## Episode End
    After one answer.

    ## Information
    The common keys of :mod:`rllm_envs.core`.

    ## Arguments
    ``task_seed`` (int).

    ## Version History
    - v0: first version.
    """

    default_reward_weights = {"correct": 1.0}

    def __init__(self, task_seed: int = 0, render_mode: str | None = None) -> None:
        tasks = ProceduralTasks(make_word, name="reverse", seed=task_seed, size=1000)
        super().__init__(tasks=tasks, max_turns=1, render_mode=render_mode)

    def _start(self, task):
        return f"Reverse the word {task['word']!r}. Reply `Answer: <reversed word>`.", {}

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        if not action.startswith("Answer: "):
            return Transition("Expected `Answer: ...`.", {"correct": 0.0}, True, False, "no answer")
        ok = action[len("Answer: ") :].strip() == self.task["answer"]
        return Transition("Correct." if ok else "Wrong.", {"correct": float(ok)}, True, ok)

    def oracle_action(self) -> str:
        assert self.task is not None
        return "Answer: " + self.task["answer"]


# ------------------------------------------------------------------------ broken envs


class AlphanumericSpaces(ReverseEnv):
    """Gymnasium's default Text charset: 'Reverse the word' is not even a member."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = gym.spaces.Text(65_536)  # type: ignore[assignment]


class GlobalRandom(ReverseEnv):
    """Draws the task from the `random` module, not `self.np_random`."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed, options={"index": random.randrange(1000)})


class HoldsALambda(ReverseEnv):
    def __init__(self) -> None:
        super().__init__()
        self.normalise = lambda text: text.strip()


class RaisesOnOddActions(ReverseEnv):
    def step(self, action):
        if not isinstance(action, str):
            raise TypeError("actions must be str")
        return super().step(action)


class WrongOracle(ReverseEnv):
    def oracle_action(self) -> str:
        assert self.task is not None
        return "Answer: " + self.task["word"]


class RewardsAnything(ReverseEnv):
    def _act(self, action: str) -> Transition:
        return Transition("Thanks!", {"correct": 1.0}, True, True)


class ForgetsTheTurn(ReverseEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        del info["turn"]
        return obs, reward, terminated, truncated, info


class IgnoresOptions(ReverseEnv):
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)


class StepsWithoutReset(ReverseEnv):
    def step(self, action):
        if self.task is None:
            return "", 0.0, True, False, {}
        return super().step(action)


class RandomActionUsesTheEpisodeRng(ReverseEnv):
    def random_action(self) -> str:
        return "Answer: " + WORDS[int(self.np_random.integers(len(WORDS)))]


class Undocumented(ReverseEnv):
    """Reverse a word (no sections)."""


class FloatObservationReward(ReverseEnv):
    """Returns a numpy reward: check_env warns about it."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, np.float32(reward), terminated, truncated, info


BROKEN = [
    (AlphanumericSpaces, "text-spaces", "UnicodeText"),
    (GlobalRandom, "determinism", "self.np_random"),
    (HoldsALambda, "pickle", "lambdas"),
    (RaisesOnOddActions, "hostile-actions", "str()"),
    (WrongOracle, "oracle", "reference answer"),
    (RewardsAnything, "garbage", "unparsable output 0"),
    (ForgetsTheTurn, "info-keys", "INFO_KEYS"),
    (IgnoresOptions, "reset-options", "select_task"),
    (StepsWithoutReset, "step-before-reset", "ResetNeeded"),
    (RandomActionUsesTheEpisodeRng, "random-action", "never `self.np_random`"),
    (Undocumented, "docstring", "## Description"),
    (FloatObservationReward, "passive-checker", "float(reward)"),
]


def test_a_correct_user_env_passes_every_rule():
    report = check_text_env(ReverseEnv)
    assert report.ok and report.failures == []
    assert report.passed == list(TEXT_ENV_RULES), report


def test_an_instance_and_a_factory_are_checked_too():
    env = ReverseEnv()
    env.reset(seed=3)
    assert check_text_env(env, rules=["pickle", "oracle"]).passed == ["pickle", "oracle"]
    report = check_text_env(lambda: ReverseEnv(task_seed=2), rules=["determinism"])
    assert report.passed == ["determinism"]


@pytest.mark.parametrize(("cls", "rule", "fix"), BROKEN, ids=[b[1] for b in BROKEN])
def test_a_broken_env_fails_loudly_naming_the_rule_and_the_fix(cls, rule, fix):
    with pytest.raises(ConformanceError) as caught:
        check_text_env(cls)
    error = caught.value
    assert rule in [f.rule.name for f in error.failures], str(error)
    message = str(error)
    assert f"[{rule}] {cls.__qualname__}" in message
    assert fix in message, message
    assert isinstance(error, AssertionError)  # pytest shows it as a plain failure


@pytest.mark.parametrize(("cls", "rule", "fix"), BROKEN, ids=[b[1] for b in BROKEN])
def test_the_broken_rule_alone_fails(cls, rule, fix):
    report = check_text_env(cls, rules=[rule], raise_on_failure=False)
    assert [f.rule.name for f in report.failures] == [rule]
    assert report.failures[0].env == cls.__qualname__


def test_a_failure_says_what_was_seen():
    report = check_text_env(WrongOracle, rules=["oracle"], raise_on_failure=False)
    assert "seed 0: the oracle did not solve the task" in report.failures[0].detail
    report = check_text_env(AlphanumericSpaces, rules=["text-spaces"], raise_on_failure=False)
    assert "rejects ordinary text" in report.failures[0].detail


def test_an_env_that_does_not_pickle_as_an_instance_fails_the_pickle_rule():
    with pytest.raises(ConformanceError, match=r"\[pickle\].*does not pickle"):
        check_text_env(HoldsALambda())


def test_rules_can_be_skipped_and_unknown_rules_are_programmer_errors():
    report = check_text_env(WrongOracle, skip=["oracle"])
    assert report.skipped == {"oracle": "skipped by the caller"}
    with pytest.raises(ValueError, match="Unknown rule"):
        check_text_env(ReverseEnv, rules=["orcale"])


def test_an_env_without_an_oracle_skips_the_oracle_rule_with_the_reason():
    class NoOracle(ReverseEnv):
        def oracle_action(self) -> str:
            raise NotImplementedError("no oracle here")

    report = check_text_env(NoOracle, rules=["oracle", "garbage"])
    assert report.passed == ["garbage"]
    assert "not implemented" in report.skipped["oracle"]
    report = check_text_env(
        NoOracle,
        rules=["oracle"],
        oracle=lambda env, obs, info: "Answer: " + env.unwrapped.task["answer"],
    )
    assert report.passed == ["oracle"]


def test_a_registered_id_with_variant_kwargs():
    report = check_text_env("rllm/Math-v1", kwargs={"difficulty": 3}, rules=["oracle"])
    assert report.env == "rllm/Math-v1(difficulty=3)" and report.passed == ["oracle"]


def test_the_kit_imports_without_pytest_or_hypothesis():
    code = (
        "import sys; sys.modules['pytest'] = None; sys.modules['hypothesis'] = None\n"
        "import rllm_envs.testing as t\n"
        "assert t.check_text_env('rllm/FrozenLake-v1', rules=['oracle']).ok\n"
        "heavy = {'torch', 'transformers', 'vllm', 'pytest', 'hypothesis'} & set(sys.modules)\n"
        "assert not {m for m in heavy if sys.modules[m] is not None}, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# The README's user env; at module level, since an env class defined in a function cannot
# pickle (the kit says so). No docstring of its own: it inherits ReverseEnv's page.
class MyEnv(ReverseEnv):
    def reference_answer(self) -> str:
        assert self.task is not None
        return "Answer: " + self.task["answer"]


def test_the_readme_example_checks_a_users_env_in_five_lines(capsys):
    from benchmarks.readme import docs_text

    readme = docs_text()
    section = readme.split("### Hold your own env to the contract", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 5
    exec(code, {"MyEnv": MyEnv})
    assert "MyEnv: 17 passed, 0 skipped, 0 failed" in capsys.readouterr().out


# ------------------------------------------------------------------------ multi-agent


def test_a_registered_multiagent_env_passes_every_rule():
    report = check_multiagent_env("rllm/TicTacToe-v0", num_cycles=10, fuzz_episodes=3)
    assert report.passed == list(MULTIAGENT_RULES)


def _broken_tictactoe(method: str, replacement):
    from rllm_envs.multiagent.tictactoe import TicTacToeEnv

    return type(f"Broken{method}", (TicTacToeEnv,), {method: replacement})


def test_a_multiagent_env_whose_step_raises_on_model_output_fails_loudly():
    from rllm_envs.multiagent.tictactoe import TicTacToeEnv

    def step(self, actions):
        for action in actions.values() if isinstance(actions, dict) else ():
            if isinstance(action, str) and "\ud800" in action:
                raise UnicodeEncodeError("utf-8", action, 0, 1, "surrogates not allowed")
        return TicTacToeEnv.step(self, actions)

    cls = _broken_tictactoe("step", step)
    with pytest.raises(ConformanceError) as caught:
        check_multiagent_env(cls, rules=["hostile-actions"])
    assert "[hostile-actions] Brokenstep" in str(caught.value)
    assert "UnicodeEncodeError" in str(caught.value)


def test_a_multiagent_env_that_builds_new_spaces_each_call_fails():
    from rllm_envs.spaces import observation_space

    cls = _broken_tictactoe("observation_space", lambda self, agent: observation_space())
    report = check_multiagent_env(cls, rules=["text-spaces"], raise_on_failure=False)
    assert [f.rule.name for f in report.failures] == ["text-spaces"]
    assert "new object on each call" in report.failures[0].detail


def test_a_multiagent_env_that_rewards_garbage_fails():
    from rllm_envs.multiagent.tictactoe import TicTacToeEnv

    def step(self, actions):
        obs, rewards, terms, truncs, infos = TicTacToeEnv.step(self, actions)
        return obs, {a: 1.0 for a in rewards}, terms, truncs, infos

    report = check_multiagent_env(
        _broken_tictactoe("step", step), rules=["oracle-beats-garbage"], raise_on_failure=False
    )
    assert [f.rule.name for f in report.failures] == ["oracle-beats-garbage"]
