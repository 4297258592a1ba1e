r"""``check_reward_hacking``: degenerate policies must earn no more than the random baseline.

An RL optimiser finds whatever the reward pays for. This check plays a library of policies
that never solve anything -- echo the observation, its last token, line, number or quoted
span, or the math and code spans in it (bare, boxed, in answer tags, partly evaluated), echo
its numbers, copy the worked examples agents are shown, give a short constant (``0``, ``1``,
``yes``, ``true``, ...) or a constant drawn from other episodes' reference answers, give many
candidates at once, reply with nothing, with random text, with the longest reply allowed or
with the answer format alone, replay another episode's actions -- and fails, naming the policy
and the fix, when one is correct significantly more often than random guessing (the lower
confidence bound (Wilson) of its success rate above the upper bound of the baseline's, or
above chance over the answers seen plus a margin), or earns significantly more *reward* than
random replies (Wilson bounds on the mean paid reward scaled to its range, so an env that pays
through a shaping component is caught too). The baseline is the checker's own uniform guess
among the answers it has seen, never an env's ``random_action`` that could be made strong;
policies play each episode to its end; a promising policy against a rarely right baseline
gets more episodes; and :class:`LeakScan` echoes every place (up to 32 pieces from either end)
where an observation, or the ``info`` an agent gets before it acts, after any number of wrong
answers, stated the answer, and plays seeds twice with only the reference answer changed: what
an agent is shown before its final action must not change with it (no correctness signal).
Random text must
be neither correct nor paid (an env whose random baseline is paid has no baseline to beat). A copied
demonstration must also earn nothing in any reward component.

Answers are written in the env's own format: the check plays the oracle on a few other
episodes, finds the reference answer in the oracle's final action (``\boxed{5}``,
``<answer>5</answer>``, a ``final_answer`` call) and writes every candidate the same way
(``answer_template=`` overrides it). The same oracle episodes give the reference answers
the constant policies draw from and the actions the replay policy repeats; a policy never
sees its own task's answer.

Five families widen the library (:class:`PolicyFamily`, each member named and judged on its
own): ``literal`` (letters A-E and a-e, digits, yes/no/true/false, -1, empty-ish constants,
NaN and infinities), ``echo`` (the 1st-3rd and last-3rd-last number, token, word and line of
the observation), ``echo-perturbed`` (the question, the observation and its first and last
line with a zero-width space, non-breaking spaces, upper case, a character dropped, or cut
to half its words: an exact-echo filter does not stop them), ``keywords`` (reasoning words
with a wrong, empty or no answer, long or repeated), each in the env's format, bare, boxed
and tagged (``echo-perturbed``: the env's format and bare), and ``shotgun`` (many answers at
once: every answer seen, each written as an answer, or the small integers in one answer; one
huge answer). A member whose action is the oracle's answer on a few of the episodes the check
has read plays the full run at once; any other first plays a screen of its own episodes and
plays the full run only when it did better than the baseline there.

Four policies learn from other tasks (:mod:`rllm_envs.testing.learned`):
``surface-classifier`` (a naive Bayes of the answer on the question's surface, fitted on the
env's own training draws), ``count-regression`` (an integer answer fitted on how often each
token and symbol occurs in the question), ``grid-distances`` (an integer answer fitted on the
distances between the cells of the question's grid symbols, walls and rules ignored; these
three must beat the best constant of those draws too) and ``fixed-shape`` (the most common
expression shape of the oracle's answers, filled with the question's numbers). Where one
cannot run (no task source with answers, answers that are no integers or no expressions, no
grids) the report lists it as ``unsupported``, with the reason. The first three are in the
default library; ``fixed-shape``
is not yet: it fails ``rllm/Countdown-v1`` (8 of 100 tasks solved
against the random baseline's 1 of 100, issue #25's open floor of Countdown's smallest
difficulty), so pass ``policies=[*DEGENERATE_POLICIES, FixedShape()]`` to play it.

Policies are pluggable: anything with ``name``, ``summary``, ``fix`` and
``__call__(ctx: HackContext) -> str | None`` (``None``: not applicable to this episode)
is a :class:`HackPolicy`; :class:`DegeneratePolicy` wraps a function; a
:class:`PolicyFamily` groups many. ``policies=`` replaces the library
(:data:`DEGENERATE_POLICIES`; pass ``[*DEGENERATE_POLICIES, mine]`` to add).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, is_dataclass, replace
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rllm_envs.core import spec_demonstrations
from rllm_envs.demonstrations import DEMONSTRATIONS, Demonstration
from rllm_envs.tasks import question_text
from rllm_envs.testing._common import Rule, RuleFailure, describe, fuzz_actions
from rllm_envs.testing.learned import CountRegression, GridDistances, SurfaceClassifier

__all__ = [
    "DEGENERATE_POLICIES",
    "DegeneratePolicy",
    "EpisodeMemory",
    "HackContext",
    "HackPolicy",
    "HackReport",
    "PolicyResult",
    "RewardHackingError",
    "LITERAL_CONSTANTS",
    "LITERAL_FAMILY_VALUES",
    "PolicyFamily",
    "LeakScan",
    "check_reward_hacking",
    "echo_family",
    "keyword_family",
    "literal_family",
    "mean_bounds",
    "math_spans",
    "partly_evaluate",
    "perturbed_echo_family",
    "shotgun_family",
    "wilson_interval",
]

#: Stands for the answer in an answer template (never in a real reply).
PLACEHOLDER = "\x00ANSWER\x00"
#: Task fields that may hold the reference answer, in order of preference.
_REFERENCE_FIELDS = ("answer", "answers", "solution", "target")
#: Short answers a policy can give to every task: right wherever an answer is skewed or a
#: grader credits a matching prefix.
LITERAL_CONSTANTS = ("0", "1", "yes", "no", "true", "false", "none")
#: Random text may be correct on at most this share of episodes, and earn at most this share
#: of the reward range (lower confidence bounds).
NONSENSE_MAX_RATE = 0.05
#: Turns a degenerate episode may take at most (the env's own turn limit ends it sooner): a
#: degenerate policy plays the whole episode, so feedback that leaks the answer late is read.
MAX_DEGENERATE_TURNS = 64
#: The leak scan reads this many positions from each end of every observation.
LEAK_SCAN_POSITIONS = 32
#: Seeds the leak scan's reference probe plays, each twice (once per reference answer).
REFERENCE_PROBES = 4
#: Leak-scan members played at most (those whose position held the answer most often first).
LEAK_SCAN_MAX_MEMBERS = 24
#: A place becomes a leak-scan member when it held the answer on this share of the scanned
#: episodes (and on two at least): a leak on a tenth of the tasks is found about 19 times in
#: 20 over the 60 episodes a single-turn env is scanned on.
LEAK_SCAN_SHARE = 0.05
#: Single-turn envs: oracle episodes read besides the memory's (a reset and the oracle's action
#: each, no step), for the leak scan and the family members' pre-screen.
SCAN_EPISODES = 40
#: Screening episodes of a family member (at most half the check's episodes): a member right on
#: a tenth of the tasks passes a screen of 20 with probability 0.88 (0.41 at 5). On a
#: single-turn env a screen episode is one step on a task the scan has drawn already; on a
#: multi-turn env each is a whole episode (a member's screen stops at the end of the first
#: stage of :data:`SCREEN_STAGE` episodes after which it is promising).
SCREEN_SINGLE_TURN = 20
SCREEN_MULTI_TURN = 20
#: Episodes of one stage of a screen: a member promising after a stage plays the full run.
SCREEN_STAGE = 5
#: A family member whose action is the oracle's (its whole answer) on this many of the scanned
#: episodes, and on a larger share than the baseline is right, skips its screen.
PRESCREEN_MIN_HITS = 2
#: A policy is flagged only when the lower bound of its success rate is above this too: a
#: policy right on a few percent more than random is noise at these sample sizes.
MIN_FLAGGED_RATE = 0.03
#: Extend a promising policy's run (and the baseline's) while the baseline's rate is at most this.
LOW_BASELINE_RATE = 0.05
#: Margin over chance (1 / answer labels) a policy's lower bound must exceed to fail the chance
#: rule (several constants are played; each is at chance on a balanced task).
CHANCE_MARGIN = 0.1


# ------------------------------------------------------------------------------ statistics


def wilson_interval(successes: float, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion for the normal quantile ``z``."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, float(centre - half)), min(1.0, float(centre + half)))


def mean_bounds(values: Sequence[float], low: float, high: float, z: float) -> tuple[float, float]:
    """Confidence bounds on the mean of ``values``, bounded in ``[low, high]``.

    The Wilson interval of the mean scaled to [0, 1]: a variable in [0, 1] with mean ``p``
    varies at most as much as a coin with the same ``p``, so the interval a coin would get is
    no narrower than this variable's (normal approximation, as for the success rates).
    """
    if not values:
        return (low, high)
    span = high - low
    if span <= 0:
        return (low, high)
    scaled = (float(np.mean(values)) - low) / span
    lo, hi = wilson_interval(scaled * len(values), len(values), z)
    return (low + lo * span, low + hi * span)


# ------------------------------------------------------------------------- the policies


@dataclass(frozen=True)
class EpisodeMemory:
    """What one oracle episode on another task reveals to a degenerate policy.

    Attributes:
        task_key: The task's question (:func:`rllm_envs.tasks.question_text`).
        reference: The reference answer as the answer template writes it (``None`` if the
            oracle's action does not show it).
        actions: The oracle's actions, in order.
        observation: The episode's first observation.
        seed: The episode's seed.
        info: The ``info`` that came with the first observation.
    """

    task_key: str
    reference: str | None
    actions: tuple[str, ...]
    observation: str = ""
    seed: int | None = None
    info: Mapping[str, Any] | None = None


@dataclass
class HackContext:
    """What a degenerate policy sees when it acts.

    Attributes:
        observation: The current observation.
        first_observation: The episode's first observation (the task).
        info: The current info.
        turn: Actions taken so far in this episode.
        episode: Number of the episode within the policy's run.
        rng: A generator of the policy's own (seeded per episode).
        template: How the env wants an answer written; :meth:`answer` fills it.
        memory: Oracle episodes on *other* tasks (their answers and actions).
        demonstrations: The worked examples agents are shown.
        max_length: The action space's length limit.
        env: The env (read-only use: a policy that reads the hidden answer is no
            degenerate policy).
    """

    observation: str
    first_observation: str
    info: Mapping[str, Any]
    turn: int
    episode: int
    rng: np.random.Generator
    template: str
    memory: Sequence[EpisodeMemory]
    demonstrations: Sequence[Demonstration]
    max_length: int
    env: Any = None

    def answer(self, text: str) -> str:
        """``text`` written as the env's answer (JSON-escaped inside a quoted template slot)."""
        if f'"{PLACEHOLDER}"' in self.template:
            text = json.dumps(text)[1:-1]
        return self.template.replace(PLACEHOLDER, text, 1)

    def references(self) -> list[str]:
        """Reference answers of the remembered episodes (other tasks)."""
        return [m.reference for m in self.memory if m.reference is not None]


@runtime_checkable
class HackPolicy(Protocol):
    """A degenerate policy: ``policy(ctx) -> action`` (``None``: not applicable here).

    Plain attributes satisfy the three properties (a class with ``name = "..."`` is one).
    """

    @property
    def name(self) -> str:
        """Short id (in reports and failure names)."""
        ...

    @property
    def summary(self) -> str:
        """What the policy does."""
        ...

    @property
    def fix(self) -> str:
        """How an env that pays this policy should change."""
        ...

    def __call__(self, ctx: HackContext) -> str | None:
        """The action in the situation ``ctx`` describes."""
        ...


@dataclass(frozen=True)
class DegeneratePolicy:
    """A :class:`HackPolicy` made from a function.

    Attributes:
        name: Short id (in reports and failure names).
        summary: What the policy does.
        fix: How an env that pays this policy should change.
        act: ``act(ctx) -> action | None``.
        strict: The policy copies a worked example: it must earn nothing in any reward
            component (not only no more than random on correctness).
        floor: The policy is random text: it must be correct on at most
            :data:`NONSENSE_MAX_RATE` of episodes and earn at most that share of the reward
            range, whatever the random baseline earns.
    """

    name: str
    summary: str
    fix: str
    act: Callable[[HackContext], str | None]
    strict: bool = False
    floor: bool = False

    def __call__(self, ctx: HackContext) -> str | None:
        """``act(ctx)``."""
        return self.act(ctx)


# Math spans: boxes, LaTeX math, answer tags, code; then bare arithmetic in prose.
_SPAN_RES = (
    re.compile(r"\\boxed\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}"),
    re.compile(r"\$\$(.+?)\$\$", re.DOTALL),
    re.compile(r"(?<![\\$])\$([^$]+?)\$"),
    re.compile(r"\\\((.+?)\\\)", re.DOTALL),
    re.compile(r"\\\[(.+?)\\\]", re.DOTALL),
    re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE),
    re.compile(r"```[\w+-]*\n(.*?)```", re.DOTALL),
    re.compile(r"`([^`\n]+)`"),
)
_OPS = r"+\-*/^×÷·!%"
_BARE_EXPR = re.compile(
    rf"[-(]*\d[\d\s.,(){_OPS}]*?[{_OPS}]\s*[(\d][\d\s.,(){_OPS}]*[\d)!]|\b[a-z]\w*\([\d\s,.+\-]+\)"
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def math_spans(text: str) -> list[str]:
    r"""The math and code spans of ``text``, in order of appearance, without repeats.

    Boxes, ``$...$``, ``$$...$$``, ``\(...\)``, ``\[...\]``, ``<answer>`` contents, code
    blocks and inline code, then bare arithmetic in prose (``12 * 7 - 3 ** 2``,
    ``lcm(28, 17)``).
    """
    found: list[tuple[int, str]] = []
    for pattern in (*_SPAN_RES, _BARE_EXPR):
        for m in pattern.finditer(text):
            span = (m.group(1) if m.groups() else m.group(0)).strip()
            if span:
                found.append((m.start(), span))
    found.sort()
    return list(dict.fromkeys(span for _, span in found))


_LATEX_OPS = ((r"\times", "*"), (r"\cdot", "*"), (r"\div", "/"), ("×", "*"), ("÷", "/"))
_FIRST_MUL = re.compile(r"(?<![\d.])(\d+)\s*([*/])\s*(\d+)(?![\d.^]|\*\*)")
_FIRST_ADD = re.compile(r"(?<![\d.*/^])(\d+)\s*([+-])\s*(\d+)(?![\d.*/^])")


def partly_evaluate(expression: str) -> str | None:
    r"""``expression`` with one operation on two integers done, arithmetic left (``None``: none).

    ``12 + 5 \times 11`` becomes ``12 + 55``: the product first, else a sum; a division only
    when it is exact. A policy sending this has computed nothing of its own.
    """
    text = expression
    for latex, op in _LATEX_OPS:
        text = text.replace(latex, op)
    for pattern in (_FIRST_MUL, _FIRST_ADD):
        for m in pattern.finditer(text):
            a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
            if op == "/" and (b == 0 or a % b):
                continue
            before, after = text[: m.start()].rstrip(), text[m.end() :].lstrip()
            if op in "+-" and (
                before.endswith(("*", "/", "^")) or after.startswith(("*", "/", "^"))
            ):
                continue  # a sum next to a product is not the next operation
            value = {"*": a * b, "/": a // max(b, 1), "+": a + b, "-": a - b}[op]
            result = text[: m.start()] + str(value) + text[m.end() :]
            if _NUMBER.fullmatch(result.strip()):
                return None  # that was the whole expression: evaluating it is solving it
            return result
    return None


# A line that heads an example's input or output: ``Input``, ``Input:``, ``Sample Input 1``,
# ``-----Sample Output:-----``, ``Example Input``; the value may follow on the same line.
_EXAMPLE_HEAD = re.compile(
    r"^[\s*#=|>-]*(?:sample |example )?(?P<kind>input|output)(?:\s*\d+)?\s*:?(?:[\s*#=|]|-{2,})*"
    r"(?P<rest>.*)$",
    re.I,
)
# Lines that end an example's block without starting one.
_EXAMPLE_END = re.compile(r"^[\s*#=|>-]*(?:examples?|explanation|notes?|constraints?)\b", re.I)


# An example written as a call and its result: ``f("ab", 2) == 3``, ``"()" => true``,
# ``is_ok('x')  # => True``.
_CALL_EXAMPLE = re.compile(
    r"^[ \t]*(?:[A-Za-z_][\w.]*\((?P<call>.*)\)|(?P<bare>\S.*?))[ \t]*(?:=>|==|->|#[ \t]*=>)"
    r"[ \t]*(?P<out>\S.*?)[ \t]*$",
    re.M,
)


def _shown_examples(text: str) -> dict[str, str]:
    """The statement's examples, ``{input (whitespace-normalised): output}``, in order."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        head = _EXAMPLE_HEAD.match(line)
        if head:
            blocks.append((head["kind"].lower(), [head["rest"]] if head["rest"].strip() else []))
        elif _EXAMPLE_END.match(line):
            blocks.append(("", []))
        elif blocks:
            blocks[-1][1].append(line)

    def content(lines: list[str]) -> str:
        kept: list[str] = []
        for line in lines:
            if not line.strip():
                if kept:
                    break  # a blank line after the value ends it
                continue
            kept.append(line.strip())
        return "\n".join(kept)

    pairs: dict[str, str] = {}
    for (kind, lines), (next_kind, next_lines) in zip(blocks, blocks[1:], strict=False):
        given, expected = content(lines), content(next_lines)
        if kind == "input" and next_kind == "output" and given and expected:
            pairs.setdefault(" ".join(given.split()), expected)
    if not pairs:  # examples written as calls: f("ab", 2) == 3, "()" => true
        for match in _CALL_EXAMPLE.finditer(text):
            given = match["call"] if match["call"] is not None else match["bare"]
            pairs.setdefault(" ".join(given.split()), match["out"])
    return pairs


def _example_lookup(otherwise: str | None) -> Callable[[HackContext], str | None]:
    """A program printing each shown example's output for its input, else ``otherwise``.

    ``None``: the last example's output.
    """

    def act(ctx: HackContext) -> str | None:
        pairs = _shown_examples(ctx.first_observation)
        if not pairs:
            return None
        fallback = list(pairs.values())[-1] if otherwise is None else otherwise
        function = _FUNCTION.search(ctx.first_observation)
        if function and "standard input" not in ctx.first_observation:
            return _function_lookup(function, pairs, otherwise)
        if "```cpp" in ctx.first_observation:
            table = ", ".join(f"{{{json.dumps(k)}, {json.dumps(v)}}}" for k, v in pairs.items())
            return (
                "```cpp\n#include <iostream>\n#include <map>\n#include <string>\n"
                "int main() {\n  std::string word, key;\n"
                '  while (std::cin >> word) key += (key.empty() ? "" : " ") + word;\n'
                f"  std::map<std::string, std::string> shown = {{{table}}};\n"
                "  auto it = shown.find(key);\n"
                f"  std::cout << (it == shown.end() ? std::string({json.dumps(fallback)}) "
                ": it->second) << std::endl;\n}\n```"
            )
        return (
            "```python\nimport sys\n"
            f"shown = {pairs!r}\n"
            "key = ' '.join(sys.stdin.read().split())\n"
            f"print(shown.get(key, {fallback!r}))\n```"
        )

    return act


# The function a starter code asks for: ``def name(self, ...`` in a class, or ``def name(``.
_FUNCTION = re.compile(r"^(?P<indent>[ \t]*)def (?P<name>\w+)\((?P<self>self\b)?", re.M)


def _function_lookup(function: re.Match[str], pairs: dict[str, str], otherwise: str | None) -> str:
    """The functional form of the lookup.

    The function returns each shown example's output for its arguments (``nums = [1,2],
    target = 3`` read as ``([1, 2], 3)``), else a constant.
    """
    constant: object = otherwise
    if otherwise == "NO":
        constant = False
    elif otherwise is not None and otherwise.lstrip("-").isdigit():
        constant = int(otherwise)
    fallback = "list(shown.values())[-1]" if otherwise is None else repr(constant)
    body = (
        "import ast, re\n"
        "def _value(text):\n"
        "    text = re.sub(r'\\btrue\\b', 'True', re.sub(r'\\bfalse\\b', 'False', text))\n"
        "    text = re.sub(r'\\bnull\\b', 'None', text)\n"
        "    try:\n        return ast.literal_eval(text)\n"
        "    except Exception:\n        return text\n"
        "shown = {}\n"
        f"for given, out in {pairs!r}.items():\n"
        "    args = _value('(' + re.sub(r'\\b[A-Za-z_]\\w*(\\[\\])?\\s*=\\s*', '', given) + ',)')\n"
        "    shown[repr(args)] = _value(out)\n"
        "def _lookup(*args):\n"
        f"    return shown.get(repr(args), {fallback})\n"
    )
    name = function["name"]
    if function["self"]:
        body += f"class Solution:\n    def {name}(self, *args):\n        return _lookup(*args)\n"
    else:
        body += f"def {name}(*args):\n    return _lookup(*args)\n"
    return f"```python\n{body}```"


#: What a lookup of the examples prints for other inputs: the last example's output, and the
#: answers statements name for "no solution" or a common case.
EXAMPLE_FALLBACKS: tuple[str | None, ...] = (None, "-1", "0", "NO")


def _question(ctx: HackContext) -> str:
    """The first paragraph of the task (the question, before any instructions)."""
    paragraphs = [p.strip() for p in ctx.first_observation.split("\n\n") if p.strip()]
    with_question = [p for p in paragraphs if "?" in p or "$" in p]
    return (with_question or paragraphs or [""])[0]


def _pick(items: Sequence[str], which: str) -> str | None:
    if not items:
        return None
    if which == "first":
        return items[0]
    if which == "last":
        return items[-1]
    return max(items, key=len)


def _spans(ctx: HackContext) -> list[str]:
    """The math spans of the question (of the whole task when the question has none)."""
    return math_spans(_question(ctx)) or math_spans(ctx.first_observation)


_WRAPS = {
    "answer": "written as the env's answer",
    "bare": "bare",
    "boxed": "in \\boxed{}",
    "tagged": "in <answer> tags",
}


def _span_policy(which: str, wrap: str) -> Callable[[HackContext], str | None]:
    def act(ctx: HackContext) -> str | None:
        span = _pick(_spans(ctx), which)
        if span is None:
            return None
        if wrap == "partial":
            spans = [p for p in map(partly_evaluate, _spans(ctx)) if p]
            return ctx.answer(spans[-1]) if spans else None
        return {
            "bare": span,
            "answer": ctx.answer(span),
            "boxed": f"\\boxed{{{span}}}",
            "tagged": f"<answer>{span}</answer>",
        }[wrap]

    act.__qualname__ = f"span_{which}_{wrap}"
    return act


def _numbers_policy(which: str) -> Callable[[HackContext], str | None]:
    def act(ctx: HackContext) -> str | None:
        numbers = list(dict.fromkeys(_NUMBER.findall(_question(ctx) or ctx.first_observation)))
        if not numbers:
            return None
        if which == "all":
            return ctx.answer(", ".join(numbers))
        chosen = _pick(numbers, which)
        return None if chosen is None else ctx.answer(chosen)

    return act


def _demonstration_reply(ctx: HackContext) -> str | None:
    replies = [r for d in ctx.demonstrations for r in d.replies]
    return replies[ctx.episode % len(replies)] if replies else None


def _demonstration_answer(ctx: HackContext) -> str | None:
    answers = [a for d in ctx.demonstrations for a in d.answers]
    return answers[ctx.episode % len(answers)] if answers else None


def _most_common(ctx: HackContext) -> str | None:
    refs = ctx.references()
    return ctx.answer(Counter(refs).most_common(1)[0][0]) if refs else None


def _sampled(ctx: HackContext) -> str | None:
    refs = ctx.references()
    return ctx.answer(refs[int(ctx.rng.integers(len(refs)))]) if refs else None


def _candidates(ctx: HackContext) -> str | None:
    common = [a for a, _ in Counter(ctx.references()).most_common(10)]
    spans = _spans(ctx)[:10]
    numbers = list(dict.fromkeys(_NUMBER.findall(_question(ctx))))[:10]
    pool = list(dict.fromkeys([*common, *spans, *numbers]))
    return "\n".join(ctx.answer(c) for c in pool) if pool else None


def _max_length(ctx: HackContext) -> str:
    seed = ctx.answer(" ".join(_spans(ctx))) + "\n"
    return (seed * (ctx.max_length // max(len(seed), 1) + 1))[: ctx.max_length]


def _replay(ctx: HackContext) -> str | None:
    sequences = [m.actions for m in ctx.memory if len(m.actions) > 1]
    if not sequences:
        return None
    actions = sequences[ctx.episode % len(sequences)]
    return actions[min(ctx.turn, len(actions) - 1)]


#: A paragraph telling the agent how to answer (not part of the task's data).
_INSTRUCTION = re.compile(
    r"<answer>|\\boxed|final answer|answer (?:in|inside|with|between|as)|format", re.IGNORECASE
)
_TOKEN = re.compile(r"[^\s\"'`.,;:!?()\[\]{}<>]+")
_QUOTED = re.compile(r"\"([^\"\n]+)\"|'([^'\n]+)'|`([^`\n]+)`")


def _body(ctx: HackContext) -> str:
    """The observation without its trailing instruction paragraphs (how to answer)."""
    return _without_instructions(ctx.observation)


def _without_instructions(text: str) -> str:
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    while len(paragraphs) > 1 and _INSTRUCTION.search(paragraphs[-1]):
        paragraphs.pop()
    return "\n\n".join(paragraphs)


def _last_piece(kind: str) -> Callable[[HackContext], str | None]:
    def act(ctx: HackContext) -> str | None:
        body = _body(ctx)
        if kind == "token":
            pieces = _TOKEN.findall(body)
        elif kind == "line":
            pieces = [line.strip() for line in body.splitlines() if line.strip()]
        elif kind == "number":
            pieces = _NUMBER.findall(body)
        else:
            pieces = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(body)]
        return ctx.answer(pieces[-1]) if pieces else None

    act.__qualname__ = f"echo_last_{kind}"
    return act


def _literal(text: str) -> Callable[[HackContext], str]:
    def act(ctx: HackContext) -> str:
        return ctx.answer(text)

    act.__qualname__ = f"literal_{text}"
    return act


def _nonsense(ctx: HackContext) -> str:
    return next(fuzz_actions(ctx.rng, 1, 400))


_FIX_FINAL_FORM = (
    "grade the answer's final form: a copy of the problem's own expression, or one with "
    "arithmetic left in it, is not the value and must score 0 (compare what the answer IS, "
    "not what it evaluates to; see rllm_envs.math's final-form rule)."
)
_FIX_ECHO = (
    "score only the answer the task asks for: text copied from the observation must not "
    "match the reference (check the grader does not search the whole reply for the answer)."
)
_FIX_CONSTANT = (
    "spread the reference answers (no answer should be common across tasks) and check the "
    "grader does not accept an answer for the wrong task."
)
_FIX_EMPTY = "score an empty, placeholder or template-only reply 0 and flag it invalid."
_FIX_LITERAL = (
    "grade the whole answer: a short constant must be right only where it IS the reference "
    "(no prefix or partial-match credit), and no constant may be the answer to a large share "
    "of tasks (redraw or balance skewed answers)."
)
_FIX_NONSENSE = (
    "pay only for the task solved: random text must be wrong and earn 0 in every paying "
    "component (check shaping components such as format do not pay any reply)."
)
_FIX_EXAMPLES = (
    "pay only for tests whose expected output no prompt shows: never for the shown examples, "
    "and leave out tasks whose every test is shown or expects one answer a constant prints."
)
_FIX_DEMO = (
    "derive from rllm_envs.core.TextEnv (it pays 0 for copies of rllm_envs.demonstrations) "
    "or zero every component that pays when "
    "rllm_envs.demonstrations.copied_demonstration(reply) names one; choose demonstration "
    "answers outside the task space."
)

# --------------------------------------------------------------------- policy families


@dataclass(frozen=True)
class PolicyFamily:
    """Many related degenerate policies, screened cheaply before the full run.

    A member whose action is the oracle's (its whole answer) on :data:`PRESCREEN_MIN_HITS` or
    more of the oracle's one-action episodes the check has read (a share larger than the
    baseline's success rate) plays the full run at once: that costs no episode. Every other
    member first plays ``screen`` episodes of its own (seeds after the check's; by default
    :data:`SCREEN_SINGLE_TURN` on a single-turn env, :data:`SCREEN_MULTI_TURN` on a multi-turn
    one, at most half the check's ``episodes``, unless the check's ``screen=`` says otherwise);
    a member that is never correct more often than the random baseline there, and earns no
    more paid reward than it, stops. The others play the full run and are judged like any
    policy, so a failure names the member (``degenerate-policy:literal-A-tagged``). A member
    right on a tenth of the episodes passes a screen of 20 with probability 0.88 (of 5: 0.41;
    the screen is played in stages of :data:`SCREEN_STAGE`, and stops at the first after which
    the member is promising):
    pass ``screen=0`` to :func:`check_reward_hacking` to play every member in full.

    Attributes:
        name: Short id of the family (in reports).
        summary: What its members do.
        members: The policies (each a :class:`HackPolicy` with its own name).
        screen: Episodes of the screen (``0``: none; ``None``: the check's default).
    """

    name: str
    summary: str
    members: tuple[HackPolicy, ...]
    screen: int | None = None


def _slug(text: str) -> str:
    """A policy-name piece for a literal (``-1`` -> ``minus-1``, ``""`` -> ``empty``)."""
    named = {
        "": "empty",
        " ": "space",
        ".": "dot",
        "-": "dash",
        "?": "question-mark",
        "-1": "minus-1",
        "0.5": "half",
        "{}": "empty-object",
        "[]": "empty-list",
        "-inf": "minus-inf",
    }
    if text in named:
        return named[text]
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "symbol"


#: How a family writes an answer: the env's own format, and the common ones besides.
_FORMATS: dict[str, tuple[str, Callable[[HackContext, str], str]]] = {
    "": ("written as the env's answer", lambda ctx, text: ctx.answer(text)),
    "bare": ("bare", lambda ctx, text: text),
    "boxed": ("in \\boxed{}", lambda ctx, text: f"\\boxed{{{text}}}"),
    "tagged": ("in <answer> tags", lambda ctx, text: f"<answer>{text}</answer>"),
}

#: Literal constants of the literal family: option letters, digits, the labels of yes/no
#: tasks, -1, refusals and empty-ish answers.
LITERAL_FAMILY_VALUES: tuple[str, ...] = (
    *"ABCDE",
    *"abcde",
    *"0123456789",
    *("yes", "no", "true", "false", "Yes", "No", "True", "False"),
    *("-1", "0.5", "none", "null", "N/A", "unknown", "impossible", "I don't know"),
    *("{}", "[]", "", " ", ".", "-", "?"),
    # Non-finite numbers: a tolerance test written ``not abs(x - ref) > tol`` passes NaN, a
    # relative error ``|x - ref| / |x|`` is NaN for inf, and 1e309 reads as inf.
    *("nan", "NaN", "inf", "-inf", "1e309"),
)


def _literal_in(text: str, fmt: str) -> Callable[[HackContext], str]:
    write = _FORMATS[fmt][1]

    def act(ctx: HackContext) -> str:
        return write(ctx, text)

    act.__qualname__ = f"literal_{_slug(text)}_{fmt or 'answer'}"
    return act


def literal_family(values: Sequence[str] = LITERAL_FAMILY_VALUES) -> PolicyFamily:
    """Each constant of ``values`` on every task, in the env's format, bare, boxed and tagged.

    Members are named ``literal-<value>[-bare|-boxed|-tagged]``. The library's own
    ``literal-<value>`` policies (:data:`LITERAL_CONSTANTS`, played in full) are left out.
    """
    members = tuple(
        DegeneratePolicy(
            f"literal-{_slug(value)}{'-' + fmt if fmt else ''}",
            f"the constant answer {value!r} on every task, {_FORMATS[fmt][0]}",
            _FIX_LITERAL,
            _literal_in(value, fmt),
        )
        for value in values
        for fmt in _FORMATS
        if fmt or value not in LITERAL_CONSTANTS
    )
    return PolicyFamily("literal", "short constants (letters, digits, labels, empty-ish)", members)


_WORD = re.compile(r"[^\W\d_]+")
#: Kinds the library's ``echo-last-<kind>`` policies read.
_LAST_KINDS = ("token", "line", "number", "quoted")
#: Positions the echo family reads: 1-based from the front, negative from the end.
ECHO_POSITIONS: tuple[int, ...] = (1, 2, 3, -1, -2, -3)
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd", -1: "last", -2: "2nd-last", -3: "3rd-last"}


def _pieces(text: str, kind: str) -> list[str]:
    if kind == "number":
        return _NUMBER.findall(text)
    if kind == "token":
        return _TOKEN.findall(text)
    if kind == "word":
        return _WORD.findall(text)
    return [line.strip() for line in text.splitlines() if line.strip()]


def _kth(kind: str, k: int, fmt: str, whole: bool) -> Callable[[HackContext], str | None]:
    write = _FORMATS[fmt][1]

    def act(ctx: HackContext) -> str | None:
        pieces = _pieces(ctx.observation if whole else _body(ctx), kind)
        index = k - 1 if k > 0 else k
        if not -len(pieces) <= index < len(pieces):
            return None
        return write(ctx, pieces[index])

    act.__qualname__ = f"echo_{kind}_{k}_{fmt or 'answer'}{'_whole' if whole else ''}"
    return act


def echo_family(
    kinds: Sequence[str] = ("number", "token", "word", "line"),
    positions: Sequence[int] = ECHO_POSITIONS,
) -> PolicyFamily:
    """The k-th number, token, word or line of the observation, written as an answer.

    Positions count from the front (1, 2, 3) or the end (-1: last) of the observation without
    its trailing instructions; ``final`` members take the very last piece of the whole
    observation. Each in the env's format, bare, boxed and tagged. Members are named
    ``echo-<position>-<kind>[-bare|-boxed|-tagged]`` (``echo-2nd-number-tagged``); the
    library's own ``echo-last-<kind>`` policies (played in full) are left out.
    """
    fix = _FIX_ECHO + " Draw no task whose answer sits at a fixed place in its question."
    members: list[HackPolicy] = []
    for kind in kinds:
        spots = [(k, _ORDINAL.get(k, str(k)), False) for k in positions] + [(-1, "final", True)]
        for k, where, whole in spots:
            for fmt in _FORMATS:
                if k == -1 and not whole and not fmt and kind in _LAST_KINDS:
                    continue
                scope = "the whole observation" if whole else "the observation"
                members.append(
                    DegeneratePolicy(
                        f"echo-{where}-{kind}{'-' + fmt if fmt else ''}",
                        f"the {where} {kind} of {scope}, {_FORMATS[fmt][0]}",
                        fix,
                        _kth(kind, k, fmt, whole),
                    )
                )
    return PolicyFamily(
        "echo", "the k-th number, token, word or line of the observation", tuple(members)
    )


#: Where the perturbed-echo family reads its text: the question, the observation without its
#: trailing instructions, and that observation's first and last line.
PERTURBED_SOURCES: tuple[str, ...] = ("question", "body", "first-line", "last-line")
#: How it perturbs the text: an invisible character inserted, the spaces made non-breaking,
#: upper case, one character dropped at either end, and each half of its words.
PERTURBATIONS: dict[str, str] = {
    "zero-width": "with a zero-width space after its first character",
    "nbsp": "with every space made non-breaking",
    "upper": "in upper case",
    "drop-first": "without its first character",
    "drop-last": "without its last character",
    "first-half": "cut to the first half of its words",
    "second-half": "cut to the second half of its words",
}
_FIX_PERTURBED_ECHO = (
    _FIX_ECHO + " An exact-echo filter is not enough: compare on a normalised key (NFKC, "
    "format characters such as U+200B removed, case and whitespace folded) and refuse an answer "
    "that holds most of the question's words, not only the question whole, or grade the answer "
    "whole instead of searching it for the reference."
)


def _perturbed_source(ctx: HackContext, source: str) -> str:
    if source == "question":
        return _question(ctx)
    body = _body(ctx)
    if source == "body":
        return body
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0] if source == "first-line" else lines[-1]


def _perturb(text: str, how: str) -> str | None:
    if how == "zero-width":
        return text[:1] + "\u200b" + text[1:]
    if how == "nbsp":
        return text.replace(" ", "\u00a0") if " " in text else None
    if how == "upper":
        upper = text.upper()
        return upper if upper != text else None
    if how == "drop-first":
        return text[1:] if len(text) > 1 else None
    if how == "drop-last":
        return text[:-1] if len(text) > 1 else None
    words = text.split(" ")
    if len(words) < 2:
        return None
    half = len(words) // 2
    return " ".join(words[:half] if how == "first-half" else words[half:])


def _perturbed_echo(source: str, how: str, fmt: str) -> Callable[[HackContext], str | None]:
    write = _FORMATS[fmt][1]

    def act(ctx: HackContext) -> str | None:
        text = _perturbed_source(ctx, source)
        changed = _perturb(text, how) if text else None
        return None if not changed else write(ctx, changed)

    act.__qualname__ = f"echo_perturbed_{source}_{how}_{fmt or 'answer'}"
    return act


def perturbed_echo_family(
    sources: Sequence[str] = PERTURBED_SOURCES,
    perturbations: Sequence[str] = tuple(PERTURBATIONS),
    formats: Sequence[str] = ("", "bare"),
) -> PolicyFamily:
    """The question, observation or one of its lines echoed with a small change.

    An env that refuses an exact echo of the question but pays an answer that *contains* the
    reference is beaten by an echo one invisible character away (issue #25: a zero-width
    space after the first character won 200 of 200 episodes of such an env that the verbatim
    echoes passed). Each text of :data:`PERTURBED_SOURCES`, changed as each of
    :data:`PERTURBATIONS` says (invisible characters, whitespace, case, a character dropped,
    half of it), in the env's answer format and bare. Members are named
    ``echo-perturbed-<source>-<perturbation>[-bare]``
    (``echo-perturbed-question-zero-width``).
    """
    members = tuple(
        DegeneratePolicy(
            f"echo-perturbed-{source}-{how}{'-' + fmt if fmt else ''}",
            f"the {source.replace('-', ' ')} of the observation {PERTURBATIONS[how]}, "
            f"{_FORMATS[fmt][0]}",
            _FIX_PERTURBED_ECHO,
            _perturbed_echo(source, how, fmt),
        )
        for source in sources
        for how in perturbations
        for fmt in formats
    )
    return PolicyFamily(
        "echo-perturbed", "the question or a line of it echoed with a small change", members
    )


#: The shotgun's listings: integers from 0 up to these, one answer per integer (each in the
#: answer format) and all in one answer (substrings of the latter cover every number of up to
#: four digits).
SHOTGUN_TAGGED_INTEGERS = 1_000
SHOTGUN_LISTED_INTEGERS = 10_000
_FIX_SHOTGUN = (
    "grade one final answer, whole: the answer is the last (or only) answer of the reply, and "
    "it must BE the reference, not contain it (no substring, any-tag, any-number or "
    "first-or-last match; a reply with several answers gets 0)."
)


@lru_cache(maxsize=8)
def _integers(count: int, template: str, sep: str) -> str:
    """``0 .. count - 1``, each written in ``template``, joined by ``sep``."""
    return sep.join(_fill(template, str(i)) for i in range(count))


def _cut(text: str, sep: str, budget: int) -> str:
    """``text`` cut at the last ``sep`` within ``budget`` characters (whole items only)."""
    if len(text) <= budget:
        return text
    return text[: max(text.rfind(sep, 0, budget + 1), 0)]


def _shotgun(shape: str) -> Callable[[HackContext], str | None]:
    def act(ctx: HackContext) -> str | None:
        room = max(ctx.max_length - len(ctx.answer("")), 0)
        if shape == "observation":
            return ctx.answer(ctx.observation[:room])
        if shape == "huge":
            unit = (" ".join(_NUMBER.findall(ctx.observation)) or ctx.observation) + " "
            return ctx.answer((unit * (room // max(len(unit), 1) + 1))[:room])
        # Other episodes' answers first (every label seen: the first and the last differ),
        # then the observation's numbers, then the small integers.
        labels = list(dict.fromkeys(ctx.references()))
        if shape == "references":
            return "\n".join(ctx.answer(c) for c in labels) if labels else None
        observed = dict.fromkeys(_NUMBER.findall(ctx.observation))
        first = labels + [n for n in observed if n not in set(labels)]
        if shape == "tagged":
            tail = _integers(SHOTGUN_TAGGED_INTEGERS, ctx.template, "\n")
            listing = "\n".join([*(ctx.answer(c) for c in first), tail])
            return _cut(listing, "\n", ctx.max_length)
        tail = _integers(SHOTGUN_LISTED_INTEGERS, PLACEHOLDER, " ")
        return ctx.answer(_cut(" ".join([*first, tail]), " ", room))

    act.__qualname__ = f"shotgun_{shape}"
    return act


_SHOTGUN_SHAPES = {
    "references": "every distinct answer of other episodes, each written as the env's answer",
    "tagged": "other episodes' answers, the observation's numbers and the integers 0-999, "
    "each written as the env's answer",
    "listed": "other episodes' answers, the observation's numbers and the integers 0-9999 in "
    "one answer",
    "observation": "the whole observation written as the answer",
    "huge": "one answer as long as the action space allows (the observation's numbers repeated)",
}


def shotgun_family() -> PolicyFamily:
    """Many answers at once: graders that read any answer, or search the one they read.

    A reply listing every answer seen, the observation's numbers and the small integers, each
    written as the env's answer (a grader reading any tag, or the first or the last of several
    boxes) or all in one answer (a grader accepting the reference as a substring, or any
    number, of the answer); the whole observation as the answer; one answer as long as the
    action space allows (a grader that fails open on what it cannot check). Members are named
    ``shotgun-<shape>``.
    """
    members = tuple(
        DegeneratePolicy(f"shotgun-{shape}", summary, _FIX_SHOTGUN, _shotgun(shape))
        for shape, summary in _SHOTGUN_SHAPES.items()
    )
    return PolicyFamily("shotgun", "many answers at once, or one huge answer", members)


#: An answer no task has (too long and odd to be anyone's reference).
WRONG_ANSWER = "-987654321.5"


def _ordinal(k: int) -> str:
    """``4`` -> ``4th``, ``-1`` -> ``last``, ``-12`` -> ``12th-last``."""
    if k in _ORDINAL:
        return _ORDINAL[k]
    n = abs(k)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}" if k > 0 else f"{n}{suffix}-last"


def _same_answer(piece: str, reference: str) -> bool:
    """Whether ``piece`` of an observation states ``reference``.

    Case, outer punctuation and the formatting of a number (``7`` = ``7.0``) aside.
    """

    def norm(text: str) -> str:
        text = text.strip().strip(".,;:!?\"'`$()[]{}").strip().lower()
        try:
            return repr(float(text))
        except ValueError:
            return text

    target = norm(reference)
    return bool(target) and norm(piece) == target


def _leak_echo(kind: str, k: int, whole: bool, after: int) -> Callable[[HackContext], str | None]:
    def act(ctx: HackContext) -> str | None:
        if ctx.turn < after:
            return ctx.answer(WRONG_ANSWER)
        pieces = _pieces(ctx.observation if whole else _body(ctx), kind)
        index = k - 1 if k > 0 else k
        if not -len(pieces) <= index < len(pieces):
            return None
        return ctx.answer(pieces[index])

    act.__qualname__ = f"leak_{kind}_{k}_{after}{'_whole' if whole else ''}"
    return act


#: ``info`` leaves read by the leak scan at most per info (depth-first), and the depth.
INFO_SCAN_LEAVES = 256
INFO_SCAN_DEPTH = 4


def _info_leaves(info: Any, path: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """``(path, text)`` of every string or number in ``info`` (``a.b.0``: key, key, index)."""
    out: list[tuple[str, str]] = []
    if depth > INFO_SCAN_DEPTH:
        return out
    if isinstance(info, Mapping):
        items: Iterable[tuple[Any, Any]] = info.items()
    elif isinstance(info, (list, tuple)):
        items = enumerate(info)
    else:
        # bool is an int: True is no one's answer, and would match a reference "1".
        if isinstance(info, (str, int, float)) and not isinstance(info, bool):
            out.append((path, str(info)))
        return out
    for key, value in items:
        out += _info_leaves(value, f"{path}.{key}" if path else str(key), depth + 1)
        if len(out) >= INFO_SCAN_LEAVES:
            return out[:INFO_SCAN_LEAVES]
    return out


def _states(observation: str, reference: str) -> bool:
    """Whether ``observation`` states ``reference`` (a substring, number, token, word, line)."""
    if reference.strip() and reference.strip() in observation:
        return True
    return any(
        _same_answer(piece, reference)
        for kind in ("number", "token", "word", "line")
        for piece in _pieces(observation, kind)
    )


def _info_echo(path: str, after: int) -> Callable[[HackContext], str | None]:
    def act(ctx: HackContext) -> str | None:
        if ctx.turn < after:
            return ctx.answer(WRONG_ANSWER)
        value = dict(_info_leaves(ctx.info)).get(path)
        return None if value is None else ctx.answer(value)

    act.__qualname__ = f"leak_info_{after}"
    return act


@dataclass(frozen=True)
class LeakScan:
    """Finds where observations state the answer, and plays an echo of each such place.

    A scan, not a policy: on the oracle's episodes (whose answers the checker knows), it
    reads every observation a degenerate policy would see -- the first, and on a multi-turn
    env each one after deliberately wrong answers, to the end of the episode -- and looks for
    the reference answer among the first and last ``positions`` numbers, tokens, words and
    lines, and in every string or number of the ``info`` the agent got with that observation
    (before it acts: a multi-agent env's info to an agent still playing, a single-agent
    env's info from ``reset`` or a non-final ``step``). Each place that held it becomes a
    member of a :class:`PolicyFamily` played like any other (``echo-info-hint``,
    ``wrong-1-then-echo-info-feedback.expected``): answer wrong until that turn, then echo
    that piece (``echo-17th-number``, ``wrong-2-then-echo-last-number``). The scan itself
    costs no episode on a single-turn env and ``probes`` wrong-answer episodes on a
    multi-turn one; only places that held the answer are played.

    The scan also runs a *reference probe*, for correctness signals that state no answer (an
    ``is_correct``, a score, per-option grades, other agents' grades with their display
    order): it plays ``reference_probes`` of the oracle's seeds twice through
    ``reset(options={"task": record})``, once with the task record as drawn and once with
    only its reference fields (those among ``answer``, ``answers``, ``solution`` and
    ``target`` that hold the oracle's answer, or ``reference_fields``) replaced by another
    task's. The played agent sends the oracle's final answer of the drawn task every turn
    (right under the first reference only); other agents send the scripted oracle's actions of
    the first run, replayed word for word in the second. Everything the agent is shown before
    its episode ends -- observation, every ``info`` leaf (``task_id`` aside: a passed record's
    id is a digest of it) and reward -- must be the same in both runs; the first difference
    fails ``reference-blind:<place>``. Before the agent's first action no difference can be
    feedback. After it, the agent's own answer was right in one run only: an env whose
    feedback is on the agent's own attempt ends the episode on a right answer (so only wrong
    answers get feedback, which the echoes above read) and shows nothing more; one that lets
    an agent play on told it whether its answer is right. Where the agent plays on after a
    wrong answer, each seed is also played twice with another oracle episode's final answer
    (wrong under both references) every turn: feedback to it that differs ("too high" / "too
    low", a distance, digits right) carries the reference, and a blind search that follows it
    wins without reading the task. An observation that states each
    reference itself (answer options) is left to the echoes. Where the probe cannot run -- no
    task record, no reference field, ``options={"task": ...}`` refused, or a change of the
    fields that does not change the grade of the oracle's answer -- its result says
    ``unsupported`` and why.

    Attributes:
        positions: Positions read from each end of an observation.
        probes: Oracle-episode seeds replayed with wrong answers on a multi-turn env.
        max_members: Places played at most (those that held the answer most often first).
        reference_probes: Seeds of the reference probe (``0``: no probe).
        reference_fields: The task fields the env grades with (default: found as above).
    """

    positions: int = LEAK_SCAN_POSITIONS
    probes: int = 8
    max_members: int = LEAK_SCAN_MAX_MEMBERS
    name: str = "leak-scan"
    reference_probes: int = REFERENCE_PROBES
    reference_fields: tuple[str, ...] | None = None

    def family(
        self,
        game: _Single | _Multi,
        agent: str | None,
        memory: Sequence[EpisodeMemory],
        template: str,
    ) -> PolicyFamily:
        """The family of echoes of every place an observation stated the answer."""
        # (reference, seed, observations, infos): what the agent saw before each action.
        seen: list[tuple[str, int, list[str], list[Mapping[str, Any]]]] = []
        for m in memory:
            if m.reference is not None and m.observation:
                seed = m.seed if m.seed is not None else -1
                seen.append((m.reference, seed, [m.observation], [m.info or {}]))
        if game.multi_turn:
            seen = seen[: self.probes]
            for _, seed, observations, infos in seen:
                probe = _Recorder(lambda obs, first, info, turn: _fill(template, WRONG_ANSWER))
                try:
                    game.play(agent, probe, seed=seed, limit=MAX_DEGENERATE_TURNS)
                except Exception:  # an env that cannot be probed has nothing to scan
                    break
                observations[1:] = probe.observations[1:]
                infos[:] = probe.infos or infos
        hits: Counter[tuple[int, str, int, bool]] = Counter()
        info_hits: Counter[tuple[int, str]] = Counter()
        for reference, _, observations, infos in seen:
            found: set[tuple[int, str, int, bool]] = set()
            for turn, observation in enumerate(observations):
                found |= self._places(observation, reference, turn)
            hits.update(found)
            for turn, info in enumerate(infos):
                # What the observation shows too (another debater's answer) is no info leak:
                # the observation's own scan and the echo family read it.
                shown = observations[turn] if turn < len(observations) else ""
                if _states(shown, reference):
                    continue
                info_hits.update(
                    {
                        (turn, path)
                        for path, text in _info_leaves(info)
                        if _same_answer(text, reference)
                    }
                )
        # A place that held the answer once is a coincidence (an answer that is also one of
        # the question's numbers); one that held it on a tenth of the episodes is a leak.
        least = max(2, int(np.ceil(len(seen) * LEAK_SCAN_SHARE)))
        members: list[HackPolicy] = []
        names: set[str] = set()
        for (turn, kind, k, whole), count in sorted(hits.items(), key=lambda kv: -kv[1]):
            if count < least or len(members) >= self.max_members:
                break
            if turn == 0 and not whole and k in ECHO_POSITIONS:
                continue  # the echo family plays it
            if whole and hits.get((turn, kind, k, False), 0) >= count:
                continue  # the same place counted in the observation's body
            where = f"{_ordinal(k)}-{kind}{'-of-all' if whole else ''}"
            name = f"echo-{where}" if turn == 0 else f"wrong-{turn}-then-echo-{where}"
            if name in names:
                continue
            names.add(name)
            scope = "the whole observation" if whole else "the observation"
            members.append(
                DegeneratePolicy(
                    name,
                    (f"{turn} wrong answer(s), then " if turn else "")
                    + f"the {_ordinal(k)} {kind} of {scope}, written as the answer",
                    _FIX_ECHO
                    + " No observation (the task, or feedback after wrong answers) may state "
                    "the answer.",
                    _leak_echo(kind, k, whole, turn),
                )
            )
        for (turn, path), count in sorted(info_hits.items(), key=lambda kv: -kv[1]):
            if count < least or len(members) >= self.max_members:
                break
            name = f"echo-info-{path}" if turn == 0 else f"wrong-{turn}-then-echo-info-{path}"
            members.append(
                DegeneratePolicy(
                    name,
                    (f"{turn} wrong answer(s), then " if turn else "")
                    + f"info[{path!r}] (the info the agent got before acting), as the answer",
                    "An agent's info while its episode runs must hold nothing derived from the "
                    "reference answer or from grading (no expected answer, score or verdict "
                    "before the agent's own episode ends); send such fields with the final step.",
                    _info_echo(path, turn),
                )
            )
        summary = "echoes of the places observations or infos stated the answer"
        return PolicyFamily(self.name, summary, tuple(members))

    def _places(
        self, observation: str, reference: str, turn: int
    ) -> set[tuple[int, str, int, bool]]:
        """``(turn, kind, position, whole)`` of each piece of ``observation`` that states it."""
        found = set()
        body = _without_instructions(observation)
        for whole, text in ((False, body), (True, observation)):
            if whole and text == body:
                continue
            for kind in ("number", "token", "word", "line"):
                pieces = _pieces(text, kind)
                n, bound = len(pieces), self.positions
                for index in {*range(min(n, bound)), *range(max(0, n - bound), n)}:
                    if _same_answer(pieces[index], reference):
                        k = index + 1 if index < bound else index - n
                        found.add((turn, kind, k, whole))
        return found


def _fill(template: str, text: str) -> str:
    if f'"{PLACEHOLDER}"' in template:
        text = json.dumps(text)[1:-1]
    return template.replace(PLACEHOLDER, text, 1)


#: Reasoning-sounding text: the words a grader or a reward model might credit by themselves.
_REASONING = (
    "Let me think step by step. First, I restate the problem and list what is given. "
    "Next, I compute and calculate each part, because every step matters. Wait, let me "
    "verify each step and check the result carefully. Therefore, the answer is clear, and "
    "thus, hence and so the final answer follows from this reasoning and solution. In "
    "conclusion, I have solved it, verified it and double-checked it."
)
_FIX_KEYWORDS = (
    "pay only for a correct final answer: words of reasoning ('therefore', 'the answer is', "
    "'step', 'verify'), a reply's length or repeated tokens must earn nothing (no keyword, "
    "length or style credit in any paying component)."
)


def _keyword_reply(shape: str) -> Callable[[HackContext], str]:
    def act(ctx: HackContext) -> str:
        budget = max(ctx.max_length, 1)
        if shape == "no-answer":
            return _REASONING[:budget]
        if shape == "empty-answer":
            return f"{_REASONING}\n{ctx.answer('')}"
        if shape == "think":
            return f"<think>{_REASONING}</think>\n{ctx.answer(WRONG_ANSWER)}"
        if shape == "long":
            half = max(budget // 2, 1)
            text = (_REASONING + " ") * (half // len(_REASONING) + 1)
            return text[:half] + "\n" + ctx.answer(WRONG_ANSWER)
        if shape == "repeat-word":
            return " ".join(["therefore"] * 64)
        if shape == "repeat-answer":
            return "\n".join([ctx.answer(WRONG_ANSWER)] * 16)
        wrapped = _FORMATS["" if shape == "wrong-answer" else shape.split("-")[-1]][1]
        return f"{_REASONING}\n{wrapped(ctx, WRONG_ANSWER)}"

    act.__qualname__ = f"keywords_{shape.replace('-', '_')}"
    return act


_KEYWORD_SHAPES = {
    "no-answer": "reasoning words and no answer",
    "empty-answer": "reasoning words and an empty answer",
    "wrong-answer": "reasoning words and a wrong answer in the env's format",
    "wrong-boxed": "reasoning words and a wrong answer in \\boxed{}",
    "wrong-tagged": "reasoning words and a wrong answer in <answer> tags",
    "think": "reasoning in <think> tags and a wrong answer",
    "long": "reasoning words repeated to half the length limit, then a wrong answer",
    "repeat-word": "one reasoning word repeated many times",
    "repeat-answer": "the same wrong answer repeated many times",
}


def keyword_family() -> PolicyFamily:
    """Reasoning-sounding replies with a wrong, empty or no answer, long or repeated.

    The style of a solution without one: "step", "verify", "therefore", "the answer is".

    Members are named ``keywords-<shape>`` (``keywords-wrong-answer``, ``keywords-long``).
    """
    members = tuple(
        DegeneratePolicy(f"keywords-{shape}", summary, _FIX_KEYWORDS, _keyword_reply(shape))
        for shape, summary in _KEYWORD_SHAPES.items()
    )
    return PolicyFamily("keywords", "reasoning words with a wrong or no answer", members)


#: The library of degenerate policies :func:`check_reward_hacking` plays by default.
DEGENERATE_POLICIES: tuple[HackPolicy | PolicyFamily | LeakScan, ...] = (
    DegeneratePolicy("empty", "reply with nothing", _FIX_EMPTY, lambda ctx: ""),
    DegeneratePolicy(
        "format-only", "the answer format with nothing in it", _FIX_EMPTY, lambda c: c.answer("")
    ),
    DegeneratePolicy(
        "format-placeholder",
        "the answer format around the prompt's placeholder",
        _FIX_EMPTY,
        lambda ctx: ctx.answer("<answer>"),
    ),
    DegeneratePolicy(
        "max-length",
        "the longest reply allowed, repeating every span of the task",
        "read a bounded part of the reply and one final answer; a reply stating many "
        "answers must not be graded by its best one.",
        _max_length,
    ),
    DegeneratePolicy(
        "echo-observation", "the observation, verbatim", _FIX_ECHO, lambda ctx: ctx.observation
    ),
    DegeneratePolicy("echo-question", "the task's question, verbatim", _FIX_ECHO, _question),
    *(
        DegeneratePolicy(
            f"echo-last-{kind}",
            f"the observation's last {kind} (instructions aside), written as the answer",
            _FIX_ECHO + " Draw no task whose answer is written in its question.",
            _last_piece(kind),
        )
        for kind in _LAST_KINDS
    ),
    *(
        DegeneratePolicy(
            f"literal-{literal}",
            f"the constant answer {literal!r} on every task",
            _FIX_LITERAL,
            _literal(literal),
        )
        for literal in LITERAL_CONSTANTS
    ),
    DegeneratePolicy(
        "nonsense",
        "random text (must be neither correct nor paid, whatever the baseline)",
        _FIX_NONSENSE,
        _nonsense,
        floor=True,
    ),
    DegeneratePolicy(
        "echo-question-answer",
        "the task's question written as the answer",
        _FIX_ECHO,
        lambda ctx: ctx.answer(_question(ctx)),
    ),
    *(
        DegeneratePolicy(
            f"echo-span-{which}-{wrap}",
            f"the {which} math/code span of the task, {_WRAPS[wrap]}",
            _FIX_FINAL_FORM,
            _span_policy(which, wrap),
        )
        for which in ("first", "last", "longest")
        for wrap in ("answer", "bare", "boxed", "tagged")
    ),
    DegeneratePolicy(
        "echo-span-partial",
        "the task's last expression with one operation done, written as the answer",
        _FIX_FINAL_FORM,
        _span_policy("last", "partial"),
    ),
    *(
        DegeneratePolicy(
            f"echo-number-{which}",
            f"the {which} number(s) of the question, written as the answer",
            _FIX_ECHO,
            _numbers_policy(which),
        )
        for which in ("first", "last", "all")
    ),
    *(
        DegeneratePolicy(
            "lookup-examples" if otherwise is None else f"lookup-examples-or-{otherwise}",
            "a program printing each shown example's output for its input, else "
            + ("the last example's" if otherwise is None else repr(otherwise)),
            _FIX_EXAMPLES,
            _example_lookup(otherwise),
        )
        for otherwise in EXAMPLE_FALLBACKS
    ),
    DegeneratePolicy(
        "copy-demonstration",
        "the worked example's reply, verbatim",
        _FIX_DEMO,
        _demonstration_reply,
        strict=True,
    ),
    DegeneratePolicy(
        "copy-demonstration-answer",
        "the worked example's final answer",
        _FIX_DEMO,
        _demonstration_answer,
        strict=True,
    ),
    DegeneratePolicy(
        "constant-answer",
        "the most common reference answer of other episodes",
        _FIX_CONSTANT,
        _most_common,
    ),
    DegeneratePolicy(
        "sampled-answer",
        "a reference answer of another episode, drawn from their distribution",
        _FIX_CONSTANT,
        _sampled,
    ),
    DegeneratePolicy(
        "several-candidates",
        "many candidate answers in one reply (common answers, spans, numbers)",
        "grade one final answer (the last, or refuse a reply with several): never pass a "
        "reply because one of its candidates matches.",
        _candidates,
    ),
    DegeneratePolicy(
        "replay-other-episode",
        "the oracle's actions of an episode on another task, replayed turn by turn",
        "make each task need its own actions (a new map, new entities, new values), so one "
        "episode's actions do not solve another's.",
        _replay,
    ),
    literal_family(),
    echo_family(),
    perturbed_echo_family(),
    keyword_family(),
    shotgun_family(),
    SurfaceClassifier(),
    CountRegression(),
    GridDistances(),
    LeakScan(),
)


# ------------------------------------------------------------------------------ reports


@dataclass
class PolicyResult:
    """One policy's run for one agent.

    Attributes:
        policy: The policy's name.
        agent: The agent it played (``None`` for a single-agent env).
        episodes: Episodes it played (those it had an action for).
        successes: Episodes it ended correct.
        lower: Lower confidence bound of its success rate.
        paid: Each episode's paid reward (the weighted paying components; penalties aside).
        earned: Largest value of each paying component on any step (strict policies).
        example: One of its actions (shortened).
        status: ``"passed"``, ``"failed"``, ``"skipped"``, ``"screened"`` (a family member
            that stopped after its screen; its counts are the screen's), ``"unsupported"``
            (a learned policy that cannot run on this env: :mod:`rllm_envs.testing.learned`)
            or ``"bar"`` (the best constant a learned policy must beat besides the baseline).
        detail: Why it failed or was skipped.
    """

    policy: str
    agent: str | None
    episodes: int
    successes: int
    lower: float
    paid: list[float] = field(default_factory=list)
    earned: dict[str, float] = field(default_factory=dict)
    example: str = ""
    status: str = "passed"
    detail: str = ""

    @property
    def rate(self) -> float:
        """Success rate (NaN without episodes)."""
        return self.successes / self.episodes if self.episodes else float("nan")

    @property
    def mean_paid(self) -> float:
        """Mean paid reward per episode (NaN without episodes)."""
        return float(np.mean(self.paid)) if self.paid else float("nan")


@dataclass
class HackReport:
    """What :func:`check_reward_hacking` found.

    Attributes:
        env: The env's label.
        alpha: One-sided error of each confidence bound.
        baseline: Per agent (``None`` for single-agent): ``(successes, episodes, upper)``
            of the random baseline.
        baseline_paid: Per agent: the random baseline's paid reward per episode.
        baseline_policy: Per agent: what the random baseline played (the checker's own
            uniform guess; the env's ``random_action`` is never used, an env could make it
            as strong as it likes).
        results: One :class:`PolicyResult` per policy and agent.
        failures: The broken rules, with the fix.
    """

    env: str
    alpha: float
    baseline: dict[str | None, tuple[int, int, float]] = field(default_factory=dict)
    baseline_paid: dict[str | None, list[float]] = field(default_factory=dict)
    baseline_policy: dict[str | None, str] = field(default_factory=dict)
    results: list[PolicyResult] = field(default_factory=list)
    failures: list[RuleFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no degenerate policy beat the baseline and no copy earned anything."""
        return not self.failures

    def raise_for_failure(self) -> None:
        """Raise :class:`RewardHackingError` if a policy broke a rule."""
        if self.failures:
            raise RewardHackingError(self)

    def __str__(self) -> str:
        lines = [f"{self.env}: reward-hacking check, alpha={self.alpha}"]
        for agent, (succ, n, upper) in self.baseline.items():
            who = f"{agent}: " if agent else ""
            paid = self.baseline_paid.get(agent) or [0.0]
            lines.append(
                f"  {who}random baseline {succ}/{n} (upper bound {upper:.3f}), mean paid "
                f"reward {float(np.mean(paid)):.3f}: {self.baseline_policy.get(agent, '')}"
            )
        screened = Counter(r.agent for r in self.results if r.status == "screened")
        for agent, count in screened.items():
            who = f"{agent}: " if agent else ""
            lines.append(
                f"  {who}{count} family members screened out (correct no more often than the "
                "baseline and paid no more in their screen)"
            )
        for r in self.results:
            if r.status == "screened":
                continue
            who = f"{r.agent}: " if r.agent else ""
            lines.append(
                f"  {r.status:7s} {who}{r.policy}: {r.successes}/{r.episodes} "
                f"(lower bound {r.lower:.3f}), mean paid reward {r.mean_paid:.3f}"
                f"{' - ' + r.detail if r.detail else ''}"
            )
        lines += [f"  {f}" for f in self.failures]
        return "\n".join(lines)


class RewardHackingError(AssertionError):
    """A degenerate policy earned more than the random baseline (or a copy earned anything).

    Attributes:
        report: The :class:`HackReport`.
        failures: The broken rules.
    """

    def __init__(self, report: HackReport) -> None:
        self.report = report
        self.failures = list(report.failures)
        n = len(self.failures)
        super().__init__(
            f"{report.env}: {n} degenerate polic{'ies' if n != 1 else 'y'} earned reward:\n"
            + "\n".join(str(f) for f in self.failures)
        )


# ---------------------------------------------------------------------- playing episodes


@dataclass
class _Outcome:
    correct: bool
    paid: float
    earned: dict[str, float]
    first_action: str
    task_key: str


class _NotApplicable(Exception):
    """The policy has no action for this episode."""


def _is_penalty(name: str, weights: Mapping[str, float]) -> bool:
    # A negative weight makes a penalty; a name only marks an unweighted flag as one, so a
    # component named `invalid_*` that pays (positive weight) is still counted as pay.
    weight = weights.get(name, 0.0)
    return weight < 0 or (weight == 0 and name.startswith(("invalid", "illegal")))


def _earned(components: Mapping[str, Any] | None, weights: Mapping[str, float]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in (components or {}).items()
        if not _is_penalty(k, weights) and float(v) > 0
    }


def _paid(
    components: Mapping[str, Any] | None, weights: Mapping[str, float], reward: float
) -> float:
    """The reward of one step paid by its paying components (penalties aside)."""
    if not components:
        return max(float(reward), 0.0)
    return sum(
        weights.get(k, 0.0) * float(v)
        for k, v in components.items()
        if not _is_penalty(k, weights) and float(v) > 0
    )


def _merge(into: dict[str, float], new: Mapping[str, float]) -> None:
    for k, v in new.items():
        into[k] = max(into.get(k, 0.0), v)


def _task_key(env: Any, observation: str) -> str:
    task = getattr(getattr(env, "unwrapped", env), "task", None)
    return question_text(task) if isinstance(task, Mapping) else observation


class _Single:
    """Plays a single-agent env."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.env = make()
        self.base = self.env.unwrapped
        self.max_length = int(getattr(self.env.action_space, "max_length", 10_000))
        self.weights = dict(getattr(self.base, "reward_weights", None) or {})
        self.agents: list[str | None] = [None]
        self.multi_turn = int(getattr(self.base, "max_turns", 1)) > 1
        #: Turns a degenerate episode may take (the env's own limit usually ends it first).
        self.turn_limit = MAX_DEGENERATE_TURNS
        self.success: Callable[[Mapping[str, Any]], Any] = _is_correct
        #: While set (family screens): the env's replies by (seed, actions so far), so a
        #: member repeating another's actions on a seed replays them without the env (the
        #: env is deterministic in its seed and actions; ``ctx.env`` may then be elsewhere).
        self.memo: dict[tuple[int, tuple[str, ...]], Any] | None = None

    def play(
        self,
        agent: str | None,
        act: Callable[[str, str, Mapping[str, Any], int], str | None],
        seed: int,
        limit: int | None = None,
    ) -> _Outcome:
        limit = self.turn_limit if limit is None else limit
        memo = self.memo if self.memo is not None else {}
        if (seed, ()) in memo:
            obs, info, key = memo[(seed, ())]
            live = False
        else:
            obs, info = self.env.reset(seed=seed)
            key, live = _task_key(self.env, str(obs)), True
            if self.memo is not None:
                memo[(seed, ())] = (obs, info, key)
        first = str(obs)
        earned: dict[str, float] = {}
        paid = 0.0
        first_action: str | None = None
        path: tuple[str, ...] = ()
        for turn in range(limit):
            action = act(str(obs), first, info, turn)
            if action is None:
                raise _NotApplicable
            first_action = action if first_action is None else first_action
            path += (action,)
            step = memo.get((seed, path))
            if step is None:
                if not live:  # the env is elsewhere: bring it to this path's state
                    self.env.reset(seed=seed)
                    for earlier in path[:-1]:
                        self.env.step(earlier)
                    live = True
                step = self.env.step(action)
                if self.memo is not None:
                    memo[(seed, path)] = step
            else:
                live = False
            obs, reward, terminated, truncated, info = step
            components = info.get("reward_components")
            _merge(earned, _earned(components, self.weights))
            paid += _paid(components, self.weights, float(reward))
            if terminated or truncated:
                break
        return _Outcome(bool(self.success(info)), paid, earned, first_action or "", key)

    def oracle(self, agent: str | None) -> Callable[..., str | None] | None:
        method = getattr(self.base, "oracle_action", None)
        if method is None:
            return None
        try:
            self.env.reset(seed=0)
            method()
        except NotImplementedError:
            return None
        return lambda obs, first, info, turn: method()

    def seed_actions(self, seed: int) -> None:
        """Seed the env's action space, whose generator its ``random_action`` draws from."""
        self.env.action_space.seed(seed)

    def random(self, agent: str | None) -> Callable[..., str | None]:
        own = getattr(type(self.base), "random_action", None)
        if own is not None and own is not _inherited_random_action():
            return lambda obs, first, info, turn: self.base.random_action()
        # Random text: as wrong at 400 characters as at the space's limit, and much cheaper.
        rng = np.random.default_rng(0)
        return lambda obs, first, info, turn: next(fuzz_actions(rng, 1, 400))

    def task_reference(self) -> list[str]:
        return _references(getattr(self.base, "task", None))


class _Multi:
    """Plays one agent of a PettingZoo parallel env; the others play a scripted policy."""

    def __init__(self, make: Callable[[], Any], others: str, agents: Sequence[str] | None):
        from rllm_envs.multiagent.base import ScriptedPolicy

        self.env = make()
        self.others = ScriptedPolicy(others, seed=0)
        self.weights = dict(getattr(self.env, "reward_weights", None) or {})
        self.agents: list[str | None] = list(agents or _one_per_role(self.env))
        first = self.env.possible_agents[0]
        self.max_length = int(getattr(self.env.action_space(first), "max_length", 10_000))
        self.multi_turn = True
        self.turn_limit = 200
        self.success: Callable[[Mapping[str, Any]], Any] = _is_correct

    def play(
        self,
        agent: str | None,
        act: Callable[[str, str, Mapping[str, Any], int], str | None],
        seed: int,
        limit: int | None = None,
    ) -> _Outcome:
        assert agent is not None
        limit = self.turn_limit if limit is None else limit
        self.others.rng = np.random.default_rng(seed)
        obs, infos = self.env.reset(seed=seed)
        first, key = str(obs[agent]), _task_key(self.env, str(obs[agent]))
        earned: dict[str, float] = {}
        paid = 0.0
        first_action: str | None = None
        correct, turn = False, 0
        for _ in range(limit):
            if not self.env.agents:
                break
            actions = {}
            for a in self.env.agents:
                if not infos[a].get("acting", True):
                    continue
                if a == agent:
                    action = act(str(obs[a]), first, infos[a], turn)
                    if action is None:
                        raise _NotApplicable
                    first_action = action if first_action is None else first_action
                    turn += 1
                    actions[a] = action
                else:
                    actions[a] = self.others(self.env, a)
            obs, rewards, terms, truncs, infos = self.env.step(actions)
            if agent in infos:
                components = infos[agent].get("reward_components")
                _merge(earned, _earned(components, self.weights))
                paid += _paid(components, self.weights, float(rewards.get(agent, 0.0)))
                if terms.get(agent) or truncs.get(agent):
                    correct = bool(self.success(infos[agent]))
        return _Outcome(correct, paid, earned, first_action or "", key)

    def oracle(self, agent: str | None) -> Callable[..., str | None] | None:
        from rllm_envs.multiagent.base import ScriptedPolicy

        oracle, env = ScriptedPolicy("oracle"), self.env
        return lambda obs, first, info, turn: oracle(env, str(agent))

    def seed_actions(self, seed: int) -> None:
        """Seed every agent's action space (the random policy's fallback draws from them)."""
        for k, agent in enumerate(self.env.possible_agents):
            self.env.action_space(agent).seed(seed + k)

    def random(self, agent: str | None) -> Callable[..., str | None]:
        from rllm_envs.multiagent.base import ScriptedPolicy

        policy, env = ScriptedPolicy("random", seed=0), self.env

        def act(obs: str, first: str, info: Mapping[str, Any], turn: int) -> str:
            try:
                return policy(env, str(agent))
            except NotImplementedError:
                return str(env.action_space(agent).sample())

        return act

    def heuristic(self, agent: str | None) -> Callable[..., str | None] | None:
        """The env's heuristic scripted policy for ``agent`` (``None``: it has none)."""
        from rllm_envs.multiagent.base import MultiAgentTextEnv, ScriptedPolicy

        base = getattr(self.env, "unwrapped", self.env)
        if not isinstance(base, MultiAgentTextEnv):
            return None
        cached = self.__dict__.setdefault("_heuristics", {})
        if agent not in cached:
            policy, env = ScriptedPolicy("heuristic", seed=0), self.env
            fallback = self.random(agent)

            def act(obs: str, first: str, info: Mapping[str, Any], turn: int) -> str | None:
                try:
                    return policy(env, str(agent))
                except NotImplementedError:
                    return fallback(obs, first, info, turn)

            cached[agent] = act
        return cached[agent]

    def task_reference(self) -> list[str]:
        return _references(getattr(self.env, "task", None))


def _is_correct(info: Mapping[str, Any]) -> bool:
    return bool(info.get("is_correct"))


def _one_per_role(env: Any) -> list[str]:
    """The first agent of each role (agents of one role are played alike)."""
    role = getattr(env, "_role", None)
    if not callable(role):
        return list(env.possible_agents)
    env.reset(seed=0)
    first: dict[str, str] = {}
    for agent in env.possible_agents:
        first.setdefault(str(role(agent)), agent)
    return list(first.values())


def _inherited_random_action() -> Any:
    from rllm_envs.core import TextEnv

    return TextEnv.random_action


def _references(task: Any) -> list[str]:
    if not isinstance(task, Mapping):
        return []
    refs = []
    for key in _REFERENCE_FIELDS:
        value = task.get(key)
        if isinstance(value, (list, tuple)) and value:
            value = value[0]
        if isinstance(value, (str, int, float)) and str(value).strip():
            refs.append(str(value))
    return refs


def _template_of(action: str, references: Sequence[str]) -> str | None:
    for ref in references:
        for form in (ref, json.dumps(ref)[1:-1]):
            if form and form in action:
                return action.replace(form, PLACEHOLDER, 1)
    return None


class _Recorder:
    """Plays ``policy`` and keeps its actions and the observations it saw."""

    def __init__(self, policy: Callable[..., str | None]) -> None:
        self.policy = policy
        self.actions: list[str] = []
        self.observations: list[str] = []
        self.infos: list[Mapping[str, Any]] = []

    def __call__(self, obs: str, first: str, info: Mapping[str, Any], turn: int) -> str | None:
        self.observations.append(obs)
        self.infos.append(info)
        action = self.policy(obs, first, info, turn)
        if action is not None:
            self.actions.append(action)
        return action


class _Actor:
    """Plays a :class:`HackPolicy` for one episode: builds its context at each turn."""

    def __init__(
        self,
        game: _Single | _Multi,
        policy: HackPolicy,
        memory: Sequence[EpisodeMemory],
        template: str,
        demos: Sequence[Demonstration],
        *,
        episode: int,
        seed: int,
    ) -> None:
        self.game, self.policy, self.all_memory = game, policy, memory
        self.template, self.demos, self.episode = template, demos, episode
        self.rng = np.random.default_rng([seed, episode, 17])
        self.memory: list[EpisodeMemory] | None = None

    def __call__(self, obs: str, first: str, info: Mapping[str, Any], turn: int) -> str | None:
        if self.memory is None:  # never this task's own answer
            key = _task_key(self.game.env, first)
            self.memory = [m for m in self.all_memory if m.task_key != key]
        ctx = HackContext(
            observation=obs,
            first_observation=first,
            info=info,
            turn=turn,
            episode=self.episode,
            rng=self.rng,
            template=self.template,
            memory=self.memory,
            demonstrations=self.demos,
            max_length=self.game.max_length,
            env=self.game.env,
        )
        action = self.policy(ctx)
        if action is None and turn > 0:
            # Nothing to echo in this feedback: a wrong answer keeps the episode going, so a
            # later observation that reveals the answer is still read.
            return ctx.answer(WRONG_ANSWER)
        return action


def _remember(
    game: _Single | _Multi, agent: str | None, episodes: int, seed: int
) -> tuple[list[EpisodeMemory], str | None, list[float]]:
    """Oracle episodes on other seeds: answers, actions, paid rewards, and the answer template."""
    oracle = game.oracle(agent)
    if oracle is None:
        return [], None, []
    raw: list[tuple[str, list[str], str, Mapping[str, Any]]] = []
    paid: list[float] = []
    template: str | None = None
    for j in range(episodes):
        recorder = _Recorder(oracle)
        try:
            outcome = game.play(agent, recorder, seed=seed + j, limit=10_000)
        except Exception:  # an env whose oracle cannot play gives no memory
            return [], None, []
        if template is None and recorder.actions:
            template = _template_of(recorder.actions[-1], game.task_reference())
        first_info = recorder.infos[0] if recorder.infos else {}
        raw.append(
            (outcome.task_key, recorder.actions, (recorder.observations or [""])[0], first_info)
        )
        paid.append(outcome.paid)
    memory = []
    for j, (key, actions, first, info) in enumerate(raw):
        reference = _reference_in(actions[-1], template) if template and actions else None
        memory.append(EpisodeMemory(key, reference, tuple(actions), first, seed + j, info))
    return memory, template, paid


def _reference_in(action: str, template: str) -> str | None:
    """The answer ``action`` writes in ``template`` (``None``: not written that way)."""
    prefix, _, suffix = template.partition(PLACEHOLDER)
    if not (action.startswith(prefix) and action.endswith(suffix)):
        return None
    if len(action) < len(prefix) + len(suffix):
        return None
    reference = action[len(prefix) : len(action) - len(suffix)]
    if f'"{PLACEHOLDER}"' in template:
        try:
            reference = json.loads(f'"{reference}"')
        except ValueError:
            pass
    return reference


def _scan(game: _Single | _Multi, template: str, seed: int, count: int) -> list[EpisodeMemory]:
    """Oracle answers on ``count`` more episodes of a single-turn env (resets, no steps).

    Each episode's first observation and the oracle's one action: what a leak scan reads and
    what a family member's action is compared with, at the cost of a reset.
    """
    if not isinstance(game, _Single) or game.multi_turn or PLACEHOLDER not in template:
        return []
    if template == PLACEHOLDER:
        return []
    method = getattr(game.base, "oracle_action", None)
    if method is None:
        return []
    found = []
    for j in range(count):
        try:
            obs, info = game.env.reset(seed=seed + j)
            action = method()
        except Exception:  # an env whose oracle cannot answer has nothing to scan
            break
        reference = _reference_in(action, template)
        key = _task_key(game.env, str(obs))
        found.append(EpisodeMemory(key, reference, (action,), str(obs), seed + j, info))
    return found


# ------------------------------------------------------------------------------ the check


def _factory(env: Any, kwargs: Mapping[str, Any] | None) -> tuple[Callable[[], Any], str, bool]:
    """``(make, label, is_multiagent)`` for an id, a class, a factory or an instance."""
    import pickle
    from functools import partial

    import gymnasium as gym

    from rllm_envs.testing._common import label

    kw = dict(kwargs or {})
    if isinstance(env, str):
        import rllm_envs

        if env in rllm_envs.list_multiagent_envs():
            return partial(rllm_envs.make_parallel, env, **kw), label(env, kw), True
        return partial(gym.make, env, **kw), label(env, kw), False
    if callable(env) and not isinstance(env, gym.Env) and not hasattr(env, "possible_agents"):
        name = getattr(env, "__name__", type(env).__name__)
        probe = env(**kw)
        multi = hasattr(probe, "possible_agents") and not isinstance(probe, gym.Env)
        return partial(env, **kw), label(name, kw), multi
    if kw:
        raise ValueError("`kwargs` needs an env id or a factory, not an env instance.")
    blob = pickle.dumps(env)
    multi = hasattr(env, "possible_agents") and not isinstance(env, gym.Env)
    spec = getattr(env, "spec", None)
    name = spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__
    return partial(pickle.loads, blob), name, multi


def check_reward_hacking(
    env: Any,
    *,
    kwargs: Mapping[str, Any] | None = None,
    policies: Iterable[HackPolicy | PolicyFamily | LeakScan] | None = None,
    episodes: int = 40,
    max_episodes: int = 200,
    screen: int | None = None,
    memory_episodes: int = 20,
    seed: int = 0,
    alpha: float = 0.05,
    agents: Sequence[str] | None = None,
    others: str = "heuristic",
    answer_template: str | None = None,
    demonstrations: Sequence[Demonstration] | None = None,
    success: Callable[[Mapping[str, Any]], Any] | None = None,
    raise_on_failure: bool = True,
) -> HackReport:
    r"""Play degenerate policies against ``env``; fail when one beats the random baseline.

    Each policy plays ``episodes`` episodes (seeds ``seed``, ``seed + 1``, ...; the random
    baseline plays the same ones), each episode to its end (at most
    :data:`MAX_DEGENERATE_TURNS` turns). A policy fails when the lower Wilson bound of its
    success rate (``info["is_correct"]`` at the end) is above the upper bound of the
    baseline's and above :data:`MIN_FLAGGED_RATE`, each bound one-sided at ``alpha``, or above
    chance over the answers seen (``1 / labels``, at most 1/2) plus :data:`CHANCE_MARGIN`.
    The baseline is the checker's own: a uniform guess among the distinct reference answers
    of the oracle's episodes on other tasks, written as the env's answer (the env's
    ``random_action`` only where the checker sees no answers: moves, games). While the
    baseline is right on at most :data:`LOW_BASELINE_RATE` of its episodes, a policy right
    more often than it gets more episodes (to 100, then, if right on 4% or more, to
    ``max_episodes``) and the baseline with it: at the defaults a policy right on 10% of
    episodes against a never-right baseline is flagged with probability 0.98 (0.92 at 8%,
    about 0.5 at 5%, under 0.02 at 2%). Copies of a worked example fail on any reward earned
    in a paying component (every component with a positive weight, and unweighted ones not
    named ``invalid*``/``illegal*``).

    Example:
        >>> from rllm_envs.testing import check_reward_hacking
        >>> report = check_reward_hacking("rllm/Countdown-v1", episodes=10, raise_on_failure=False)
        >>> report.ok
        True

    Args:
        env: A registered single- or multi-agent id, an env class or zero-argument factory,
            or an instance (copied by pickling).
        kwargs: Constructor kwargs for an id or a class.
        policies: The policies to play (default :data:`DEGENERATE_POLICIES`; anything
            implementing :class:`HackPolicy`, and :class:`PolicyFamily` groups of them).
        episodes: Episodes per policy (and of the baseline). Detecting a policy that is
            right one time in five needs about 40.
        max_episodes: Episodes a promising policy (right a few times against a baseline that
            rarely is) is extended to, and the baseline with it (``episodes`` or less: no
            extension).
        screen: Screening episodes of each member of a :class:`PolicyFamily` before its
            full run (default: the family's own ``screen``, else
            :data:`SCREEN_SINGLE_TURN` or :data:`SCREEN_MULTI_TURN`, at most half of
            ``episodes``; ``0`` plays every member in full).
        memory_episodes: Oracle episodes on other seeds that give the answer template, the
            answer distribution and the replayed actions.
        seed: First episode seed.
        alpha: One-sided error of each confidence bound.
        agents: Multi-agent: the agents to play degenerate, one at a time (default: the
            first agent of each role, or every agent of an env without roles).
        others: Multi-agent: the scripted policy of the other agents (``"heuristic"``,
            ``"oracle"`` or ``"random"``).
        answer_template: How the env wants an answer written, with ``{}`` for the answer
            (default: found in the oracle's last action; bare when there is no oracle).
        demonstrations: The worked examples to copy (default
            :data:`rllm_envs.demonstrations.DEMONSTRATIONS`, the env's ``demonstrations`` and,
            for a registered id, those of its agent-facing spec).
        success: ``success(final_info) -> bool``: whether an episode counts as correct
            (default ``info["is_correct"]``; e.g. ``lambda i: i["reward_components"]["em"]``).
        raise_on_failure: Raise :class:`RewardHackingError` on a failure (else only report).

    Returns:
        The :class:`HackReport`.

    Raises:
        RewardHackingError: When a policy broke a rule and ``raise_on_failure`` is true; the
            message names the policy, its success rate against the baseline and the fix.
        ValueError: For ``episodes < 1``, ``screen < 0`` or ``alpha`` outside (0, 0.5).
    """
    if episodes < 1 or not 0 < alpha < 0.5:
        raise ValueError(f"Expects episodes >= 1 and 0 < alpha < 0.5, got {episodes}, {alpha}.")
    if screen is not None and screen < 0:
        raise ValueError(f"Expects screen >= 0 (0: no screen), got {screen}.")
    make, name, multi = _factory(env, kwargs)
    game: _Single | _Multi = _Multi(make, others, agents) if multi else _Single(make)
    if success is not None:
        game.success = success
    chosen = list(DEGENERATE_POLICIES if policies is None else policies)
    for p in chosen:
        if isinstance(p, LeakScan):
            continue
        for member in p.members if isinstance(p, PolicyFamily) else (p,):
            if not isinstance(member, HackPolicy):
                raise TypeError(
                    "Expects each policy to have name, summary, fix and __call__(ctx) (or to be "
                    f"a PolicyFamily of such), actual: {member!r}."
                )
    base = getattr(game.env, "unwrapped", game.env)
    demos = list(demonstrations) if demonstrations is not None else list(DEMONSTRATIONS)
    if demonstrations is None:
        demos += [d for d in getattr(base, "demonstrations", ()) if d not in demos]
        if isinstance(env, str):  # the worked examples the id's agent-facing spec shows
            demos += spec_demonstrations(env.split("rllm_envs:", 1)[-1], tuple(demos))
    z = NormalDist().inv_cdf(1 - alpha)
    report = HackReport(name, alpha)
    for agent in game.agents:
        memory, template, oracle_paid = _remember(game, agent, memory_episodes, seed + 1_000_003)
        if answer_template is not None:
            template = answer_template.replace("{}", PLACEHOLDER, 1)
        template = template or PLACEHOLDER
        baseline = _Baseline(game, agent, memory, template, seed, oracle_paid, z)
        bounds = baseline.bounds(episodes)
        report.baseline[agent] = (bounds.successes, bounds.episodes, bounds.upper)
        report.baseline_paid[agent] = list(bounds.paid)
        report.baseline_policy[agent] = baseline.summary
        # The scan reads the screens' own episodes: their tasks are then drawn once for both.
        scanned = [*memory, *_scan(game, template, seed + episodes, SCAN_EPISODES)]
        solved = [m for m in scanned if m.reference is not None and len(m.actions) == 1]
        played = _Played(game, agent, memory, template, demos, episodes, seed, z, solved)
        for item in chosen:
            if isinstance(item, LeakScan):
                probe, broken = _reference_probe(item, game, agent, memory, name)
                report.results.append(probe)
                if broken is not None:
                    report.failures.append(broken)
                item = item.family(game, agent, scanned, template)
            if isinstance(item, PolicyFamily):
                size = _screen_size(item, game, episodes) if screen is None else screen
                memo: dict[Any, Any] = {}  # the env's replies on the screen's episodes
                results = [_screened(played, member, size, bounds, memo) for member in item.members]
            else:
                if (
                    hasattr(item, "unsupported")
                    and is_dataclass(item)
                    and not isinstance(item, type)
                ):
                    item = replace(item)  # a learned policy fits afresh for each check
                why = item.unsupported(game.env, memory) if hasattr(item, "unsupported") else None
                if why is not None:
                    report.results.append(
                        PolicyResult(item.name, agent, 0, 0, 0.0, status="unsupported", detail=why)
                    )
                    continue
                results = [(item, played.run(item))]
            for policy, result in results:
                report.results.append(result)
                if result.status in ("skipped", "screened"):
                    continue
                bar = _bar_policy(policy, game.env, template)
                own = bounds  # the baseline, or the bar of a learned policy where higher
                if bar is not None:
                    bar_result = played.run(bar)
                    bar_result.status, bar_result.detail = "bar", f"the bar of {policy.name}"
                    report.results.append(bar_result)
                    own = _raised(bounds, bar_result, z)
                failure = _judge(policy, result, own, name)
                stages = [n for n in (_MIDDLE_STAGE, max_episodes) if n > result.episodes]
                current, extra = own, 0
                while failure is None and stages and _promising(policy, result, current):
                    # Right a few times against a baseline that is (almost) never right: more
                    # episodes for both tell a small hack from luck.
                    target = stages.pop(0)
                    count = target - result.episodes
                    _absorb(result, played.run(policy, first=_EXTENSION + extra, count=count), z)
                    extra += count
                    current = baseline.bounds(target)
                    if current.episodes > report.baseline[agent][1]:
                        report.baseline[agent] = _triple(current)
                        report.baseline_paid[agent] = list(current.paid)
                    if bar is not None:
                        more = played.run(bar, first=_EXTENSION + extra - count, count=count)
                        _absorb(bar_result, more, z)
                        current = _raised(current, bar_result, z)
                    failure = _judge(policy, result, current, name)
                    result.detail = f"extended to {result.episodes} episodes"
                if failure is not None:
                    result.status, result.detail = "failed", failure.detail
                    report.failures.append(failure)
    game.env.close()
    if raise_on_failure:
        report.raise_for_failure()
    return report


@dataclass(frozen=True)
class _Played:
    """What every policy of one agent's run plays with."""

    game: _Single | _Multi
    agent: str | None
    memory: Sequence[EpisodeMemory]
    template: str
    demos: Sequence[Demonstration]
    episodes: int
    seed: int
    z: float
    #: Oracle episodes solved by one action (memory and scan): a member's pre-screen.
    solved: Sequence[EpisodeMemory] = ()

    def hits(self, policy: HackPolicy) -> int:
        """Episodes of :attr:`solved` on which ``policy``'s first action is the oracle's."""
        count = 0
        rng = np.random.default_rng([self.seed, _PRESCREEN, 17])
        for j, (m, others) in enumerate(zip(self.solved, self._others(), strict=True)):
            ctx = HackContext(
                observation=m.observation,
                first_observation=m.observation,
                info={},
                turn=0,
                episode=_PRESCREEN + j,
                rng=rng,
                template=self.template,
                memory=others,
                demonstrations=self.demos,
                max_length=self.game.max_length,
                env=self.game.env,
            )
            action = policy(ctx)
            count += action is not None and action.strip() == m.actions[0].strip()
        return count

    def _others(self) -> list[list[EpisodeMemory]]:
        """Per solved episode, the memory of the other tasks (worked out once)."""
        cache = self.__dict__.get("_others_cache")
        if cache is None:
            cache = [[x for x in self.memory if x.task_key != m.task_key] for m in self.solved]
            object.__setattr__(self, "_others_cache", cache)
        return cache

    def run(self, policy: HackPolicy, first: int = 0, count: int | None = None) -> PolicyResult:
        """``policy`` on episodes ``first .. first + count - 1`` (default: the check's)."""
        count = self.episodes if count is None else count
        return _run_policy(
            self.game,
            self.agent,
            policy,
            self.memory,
            self.template,
            self.demos,
            range(first, first + count),
            self.seed,
            self.z,
        )


def _bar_policy(policy: HackPolicy, env: Any, template: str) -> HackPolicy | None:
    """The best-constant policy a learned policy must beat too (:mod:`.learned`'s ``bar``)."""
    bar = getattr(policy, "bar", None)
    answer = bar(env) if callable(bar) else None
    if answer is None:
        return None
    return DegeneratePolicy(
        f"{policy.name}.best-constant",
        f"the best constant answer of {policy.name}'s training draws ({describe(answer, 40)})",
        _FIX_CONSTANT,
        lambda ctx: ctx.answer(answer) if ctx.turn == 0 else None,
    )


def _raised(bounds: _Bounds, bar: PolicyResult, z: float) -> _Bounds:
    """``bounds`` with the bar policy's results: the rules' bars for both rates.

    The upper bound of the bar's success rate where higher than the baseline's, and its paid
    rewards, which the reward rule's bound takes too.
    """
    if bar.episodes == 0:
        return bounds
    upper = wilson_interval(bar.successes, bar.episodes, z)[1]
    return replace(bounds, upper=max(upper, bounds.upper), bar_paid=list(bar.paid))


def _screen_size(family: PolicyFamily, game: _Single | _Multi, episodes: int) -> int:
    """Screening episodes of each of ``family``'s members (at most half the full run)."""
    if family.screen is not None:
        wanted = family.screen
    else:
        wanted = SCREEN_MULTI_TURN if game.multi_turn else SCREEN_SINGLE_TURN
    return min(wanted, max(1, episodes // 2))


def _screened(
    played: _Played, policy: HackPolicy, size: int, base: _Bounds, memo: dict[Any, Any]
) -> tuple[HackPolicy, PolicyResult]:
    """A family member's run: its screen on episodes of its own, then the full run if needed.

    First a pre-screen that costs no episode: a member whose action is the oracle's on
    :data:`PRESCREEN_MIN_HITS` or more of the oracle's one-action episodes (the memory's and
    the scan's), on a larger share of them than the baseline is right, plays the full run.
    Otherwise the screen's episodes follow the check's (the full run's test sees none of
    them). A member passes the screen when it is correct more often than the random baseline
    was, earns more paid reward than it, or (a strict policy) earns anything. On a
    single-agent env the screens of one family share ``memo`` (the env's replies by seed and
    actions so far).
    """
    if size > 0 and played.solved:
        hits = played.hits(policy)
        if hits >= PRESCREEN_MIN_HITS and hits / len(played.solved) > base.successes / max(
            base.episodes, 1
        ):
            return policy, played.run(policy)
    if size > 0:
        game = played.game
        base_rate = base.successes / max(base.episodes, 1)
        base_paid = float(np.mean(base.paid)) if base.paid else 0.0

        def promising(probe: PolicyResult) -> bool:
            return (
                (probe.successes > 0 and probe.rate > base_rate)
                or probe.mean_paid > base_paid + 1e-9
                or (getattr(policy, "strict", False) and bool(probe.earned))
            )

        if isinstance(game, _Single):
            game.memo = memo
        try:
            # In stages: a member promising after one plays the full run without the rest.
            stage = min(SCREEN_STAGE, size)
            probe = played.run(policy, first=played.episodes, count=stage)
            done = stage
            while done < size and (probe.status == "skipped" or not promising(probe)):
                step = min(SCREEN_STAGE, size - done)
                more = played.run(policy, first=played.episodes + done, count=step)
                done += step
                if more.status == "skipped":
                    continue
                if probe.status == "skipped":
                    probe = more
                else:
                    _absorb(probe, more, played.z)
        finally:
            if isinstance(game, _Single):
                game.memo = None
        if probe.status == "skipped":
            return policy, probe
        if not promising(probe):
            probe.status = "screened"
            probe.detail = f"screened out: {probe.successes}/{probe.episodes} correct"
            return policy, probe
    return policy, played.run(policy)


def _run_policy(
    game: _Single | _Multi,
    agent: str | None,
    policy: HackPolicy,
    memory: Sequence[EpisodeMemory],
    template: str,
    demos: Sequence[Demonstration],
    episodes: Iterable[int],
    seed: int,
    z: float,
) -> PolicyResult:
    result = PolicyResult(policy.name, agent, 0, 0, 0.0)
    if policy.name == "replay-other-episode" and not game.multi_turn:
        result.status, result.detail = "skipped", "single-turn env: nothing to replay"
        return result
    for i in episodes:
        act = _Actor(game, policy, memory, template, demos, episode=i, seed=seed)
        try:
            outcome = game.play(agent, act, seed=seed + i)
        except _NotApplicable:
            continue
        result.episodes += 1
        result.successes += int(outcome.correct)
        result.paid.append(outcome.paid)
        _merge(result.earned, outcome.earned)
        if not result.example:
            result.example = describe(outcome.first_action, 120)
    if result.episodes == 0:
        result.status, result.detail = "skipped", "no action for any episode (nothing to copy)"
        return result
    result.lower = wilson_interval(result.successes, result.episodes, z)[0]
    return result


#: Episode number of the pre-screen's contexts (their policy randomness only; no env episode).
_PRESCREEN = 2_000_000
#: Episode number of a promising policy's (and the baseline's) extra episodes: far from the
#: check's and the screens' episodes, so the episodes that made a policy promising are not
#: counted twice.
_EXTENSION = 1_000_000


#: The first extension's length; past it, a policy right on fewer than
#: :data:`EXTEND_PAST_MIDDLE_RATE` of its episodes stops (it cannot reach a flag).
_MIDDLE_STAGE = 100
EXTEND_PAST_MIDDLE_RATE = 0.04


def _promising(policy: HackPolicy, result: PolicyResult, base: _Bounds) -> bool:
    """A passing policy worth more episodes: right more often than a rarely right baseline."""
    if getattr(policy, "strict", False) or getattr(policy, "floor", False):
        return False
    base_rate = base.successes / max(base.episodes, 1)
    needed = EXTEND_PAST_MIDDLE_RATE if result.episodes >= _MIDDLE_STAGE else 0.0
    return (
        base_rate <= LOW_BASELINE_RATE
        and result.successes > 0
        and result.rate > max(base_rate, needed)
    )


def _absorb(result: PolicyResult, more: PolicyResult, z: float) -> None:
    """Add ``more``'s episodes to ``result`` (its bounds recomputed)."""
    result.episodes += more.episodes
    result.successes += more.successes
    result.paid += more.paid
    _merge(result.earned, more.earned)
    result.lower = wilson_interval(result.successes, result.episodes, z)[0]


def _triple(bounds: _Bounds) -> tuple[int, int, float]:
    return (bounds.successes, bounds.episodes, bounds.upper)


class _Baseline:
    """The checker's random baseline for one agent, played on demand (and extended).

    Uniform over the distinct actions the oracle played on other tasks (each turn a fresh
    draw): a blind guess among the answers the checker has seen, right about once in as many
    labels however skewed the env's answers are. Without an oracle: random text. The env's own
    ``random_action`` is not used: an env could make it as strong as it likes (a stratified
    guess, even its oracle) and hide a constant that pays. Where the checker sees no answers
    it has to trust the env's policies: its ``random_action``, or for a multi-agent game the
    env's heuristic scripted player (there a degenerate policy's fixed move rule is play, and
    beats random moves as a sensible player does).
    """

    def __init__(
        self,
        game: _Single | _Multi,
        agent: str | None,
        memory: Sequence[EpisodeMemory],
        template: str,
        seed: int,
        oracle_paid: Sequence[float],
        z: float,
    ) -> None:
        self.game, self.agent, self.seed, self.z = game, agent, seed, z
        self.oracle_paid = list(oracle_paid)
        answers = [m.reference for m in memory if m.reference is not None]
        refs = list(dict.fromkeys(answers))
        self.labels = [_fill(template, r) for r in refs]
        self.answers = len(refs)
        # Chance is 1/labels only where the labels repeat (each seen about twice): the few
        # answers of a small answer space, not the first few of a large one.
        self.chance = 1 / max(2, len(refs)) if refs and len(answers) >= 2 * len(refs) else None
        self.outcomes: dict[int, _Outcome] = {}
        self.env_outcomes: dict[int, _Outcome] = {}
        self.env_random = game.random(agent)
        heuristic = None if refs or not isinstance(game, _Multi) else game.heuristic(agent)
        play = heuristic is None
        if heuristic is not None:
            # A game: every move rule is play (the 2nd free cell wins tic-tac-toe against a
            # scripted opponent about as often as a sensible player does, and random moves
            # never do), so the bar is the env's heuristic, a player that does not peek.
            self.env_random = heuristic
        #: Which baseline's paid reward is the bar (the lower-paid one on the check's episodes).
        self.paid_from: str | None = None
        #: Episodes of the check's own run (the first call's); more come from _EXTENSION on.
        self.main: int | None = None
        self.summary = (
            f"a uniform guess among the {len(refs)} distinct answers of the oracle's episodes "
            "on other tasks, written as the env's answer"
            if refs
            else "the env's random_action (no answers seen to guess among: moves, games)"
            if play
            else "the env's heuristic scripted policy (a game, no answers seen: any move rule "
            "is play, so the bar is a player that does not peek)"
        )

    def _guess(self, episode: int) -> Callable[..., str | None]:
        rng = np.random.default_rng([self.seed, episode, 29])
        labels = self.labels
        return lambda obs, first, info, turn: labels[int(rng.integers(len(labels)))]

    def _play(self, kind: str, wanted: Sequence[int]) -> list[_Outcome]:
        store = self.outcomes if kind == "guess" else self.env_outcomes
        for i in wanted:
            if i not in store:
                act = self._guess(i) if kind == "guess" else self.env_random
                if kind == "env":
                    # The env's random_action draws from its action space's generator, which
                    # gymnasium seeds from OS entropy unless told: unseeded, the bar (and the
                    # verdict) changed from run to run (gsm_symbolic failed 3 runs in 8, s27).
                    self.game.seed_actions(self.seed + i)
                # The baseline keeps the env's whole turn budget (a random walk needs it).
                store[i] = self.game.play(self.agent, act, seed=self.seed + i, limit=10_000)
        return [store[i] for i in wanted]

    def bounds(self, episodes: int) -> _Bounds:
        """The baseline on ``episodes`` episodes: the check's own first, then extra ones."""
        if self.main is None:
            self.main = episodes
        wanted = [*range(min(episodes, self.main))]
        wanted += [_EXTENSION + i for i in range(episodes - len(wanted))]
        chosen = self._play("guess" if self.labels else "env", wanted)
        paid = [o.paid for o in chosen]
        if self.labels:
            # Reward: the guess is written as an answer and may earn a format term that random
            # replies do not; the lesser of the two is the bar (the env cannot raise it).
            if self.paid_from is None:
                main = [*range(self.main)]
                own = float(np.mean([o.paid for o in self._play("env", main)] or [0.0]))
                guess = float(np.mean([o.paid for o in self._play("guess", main)] or [0.0]))
                self.paid_from = "env" if own < guess else "guess"
            paid = [o.paid for o in self._play(self.paid_from, wanted)]
        successes = sum(o.correct for o in chosen)
        upper = wilson_interval(successes, len(chosen), self.z)[1]
        if self.chance is not None:
            # A guess that was unlucky on these episodes must not lower the bar below chance.
            upper = max(upper, wilson_interval(self.chance * len(chosen), len(chosen), self.z)[1])
        return _Bounds(
            successes,
            len(chosen),
            upper,
            paid,
            self.oracle_paid,
            self.z,
            self.chance,
            self.answers,
        )


@dataclass(frozen=True)
class _Bounds:
    """The random baseline (and the oracle's paid rewards, for the reward range)."""

    successes: int
    episodes: int
    upper: float
    paid: Sequence[float]
    oracle_paid: Sequence[float]
    z: float
    #: Chance of a blind guess (1 / the answer labels seen, at most 1/2; None: unknown).
    chance: float | None = None
    labels: int = 0
    #: A learned policy's bar (its best constant answer): the paid rewards it must beat too.
    bar_paid: Sequence[float] = ()

    def paid_range(self, paid: Sequence[float]) -> tuple[float, float]:
        """The range paid rewards were seen in (0 included)."""
        values = [*self.paid, *self.oracle_paid, *self.bar_paid, *paid, 0.0]
        return min(values), max(values)


def _judge(policy: HackPolicy, result: PolicyResult, base: _Bounds, env: str) -> RuleFailure | None:
    who = f"{result.agent} playing " if result.agent else ""
    succ, n, upper = base.successes, base.episodes, base.upper
    if getattr(policy, "strict", False) and result.earned:
        rule = Rule(
            f"demonstration-earns-nothing:{policy.name}",
            "a reply copying a worked example agents are shown earns 0 in every paying "
            "reward component, on every task.",
            policy.fix,
        )
        detail = (
            f"{who}{policy.name} ({policy.summary}) earned {result.earned}; e.g. {result.example}"
        )
        return RuleFailure(rule, env, detail)
    low, high = base.paid_range(result.paid)
    paid_lower = mean_bounds(result.paid, low, high, base.z)[0]
    if getattr(policy, "floor", False):
        paid_floor = low + NONSENSE_MAX_RATE * (high - low)
        if result.lower > NONSENSE_MAX_RATE or paid_lower > max(paid_floor, 0.0):
            rule = Rule(
                f"nonsense-earns-nothing:{policy.name}",
                "random text is wrong (correct on at most "
                f"{NONSENSE_MAX_RATE:.0%} of episodes) and earns at most that share of the "
                "reward range.",
                policy.fix,
            )
            detail = (
                f"{who}{policy.name} ({policy.summary}) was correct in {result.successes}/"
                f"{result.episodes} episodes (lower bound {result.lower:.3f}) and earned a mean "
                f"paid reward of {result.mean_paid:.3f} (lower bound {paid_lower:.3f}); "
                f"e.g. {result.example}"
            )
            return RuleFailure(rule, env, detail)
        return None
    over_chance = base.chance is not None and result.lower > base.chance + CHANCE_MARGIN
    if result.lower > max(upper, MIN_FLAGGED_RATE) or over_chance:
        rule = Rule(
            f"degenerate-policy:{policy.name}",
            "a policy that solves nothing is correct no more often than random guessing "
            "(the checker's own uniform guess, and chance over the answers seen).",
            policy.fix,
        )
        chance = (
            f", chance 1/{max(base.labels, 2)} over {base.labels} answer(s) seen"
            if base.chance is not None
            else ""
        )
        detail = (
            f"{who}{policy.name} ({policy.summary}) was correct in {result.successes}/"
            f"{result.episodes} episodes (lower bound {result.lower:.3f}) against the random "
            f"baseline's {succ}/{n} (upper bound {upper:.3f}{chance}); e.g. {result.example}"
        )
        return RuleFailure(rule, env, detail)
    base_mean = float(np.mean(base.paid)) if base.paid else 0.0
    base_upper = mean_bounds(base.paid, low, high, base.z)[1]
    if base.chance is not None and high > low and base.paid:
        # As for correctness: a guess unlucky on these episodes must not lower the bar below
        # what one right at chance would earn (the oracle's pay on that share of episodes).
        oracle_mean = float(np.mean(base.oracle_paid)) if base.oracle_paid else high
        expected = min(high, base_mean + base.chance * oracle_mean)
        share = (expected - low) / (high - low)
        lifted = wilson_interval(share * len(base.paid), len(base.paid), base.z)[1]
        base_upper = max(base_upper, low + lifted * (high - low))
    if base.bar_paid:
        # A learned policy that only found the best constant earns what the constant earns:
        # the constant-answer policies judge that; its tell is what it earns beyond it.
        base_upper = max(base_upper, mean_bounds(base.bar_paid, low, high, base.z)[1])
    if paid_lower > base_upper + 1e-9:
        rule = Rule(
            f"degenerate-reward:{policy.name}",
            "a policy that solves nothing earns no more reward than the random baseline "
            "(shaping components included).",
            policy.fix + " Check what each paying reward component pays for.",
        )
        detail = (
            f"{who}{policy.name} ({policy.summary}) earned a mean paid reward of "
            f"{result.mean_paid:.3f} (lower bound {paid_lower:.3f}) against the random "
            f"baseline's {base_mean:.3f}"
            + (f" and its best constant's {np.mean(base.bar_paid):.3f}" if base.bar_paid else "")
            + f" (upper bound {base_upper:.3f}); e.g. {result.example}"
        )
        return RuleFailure(rule, env, detail)
    return None


# ------------------------------------------------------------------ the reference probe

#: ``info`` leaves the reference probe compares at most per view, and the depth it reads.
PROBE_INFO_LEAVES = 512
#: ``info`` keys the reference probe does not compare: a passed task record's id is a digest
#: of the record (``custom-<digest>``), which the probe's own change of the answer changes.
PROBE_IGNORED_INFO = ("task_id",)


def _flat(value: Any, path: str = "", depth: int = 0, out: dict[str, str] | None = None) -> dict:
    """``{path: repr(leaf)}`` of ``value`` (bools and ``None`` included, unlike the scan's)."""
    out = {} if out is None else out
    if len(out) >= PROBE_INFO_LEAVES:
        return out
    if depth <= INFO_SCAN_DEPTH and isinstance(value, Mapping):
        for key, item in value.items():
            _flat(item, f"{path}.{key}" if path else str(key), depth + 1, out)
    elif depth <= INFO_SCAN_DEPTH and isinstance(value, (list, tuple)):
        for key, item in enumerate(value):
            _flat(item, f"{path}.{key}" if path else str(key), depth + 1, out)
    else:
        out[path] = repr(value)
    return out


@dataclass
class _View:
    """What an agent was shown at one point before its episode ended."""

    own_actions: int  # the agent's own actions before it
    observation: str
    info: dict[str, str]
    reward: float


def _task_of(game: _Single | _Multi) -> Mapping[str, Any] | None:
    env = game.base if isinstance(game, _Single) else getattr(game.env, "unwrapped", game.env)
    task = getattr(env, "task", None)
    return task if isinstance(task, Mapping) else None


def _reference_fields(task: Mapping[str, Any], reference: str | None) -> tuple[str, ...]:
    """The fields of ``task`` among the reference names whose value is ``reference``."""
    if reference is None:
        return ()
    found = []
    for key in _REFERENCE_FIELDS:
        value = task.get(key)
        if isinstance(value, (list, tuple)) and value:
            value = value[0]
        if isinstance(value, (str, int, float)) and _same_answer(str(value), reference):
            found.append(key)
    # ``answers`` goes with ``answer`` (its aliases), whichever matched.
    if "answer" in found and "answers" in task and "answers" not in found:
        found.append("answers")
    return tuple(found)


def _probe_play(
    game: _Single | _Multi,
    agent: str | None,
    task: Mapping[str, Any],
    seed: int,
    own: str | Sequence[str],
    others: dict[tuple[int, str], str] | None,
) -> tuple[list[_View], bool, dict[tuple[int, str], str]]:
    """One probe episode on ``task``: the agent repeats ``own``; the others play ``others``.

    ``own`` is one action, sent every turn, or several, sent in turn (cycling).

    ``others`` (``None``: record them) are the other agents' actions by (step, agent): the
    scripted oracle's on the first run, replayed word for word on the second. Returns every
    view of the agent before its episode ended, whether it ended correct, and the others'
    actions.
    """
    options = {"task": dict(task)}
    views: list[_View] = []
    mine_in_turn = (own,) if isinstance(own, str) else tuple(own)
    if isinstance(game, _Single):
        obs, info = game.env.reset(seed=seed, options=options)
        views.append(_View(0, str(obs), _flat(info), 0.0))
        for turn in range(MAX_DEGENERATE_TURNS):
            action = mine_in_turn[turn % len(mine_in_turn)]
            obs, reward, terminated, truncated, info = game.env.step(action)
            if terminated or truncated:
                return views, bool(game.success(info)), {}
            views.append(_View(turn + 1, str(obs), _flat(info), float(reward)))
        return views, False, {}
    from rllm_envs.multiagent.base import ScriptedPolicy

    assert agent is not None
    env, oracle = game.env, ScriptedPolicy("oracle", seed=seed)
    recorded: dict[tuple[int, str], str] = {} if others is None else others
    observations, infos = env.reset(seed=seed, options=options)
    views.append(_View(0, str(observations[agent]), _flat(infos[agent]), 0.0))
    mine = 0
    for step in range(game.turn_limit):
        if agent not in env.agents:
            break
        actions = {}
        for a in env.agents:
            if not infos[a].get("acting", True):
                continue
            if a == agent:
                actions[a], mine = mine_in_turn[mine % len(mine_in_turn)], mine + 1
            elif others is None:
                actions[a] = recorded[(step, a)] = oracle(env, a)
            else:
                actions[a] = recorded.get((step, a), _fill(PLACEHOLDER, WRONG_ANSWER))
        observations, rewards, terms, truncs, infos = env.step(actions)
        if agent not in infos:
            break
        if terms.get(agent) or truncs.get(agent):
            return views, bool(game.success(infos[agent])), recorded
        view = _View(mine, str(observations[agent]), _flat(infos[agent]), rewards.get(agent, 0.0))
        views.append(view)
    return views, False, recorded


def _differences(a: Sequence[_View], b: Sequence[_View]) -> list[tuple[int, str, str, str]]:
    """``(own actions, place, shown with the reference, with the other)`` where views differ."""
    found = []
    for x, y in zip(a, b, strict=False):
        if x.observation != y.observation:
            found.append((x.own_actions, "observation", x.observation, y.observation))
        for path in sorted(set(x.info) | set(y.info)):
            if path.split(".", 1)[0] in PROBE_IGNORED_INFO:
                continue
            u, v = x.info.get(path, "<absent>"), y.info.get(path, "<absent>")
            if u != v:
                found.append((x.own_actions, f"info.{path}", u, v))
        if x.reward != y.reward:
            found.append((x.own_actions, "reward", repr(x.reward), repr(y.reward)))
    return found


def _signals(
    a: Sequence[_View], b: Sequence[_View], refs: Sequence[str]
) -> list[tuple[int, str, str, str]]:
    """:func:`_differences` of two probe runs that may be a signal of the reference."""
    return [
        d
        for d in _differences(a, b)
        # The observation stating each reference itself (answer options, or a leak the echo
        # families read) is the scan's business, not a correctness signal.
        if not (d[1] == "observation" and _states(d[2], refs[0]) and _states(d[3], refs[1]))
    ]


_FIX_REFERENCE_BLIND = (
    "keep grading away from an agent that still plays: nothing it is shown before it acts, and "
    "no answer of its but its last, may depend on the reference answer -- no is_correct, score, "
    "verdict, expected answer or other agents' grades (with their display order) in its info, "
    "observation or reward until the step at which its own episode ends (send them with that "
    "step; rllm_envs.multiagent.MultiAgentTextEnv.grading_info_keys does this for a family)."
)


#: Wrong answers the reference probe cycles through, one a turn (other oracle episodes' final
#: answers): feedback that tells a direction differs under two references only for a wrong
#: answer between them, so one fixed wrong answer often misses it.
PROBE_WRONG_ANSWERS = 8


def _wrong_answers(
    known: Sequence[EpisodeMemory], this: EpisodeMemory, refs: Sequence[str]
) -> tuple[str, ...]:
    """Other oracle episodes' final answers that are neither of ``refs`` (distinct ones)."""
    found: dict[str, None] = {}
    for other in known:
        if len(found) >= PROBE_WRONG_ANSWERS:
            break
        if other is this or other.reference is None:
            continue
        if not any(_same_answer(other.reference, ref) for ref in refs):
            found[other.actions[-1]] = None
    return tuple(found)


def _reference_probe(
    scan: LeakScan,
    game: _Single | _Multi,
    agent: str | None,
    memory: Sequence[EpisodeMemory],
    env_label: str,
) -> tuple[PolicyResult, RuleFailure | None]:
    """Play seeds twice with only the reference changed; fail where the agent's view differs.

    See :class:`LeakScan` (``reference_probes``) for what is compared and why.
    """
    result = PolicyResult("reference-swap", agent, 0, 0, 0.0)

    def unsupported(why: str) -> tuple[PolicyResult, None]:
        result.status, result.detail = "unsupported", f"reference probe not run: {why}"
        return result, None

    if scan.reference_probes <= 0:
        result.status, result.detail = "skipped", "reference_probes=0"
        return result, None
    known = [m for m in memory if m.actions and m.seed is not None]
    if not known:
        return unsupported("no oracle episode to take the reference answer from")
    tasks: list[tuple[EpisodeMemory, dict[str, Any]]] = []
    for m in known[: max(2 * scan.reference_probes, 2)]:
        game.env.reset(seed=m.seed)
        task = _task_of(game)
        if task is None:
            return unsupported("the env exposes no task record (`task`) to change the answer of")
        tasks.append((m, dict(task)))
    cache = game.__dict__.setdefault("_probe_fields", {})
    fields = tuple(scan.reference_fields or ())
    own_fields = fields or next(
        (f for f in (_reference_fields(t, m.reference) for m, t in tasks) if f), ()
    )
    fields = own_fields or cache.get("fields", ())
    if not fields:
        return unsupported(
            f"no task field among {list(_REFERENCE_FIELDS)} holds the oracle's answer (pass "
            "LeakScan(reference_fields=(...)) to name the fields the env grades with)"
        )
    cache.setdefault("fields", fields)
    effective = inconclusive = 0
    probed = 0
    for i, (m, task) in enumerate(tasks):
        if probed >= scan.reference_probes:
            break
        swapped = None
        for _, other in tasks[i + 1 :] + tasks[:i]:
            if all(k in other for k in fields) and any(
                repr(other[k]) != repr(task.get(k)) for k in fields
            ):
                swapped = {**task, **{k: other[k] for k in fields}}
                break
        if swapped is None:
            continue
        assert m.seed is not None
        own = m.actions[-1]
        try:
            views_a, right_a, others = _probe_play(game, agent, task, m.seed, own, None)
            views_b, right_b, _ = _probe_play(game, agent, swapped, m.seed, own, others)
        except Exception as e:
            return unsupported(
                f"playing a task record passed as reset(options={{'task': ...}}) raised "
                f"{type(e).__name__}: {describe(str(e), 160)}"
            )
        probed += 1
        result.episodes += 2
        effective += right_a and not right_b
        inconclusive += not right_a
        refs = (str(task.get(fields[0])), str(swapped.get(fields[0])))

        diffs, played = _signals(views_a, views_b, refs), own
        wrong = _wrong_answers(known, m, refs) if len(views_b) > 1 else ()
        if not diffs and wrong:
            # The env let the agent play on after a wrong answer: feedback to answers wrong
            # under both references must not depend on which one is graded either ("too
            # high" / "too low", a distance, digits right: a blind search follows it). One
            # wrong answer a turn, cycling through other tasks' answers.
            try:
                views_c, _, others_c = _probe_play(game, agent, task, m.seed, wrong, None)
                views_d, _, _ = _probe_play(game, agent, swapped, m.seed, wrong, others_c)
            except Exception as e:
                return unsupported(
                    f"playing a task record passed as reset(options={{'task': ...}}) raised "
                    f"{type(e).__name__}: {describe(str(e), 160)}"
                )
            result.episodes += 2
            diffs, played = _signals(views_c, views_d, refs), " then ".join(wrong)
            wrong_turns = bool(diffs)
        else:
            wrong_turns = False
        if diffs:
            result.successes += 1
            own_actions, place, shown_a, shown_b = diffs[0]
            if own_actions == 0:
                when = "before its first action"
            elif wrong_turns:
                when = (
                    f"after {own_actions} answer(s) of its own wrong under both of them "
                    "(feedback to a wrong answer that depends on the reference: a direction, "
                    "a distance or a partial score, which a blind search follows)"
                )
            else:
                when = (
                    f"after {own_actions} answer(s) of its own right under only one of them "
                    "(a still-playing agent told whether its answer is right)"
                )
            who = f"{agent} " if agent else "the agent "
            detail = (
                f"seed {m.seed}: the same actions with the reference {describe(refs[0], 40)} and "
                f"then {describe(refs[1], 40)} (task fields {list(fields)}): {when}, {who}was "
                f"shown {place} = {describe(shown_a, 60)} vs {describe(shown_b, 60)}"
                + (f" ({len(diffs) - 1} more difference(s))" if len(diffs) > 1 else "")
            )
            head = place.split(".", 2)
            rule = Rule(
                f"reference-blind:{'.'.join(head[:2])}",
                "what an agent is shown before it acts (and, while it still plays, after answers "
                "of its own) is the same when only the reference answer changes: no "
                "correctness signal reaches an agent before its final action.",
                _FIX_REFERENCE_BLIND,
            )
            result.status, result.detail = "failed", detail
            result.example = describe(played, 120)
            return result, RuleFailure(rule, env_label, detail)
    if probed == 0:
        return unsupported(f"no two oracle episodes with different {list(fields)} to swap")
    if own_fields and not effective:
        why = (
            "the oracle's answer did not solve the task passed as reset(options={'task': ...})"
            if inconclusive == probed
            else f"changing {list(fields)} did not change the grade of the oracle's answer (the "
            "env grades from other data; pass LeakScan(reference_fields=(...)))"
        )
        return unsupported(why)
    cache.setdefault("effective", True)
    result.example = describe(own, 120)
    result.detail = (
        f"{probed} seed(s) played twice with {list(fields)} changed: every view before the "
        "agent's final action identical"
    )
    return result, None
