"""Question-answering scores: exact match and token F1 after the standard normalisation.

The normalisation is the one of the SQuAD evaluation script, used by Natural Questions,
HotpotQA and Search-R1 alike: lower case, punctuation removed, the articles *a*, *an* and
*the* removed, whitespace collapsed. A prediction is scored against every accepted answer
and the best score counts. No Gymnasium import.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

__all__ = ["normalize_answer", "exact_match", "f1_score", "score"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "‘’“”–—")
#: Predictions are read up to this many characters (a 1 MB answer is not compared in full).
_MAX_CHARS = 2000


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = unicodedata.normalize("NFKC", str(text)[:_MAX_CHARS]).lower()
    text = text.translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals a normalised accepted answer, else 0.0."""
    pred = normalize_answer(prediction)
    if not pred:
        return 0.0
    return float(any(pred == normalize_answer(a) for a in answers))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """Best token-level F1 of the prediction against the accepted answers."""
    pred = normalize_answer(prediction).split()
    if not pred:
        return 0.0
    return max((_f1(pred, normalize_answer(a).split()) for a in answers), default=0.0)


def score(answer: str | None, task: dict) -> float:
    """The task score of an answer: exact match against ``task["answers"]`` (``None`` -> 0)."""
    if answer is None:
        return 0.0
    return exact_match(answer, task["answers"])
