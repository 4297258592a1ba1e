"""A conformance kit: hold any text env to the rllm-envs contract (like ``pettingzoo.test``).

It imports only Gymnasium, PettingZoo and NumPy (no pytest), so it runs from an installed
wheel, in your own test-suite or a notebook. Each failure names the rule that broke, what was
seen and how to fix it; :class:`ConformanceError` is an ``AssertionError``, so pytest shows it
as a plain test failure.

Check your own env in five lines::

    from rllm_envs.testing import check_text_env
    from my_package import MyTextEnv          # a gymnasium.Env[str, str]

    report = check_text_env(MyTextEnv, oracle=lambda env, obs, info: env.unwrapped.answer)
    print(report)                              # raises ConformanceError on a broken rule

``check_text_env`` takes an env id (``"rllm/Math-v1"`` with ``kwargs={"difficulty": 3}``), a
zero-argument factory (an env class counts) or an instance; ``rules=`` / ``skip=`` choose the
rules of :data:`TEXT_ENV_RULES`. ``check_multiagent_env`` does the same for PettingZoo parallel
envs with :data:`MULTIAGENT_RULES` (PettingZoo's own tests included).

``check_reward_hacking`` plays degenerate policies (echoes of the task, its math spans,
numbers and k-th tokens, words and lines, copied worked examples, literal and sampled constant
answers, NaN and infinities, reasoning words around a wrong answer, several candidates or
every answer at once, empty, huge and format-only replies, replays of other episodes) against
any single- or multi-agent env and fails, naming the policy and the fix, when one is correct
significantly more often than random guessing::

    from rllm_envs.testing import check_reward_hacking

    report = check_reward_hacking(MyTextEnv, episodes=40)   # raises RewardHackingError
    print(report)                                           # every policy, its rate and bound

Add your own policies with ``policies=[*DEGENERATE_POLICIES, my_policy]`` (see
:class:`HackPolicy` and :class:`PolicyFamily`).
"""

from rllm_envs.testing._common import (
    DOC_SECTIONS,
    GARBAGE,
    HOSTILE_ACTIONS,
    ConformanceError,
    ConformanceReport,
    Rule,
    RuleFailure,
    fuzz_actions,
)
from rllm_envs.testing.hacking import (
    DEGENERATE_POLICIES,
    LITERAL_CONSTANTS,
    LITERAL_FAMILY_VALUES,
    DegeneratePolicy,
    EpisodeMemory,
    HackContext,
    HackPolicy,
    HackReport,
    LeakScan,
    PolicyFamily,
    PolicyResult,
    RewardHackingError,
    check_reward_hacking,
    echo_family,
    keyword_family,
    literal_family,
    math_spans,
    mean_bounds,
    partly_evaluate,
    perturbed_echo_family,
    shotgun_family,
    wilson_interval,
)
from rllm_envs.testing.learned import CountRegression, FixedShape, GridDistances, SurfaceClassifier
from rllm_envs.testing.multi import AEC_ADVICE_WARNINGS, MULTIAGENT_RULES, check_multiagent_env
from rllm_envs.testing.single import TEXT_ENV_RULES, check_text_env

__all__ = [
    "check_text_env",
    "check_multiagent_env",
    "check_reward_hacking",
    "DEGENERATE_POLICIES",
    "DegeneratePolicy",
    "EpisodeMemory",
    "CountRegression",
    "FixedShape",
    "GridDistances",
    "HackContext",
    "HackPolicy",
    "HackReport",
    "LITERAL_CONSTANTS",
    "LITERAL_FAMILY_VALUES",
    "LeakScan",
    "PolicyFamily",
    "PolicyResult",
    "echo_family",
    "keyword_family",
    "literal_family",
    "RewardHackingError",
    "math_spans",
    "mean_bounds",
    "partly_evaluate",
    "perturbed_echo_family",
    "shotgun_family",
    "SurfaceClassifier",
    "wilson_interval",
    "TEXT_ENV_RULES",
    "MULTIAGENT_RULES",
    "ConformanceError",
    "ConformanceReport",
    "Rule",
    "RuleFailure",
    "DOC_SECTIONS",
    "GARBAGE",
    "HOSTILE_ACTIONS",
    "AEC_ADVICE_WARNINGS",
    "fuzz_actions",
]
