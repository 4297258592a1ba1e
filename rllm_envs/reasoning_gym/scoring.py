"""Scoring of ``rllm/ReasoningGym-v0``: reasoning-gym's ``score_answer`` behind this suite's rules.

No Gymnasium import. The answer is the content of the last ``<answer>...</answer>`` block of
the reply's answer part (:mod:`rllm_envs.text`: text after ``</think>``). It is scored by the
task family's ``score_answer`` (reasoning-gym's, or this suite's own where reasoning-gym's runs
the answer as code: :mod:`rllm_envs.reasoning_gym.safe_scoring`), except that these earn 0:

* no answer block, or an empty one or a template (``"..."``, ``"your answer"``:
  :func:`rllm_envs.text.is_placeholder`);
* several different answer blocks (one final answer is graded, never the best of several);
* an echo: the answer holds the whole question;
* a copy: the answer is a piece of the question text (an example the question shows, the
  expression it asks to evaluate, a list holding the answer) and is not the reference answer
  itself. reasoning-gym pays some families partial credit for text that merely contains the
  answer or parses; copying the question must not collect it.

* a short constant (:data:`CONSTANTS`: ``"0"``, ``"1"``, ``"yes"``, ``"true"``, ...) that is
  not the reference answer itself: some scorers credit a matching prefix, so ``"0"`` would be
  right for every reference starting with ``0``;
* in ``propositional_logic``, a conclusion that restates the premises (their conjunction, a
  premise doubled or weakened: :mod:`rllm_envs.reasoning_gym.premises`). reasoning-gym pays any
  valid consequence, and the premises are one; tasks whose reference is such a restatement
  are drawn again (:mod:`rllm_envs.reasoning_gym.tasks`);
* in ``propositional_logic``, a weak conclusion: one that is not equivalent to the task's
  reference conclusion and follows from more than 5% of the premise sets the generator draws
  for the task's config (:func:`rllm_envs.reasoning_gym.premises.is_informative`). reasoning-gym
  pays any valid consequence, so ``(P ↔ Q)``, valid for a third of the default premise sets,
  earned 28% as a constant answer;
* a non-finite number (``nan``, ``inf``, ``infinity``, ``zoo``, ``oo``, ``∞``, case aside,
  or an exponent literal that overflows: ``1e999``) that the reference does not write
  itself. Distance scorers pay NaN in full (``min(1.0, exp(-nan))`` is 1.0: complex_arithmetic
  paid ``NaN + NaN i`` 150 of 150);
* a truncated answer: a strict prefix of the reference, or one less than half its length
  (spaces aside), that the scorer still credits and that is not numerically equal to it.

A scorer that raises on odd input scores 0 (model output never raises). An answer earns only
what nonsense (:data:`PROBE`, and the NaN answers of :data:`NAN_PROBES`) does not: where a
scorer pays nonsense as much (one family's compares only ``bool(answer)``; some pay 0.01 for
anything that parses; one paid NaN in full), the answer scores 0 unless it is the reference
answer itself (case and spacing aside).
"""

from __future__ import annotations

import copy
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rllm_envs.reasoning_gym.safe_scoring import UnsafeScorer
from rllm_envs.text import answer_text, is_placeholder, tag_contents

__all__ = [
    "COMPONENTS",
    "CONSTANTS",
    "Grade",
    "MAX_ANSWER_CHARS",
    "PROBE",
    "answer_blocks",
    "extract_answer",
    "grade",
    "score",
]

#: Reward components: ``correct`` (reasoning-gym's score is 1) and ``score`` (its raw score).
COMPONENTS = ("correct", "score")

#: Longer answers are cut before scoring (some scorers parse with sympy), unless the reference
#: itself is longer: an answer may then be twice its length (tower_of_hanoi's 7 disks take
#: 127 moves, 4,064 characters: cut at 4,000, the reference itself earned 0.05).
MAX_ANSWER_CHARS = 4000

#: An answer no task has: a scorer that pays for it on a task is blind there.
PROBE = "qz7 zx not an answer"
#: Not-a-number answers, probed too: a scorer that pays one on a task (reasoning-gym's
#: complex_arithmetic paid ``NaN + NaN i`` 1.0: ``min(1.0, exp(-nan))``) is blind there to
#: every spelling of NaN its parser may accept, so only the reference itself earns.
NAN_PROBES = ("nan", "nan + nan i", "[nan]")

#: Short constants a policy could answer everywhere: nonsense unless the reference itself.
CONSTANTS = frozenset({"", "0", "1", "-1", "yes", "no", "true", "false", "none", "null"})


@dataclass(frozen=True)
class Grade:
    """The verdict on one reply.

    Attributes:
        answer: The extracted answer (``None`` when the reply has no answer block).
        score: reasoning-gym's score after this suite's rules, in [0, 1].
        correct: ``score >= 1``.
        verdict: ``"correct"``, ``"partial"``, ``"wrong"``, ``"no_answer"``, ``"placeholder"``,
            ``"several_answers"``, ``"constant"``, ``"truncated"``, ``"restated_premises"``,
            ``"weak_conclusion"``, ``"non_finite"``,
            ``"echo"``, ``"copied_from_question"``, ``"scorer_error"`` or ``"scorer_refused"``
            (the family's scorer runs text as code: :mod:`rllm_envs.reasoning_gym.safe_scoring`).
        reason: Why, in words (``None`` when correct).
    """

    answer: str | None
    score: float
    correct: bool
    verdict: str
    reason: str | None

    @property
    def components(self) -> dict[str, float]:
        """The reward components of this grade."""
        return {"correct": float(self.correct), "score": float(self.score)}


def answer_blocks(reply: str) -> list[str]:
    """Every ``<answer>`` block of the reply's answer part, stripped, in order."""
    return [m.strip() for m in tag_contents(answer_text(reply), "answer")]


def extract_answer(reply: str) -> str | None:
    """The last ``<answer>`` block of the reply's answer part, stripped (``None`` if none)."""
    blocks = answer_blocks(reply)
    return blocks[-1] if blocks else None


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _copy_verdict(answer: str, task: Mapping[str, Any]) -> str | None:
    question = _normal(str(task.get("question", "")))
    given = _normal(answer)
    if not given or not question:
        return None
    if question in given:
        return "echo"
    reference = task.get("answer")
    ref = _normal(reference) if isinstance(reference, str) else None
    if given == ref:
        return None
    # A piece of the question no longer than the reference could be an answer the question
    # names (a word to pick, a number it mentions); a longer one holds more than an answer.
    if given in question and (ref is None or len(given) > len(ref)):
        return "copied_from_question"
    return None


def _compact(text: str) -> str:
    return "".join(_normal(text).split())


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


#: How far a numeric answer may be from a numeric reference (relative) and still be paid.
NUMERIC_TOLERANCE = 1e-2
#: A plain number (exponents of at most 3 digits: ``Fraction("1e999999999")`` is costly).
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?(/\d+)?\Z")


def _value(text: str) -> Fraction | None:
    """The exact value of a plain number (``0.25``, ``1/4``, ``1,000``, ``2e-3``), else None."""
    text = text.replace(",", "").strip()
    if len(text) > 100 or not _PLAIN_NUMBER.match(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _numeric_mismatch(answer: str, reference: object) -> str | None:
    """``"constant"``/``"wrong"`` for a number paid although its value is not the reference's.

    Both must be plain numbers; the answer is paid only within :data:`NUMERIC_TOLERANCE` of the
    reference (relative; exactly, for a reference of 0). ``"constant"`` for 0, 1 or -1.
    """
    if not isinstance(reference, str):
        return None
    a, r = _value(answer), _value(reference)
    if a is None or r is None or abs(a - r) <= NUMERIC_TOLERANCE * abs(r):
        return None
    return "constant" if a in (0, 1, -1) else "wrong"


def _truncated(answer: str, reference: object) -> bool:
    """Whether ``answer`` is a cut-down reference: a strict prefix, or under half its length.

    An answer numerically equal to the reference (``"0.5"`` for ``"0.50"``) is not cut down.
    """
    if not isinstance(reference, str):
        return False
    given, ref = _compact(answer), _compact(reference)
    if given == ref or not ref:
        return False
    short = (ref.startswith(given) and len(given) < len(ref)) or 2 * len(given) < len(ref)
    if not short:
        return False
    a, r = _number(given), _number(ref)
    return a is None or r is None or a != r


#: :func:`_nonsense_score` per task (a pure function of the scorer and the task), with the
#: scorer it was found with (held, so no other object takes its id while cached).
_NONSENSE: dict[tuple[int, str, str, str], tuple[Any, float]] = {}


def _cached_nonsense_score(scorer: Any, entry: Mapping[str, Any], task: Mapping[str, Any]) -> float:
    metadata = task.get("metadata") or {}
    family = metadata.get("source_dataset") if isinstance(metadata, Mapping) else None
    family = str(family or task.get("dataset"))
    key = (id(scorer), family, str(task.get("id")), str(task.get("question")))
    cached = _NONSENSE.get(key)
    if cached is None or cached[0] is not scorer:
        if len(_NONSENSE) > 4096:  # a bound; a score is cheap to find again
            _NONSENSE.clear()
        cached = _NONSENSE[key] = (scorer, _nonsense_score(scorer, entry))
    return cached[1]


def _nonsense_score(scorer: Any, entry: Mapping[str, Any]) -> float:
    """The most the scorer pays nonsense on this entry: :data:`PROBE` or a NaN probe.

    A probe's NaN score counts as 1 (``NaN`` is no score a grade may keep).
    """
    best = 0.0
    for probe in (PROBE, *NAN_PROBES):
        try:
            raw = float(scorer(probe, copy.deepcopy(dict(entry))))
        except Exception:  # noqa: BLE001 - a scorer that refuses the probe pays nothing for it
            continue
        best = max(best, 1.0 if math.isnan(raw) else raw)
        if best >= 1.0:
            break
    return best


#: Number tokens with no finite value, as parsers spell them (case aside): Python's and
#: numpy's ``nan``/``inf``/``infinity`` (``decimal``'s ``snan``, ``nan123``), sympy's ``zoo``
#: and ``oo``, ``∞``, each optionally an imaginary one (``nani``, ``infj``).
_NON_FINITE = re.compile(r"(?<![a-z])(?:s?nan|inf(?:inity)?|zoo|oo)[ij]?(?![a-z])|∞", re.IGNORECASE)
#: A decimal literal with an exponent, which a float overflows to ``inf`` (``1e999``).
#: Possessive quantifiers: linear on a long run of digits.
_EXPONENT_LITERAL = re.compile(r"(?<![\w.])(?:\d++(?:\.\d*+)?+|\.\d++)[eE]([+-]?)(\d++)(?![\w.])")


#: One name per value: ``nan``, ``inf`` (either sign) or ``zoo`` (complex infinity).
_CANONICAL = {"snan": "nan", "infinity": "inf", "oo": "inf", "∞": "inf"}


def _spellings(text: str) -> list[str]:
    return [m.group(0).lower().rstrip("ij") for m in _NON_FINITE.finditer(text)]


def _non_finite_tokens(text: str) -> set[str]:
    """The non-finite values ``text`` writes (:data:`_CANONICAL` names; ``1e999``: ``inf``)."""
    text = unicodedata.normalize("NFKC", text)
    found = {_CANONICAL.get(t, t) for t in _spellings(text)}
    for m in _EXPONENT_LITERAL.finditer(text):
        sign, digits = m.group(1), m.group(2).lstrip("0")
        if sign != "-" and (len(digits) > 6 or not math.isfinite(float(m.group(0)))):
            found.add("inf")
    return found


def _non_finite(answer: str, reference: object) -> bool:
    """Whether ``answer`` writes a non-finite number the reference does not write.

    Any token of :data:`_NON_FINITE` (or an exponent literal that overflows) counts, unless
    the reference has it too (a reference of ``inf``) or the reference is a plain text answer
    with no digit (a word ladder through ``NAN`` or ``ZOO``: no number is read there). Then
    the NaN probes (:data:`NAN_PROBES`) still catch a scorer that pays NaN.
    """
    tokens = _non_finite_tokens(answer)
    if not tokens:
        return False
    if isinstance(reference, str):
        if not any(c.isdigit() for c in reference) and not _non_finite_tokens(reference):
            return False
        tokens -= _non_finite_tokens(reference)
    return bool(tokens)


def _is_propositional_logic(task: Mapping[str, Any]) -> bool:
    metadata = task.get("metadata") or {}
    return (metadata.get("source_dataset") or task.get("dataset")) == "propositional_logic"


def _restatement(answer: str, task: Mapping[str, Any]) -> bool | None:
    """Whether a ``propositional_logic`` conclusion only restates the task's premises.

    Decided on truth tables (:func:`rllm_envs.reasoning_gym.premises.restates_premises`);
    ``None`` for another family or a conclusion it cannot decide (unparsed, too many atoms),
    which keeps this module's other rules and reasoning-gym's score.
    """
    if not _is_propositional_logic(task):
        return None
    metadata = task.get("metadata") or {}
    premises = metadata.get("premises")
    if not isinstance(premises, list) or not all(isinstance(p, str) for p in premises):
        return None
    from rllm_envs.reasoning_gym.premises import restates_premises

    return restates_premises(answer, premises)


def _max_valid_share() -> float:
    from rllm_envs.reasoning_gym.premises import MAX_VALID_SHARE

    return MAX_VALID_SHARE


def _weak_conclusion(answer: str, task: Mapping[str, Any]) -> bool:
    """Whether a valid ``propositional_logic`` conclusion says too little to be paid.

    :func:`rllm_envs.reasoning_gym.premises.is_informative`: not equivalent to the task's
    reference conclusion, and valid for more than 5% of the premise sets the generator draws
    for the task's config. Undecidable (no config in the metadata, too many atoms): not weak.
    """
    from rllm_envs.reasoning_gym.premises import is_informative
    from rllm_envs.reasoning_gym.tasks import oracle_answer

    metadata = task.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        return False
    try:
        reference = oracle_answer(task)
    except Exception:  # noqa: BLE001 - a record without a reference is judged by share alone
        reference = None
    return is_informative(answer, metadata, reference) is False


def grade(reply: str, task: Mapping[str, Any], *, uniform: bool = False) -> Grade:
    """Grade one reply on one task record (``dataset``, ``question``, ``answer``, ``metadata``).

    ``uniform``: run the checks after the scorer whatever it paid, so the time a grade takes
    does not say whether a reply was partly right (for a reference the player may not see).
    """
    from rllm_envs.reasoning_gym.tasks import scorer_for

    blocks = answer_blocks(reply if isinstance(reply, str) else str(reply))
    if not blocks:
        return Grade(None, 0.0, False, "no_answer", "no <answer></answer> block in the reply")
    answer = blocks[-1]
    if len({_normal(b) for b in blocks}) > 1:
        return Grade(
            answer, 0.0, False, "several_answers", "the reply gives several different answers"
        )
    reference = task.get("answer")
    is_reference = isinstance(reference, str) and _normal(answer) == _normal(reference)
    if is_placeholder(answer) and not is_reference:
        return Grade(answer, 0.0, False, "placeholder", "the answer is a template, not a value")
    if _normal(answer) in CONSTANTS and not is_reference:
        return Grade(
            answer, 0.0, False, "constant", "a short constant is not an answer to this question"
        )
    # A propositional_logic conclusion is judged on its meaning (restated premises below),
    # not on its text: a valid conclusion may well be a piece of a premise (``¬Q`` of
    # ``(¬Q ∨ ¬R)`` with ``R`` given). Its copy verdict waits for that judgement.
    logic = _is_propositional_logic(task)
    copied = _copy_verdict(answer, task)
    if copied == "echo":
        return Grade(answer, 0.0, False, "echo", "the answer repeats the question")
    if copied is not None and not logic:
        return Grade(
            answer, 0.0, False, copied, "the answer copies part of the question, not an answer"
        )
    limit = max(MAX_ANSWER_CHARS, 2 * len(reference) if isinstance(reference, str) else 0)
    if not is_reference and _non_finite(answer[:limit], reference):
        # NaN is no answer: a distance to it is NaN, and min(1.0, exp(-nan)) is 1.0.
        return Grade(
            answer, 0.0, False, "non_finite", "the answer writes a number that is not finite"
        )
    answer = answer[:limit]
    entry = {
        "question": task.get("question"),
        "answer": task.get("answer"),
        "metadata": copy.deepcopy(dict(task.get("metadata") or {})),
    }
    scorer = scorer_for(task)
    try:
        raw = float(scorer(answer, entry))
    except UnsafeScorer as e:  # a scorer that would run text as code is never called
        return Grade(answer, 0.0, False, "scorer_refused", str(e))
    except Exception as e:  # noqa: BLE001 - a scorer choking on model text is a wrong answer
        return Grade(answer, 0.0, False, "scorer_error", f"the answer could not be read: {e}")
    # With ``uniform``, the checks below run whatever the scorer paid: run only when it paid
    # something, their time told a client replaying a task with the reference hidden which
    # replies were partly right (a mini_sudoku solved cell by cell from step times, att31f).
    checks = not is_reference and (uniform or raw > 0)
    nonsense = _cached_nonsense_score(scorer, entry, task) if checks else 0.0
    if raw > 0 and not is_reference and raw <= nonsense:
        return Grade(answer, 0.0, False, "wrong", "the answer earns no more than nonsense does")
    value = min(max(raw, 0.0), 1.0) if raw == raw else 0.0
    # Decided only for a conclusion the scorer read and paid (it parses, in bounded time).
    restated = _restatement(answer, task) if logic and value > 0 else None
    if restated:
        return Grade(
            answer,
            0.0,
            False,
            "restated_premises",
            "the answer restates the premises; it infers nothing from them",
        )
    if logic and value >= 1.0 and _weak_conclusion(answer, task):
        return Grade(
            answer,
            0.0,
            False,
            "weak_conclusion",
            "the conclusion says too little: it follows from more than "
            f"{_max_valid_share():.0%} of this family's premise sets and is not the expected one",
        )
    if copied is not None and (restated is None or value < 1.0):
        return Grade(
            answer, 0.0, False, copied, "the answer copies part of the question, not an answer"
        )
    numeric = _numeric_mismatch(answer, reference) if checks else None
    truncated = _truncated(answer, reference) if checks else False
    piece = checks and _normal(answer) in _normal(str(task.get("question")))
    numeric = numeric if value > 0 else None
    if numeric is not None:
        # A number is right by its value, never by a text prefix (coin_flip credits the
        # matching prefix of ``.10g`` strings: ``0.000000`` earned 1.0 on 39 of 40 tasks).
        return Grade(answer, 0.0, False, numeric, "the answer's value is not the right one")
    if value > 0 and truncated:
        return Grade(
            answer, 0.0, False, "truncated", "the answer is only the start of the right one"
        )
    if value >= 1.0:
        return Grade(answer, 1.0, True, "correct", None)
    if value > 0 and piece:
        # A short piece of the question earns only when it is the answer.
        return Grade(
            answer, 0.0, False, "copied_from_question", "the answer copies part of the question"
        )
    verdict = "partial" if value > 0 else "wrong"
    return Grade(answer, value, False, verdict, "the answer is not correct")


def score(answer: str, task: Mapping[str, Any]) -> float:
    """The family's pure scorer: 1.0 when reasoning-gym scores the reply correct, else 0.0.

    ``answer`` is a full reply (its last ``<answer>`` block is read) or a bare answer.
    """
    tagged = tag_contents(answer_text(str(answer)), "answer")
    text = answer if tagged else f"<answer>{answer}</answer>"
    return 1.0 if grade(text, task).correct else 0.0
