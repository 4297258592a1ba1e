"""Loaders for user corpora and question files in the schemas of the common QA datasets.

Corpora (:func:`load_corpus`, JSONL/JSON/Parquet records):

* ``{"id", "title", "text"}`` -- the plain schema (``id`` optional: the line number is used).
* ``{"id", "contents"}`` -- Search-R1 / FlashRAG's Wikipedia dump, whose ``contents`` is the
  quoted title, a newline, then the text.

Questions (:func:`question_records`, format detected from the fields or given):

* ``"plain"`` -- ``{"question", "answer"}``, the answer a string or a list of accepted strings.
* ``"hotpotqa"`` -- HotpotQA's JSON (``_id``, ``question``, ``answer``, ``type``, ``level``,
  ``supporting_facts``, ``context`` as ``[title, sentences]`` pairs) or its Hugging Face form
  (``context`` as ``{"title": [...], "sentences": [...]}``). :func:`hotpotqa_corpus` turns the
  contexts into a corpus, so a HotpotQA file is playable without a separate corpus.
* ``"nq"`` -- NQ-open (``{"question", "answer": [...]}``) or the simplified Natural Questions
  release (``question_text``, ``document_text``, ``annotations[].short_answers`` token spans;
  records without a short answer are skipped).
* ``"search_r1"`` -- Search-R1 / FlashRAG records (``question``, ``golden_answers``, or
  ``reward_model.ground_truth.target``).

Every question becomes a task ``{"id", "question", "answers", "source"}``. No Gymnasium import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rllm_envs.error import InvalidDataset
from rllm_envs.tasks import load_records

__all__ = [
    "load_corpus",
    "corpus_from_records",
    "question_records",
    "detect_format",
    "hotpotqa_corpus",
    "QUESTION_FORMATS",
]

QUESTION_FORMATS = ("auto", "plain", "hotpotqa", "nq", "search_r1")


def corpus_from_records(records: Sequence[Mapping[str, Any]], *, name: str) -> list[dict[str, str]]:
    """Passages ``{"id", "title", "text"}`` from plain or Search-R1 (``contents``) records."""
    passages = []
    for i, record in enumerate(records):
        if "contents" in record and "text" not in record:
            contents = str(record["contents"])
            title, _, text = contents.partition("\n")
            title, text = title.strip().strip('"'), text.strip()
            if not text:
                title, text = "", contents
        elif "text" in record:
            title, text = str(record.get("title") or ""), str(record["text"])
        else:
            raise InvalidDataset(
                f"Corpus `{name}` record {i} has neither `text` nor `contents`; expects "
                f"{{'id', 'title', 'text'}} records. Fields: {sorted(record)}."
            )
        passages.append({"id": str(record.get("id", i)), "title": title, "text": text})
    if not passages:
        raise InvalidDataset(f"Corpus `{name}` has no passages.")
    return passages


def load_corpus(path: str | Path) -> list[dict[str, str]]:
    """Read a corpus file (see the module docstring for the schemas)."""
    return corpus_from_records(load_records(path), name=Path(str(path)).name)


def detect_format(record: Mapping[str, Any]) -> str:
    """Guess a question record's format from its fields."""
    if "golden_answers" in record or "reward_model" in record:
        return "search_r1"
    if "question_text" in record and "annotations" in record:
        return "nq"
    if "supporting_facts" in record or ("context" in record and "_id" in record):
        return "hotpotqa"
    return "plain"


def _answers(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [str(v) for v in value if str(v).strip()]
    if isinstance(value, Mapping) and "target" in value:
        return _answers(value["target"])
    if value is None:
        return []
    return [str(value)]


def _nq_simplified(record: Mapping[str, Any]) -> list[str]:
    tokens = str(record.get("document_text", "")).split(" ")
    answers = []
    for annotation in record.get("annotations") or []:
        for span in annotation.get("short_answers") or []:
            start, end = int(span["start_token"]), int(span["end_token"])
            text = " ".join(
                t for t in tokens[start:end] if not (t.startswith("<") and t.endswith(">"))
            )
            if text.strip():
                answers.append(text.strip())
        yes_no = str(annotation.get("yes_no_answer", "NONE")).upper()
        if yes_no in ("YES", "NO"):
            answers.append(yes_no.lower())
    return list(dict.fromkeys(answers))


def question_records(
    records: Sequence[Mapping[str, Any]], *, fmt: str = "auto", name: str = "questions"
) -> list[dict[str, Any]]:
    """Normalise question records of a known format into ``{"id", "question", "answers"}``.

    Args:
        records: Raw records.
        fmt: One of :data:`QUESTION_FORMATS` (``"auto"`` detects per file from the first
            record).
        name: Dataset name for task ids and messages.

    Raises:
        InvalidDataset: If the format is unknown, a record lacks its question or answer, or
            nothing usable remains.
    """
    if fmt not in QUESTION_FORMATS:
        raise InvalidDataset(f"Expects `dataset_format` in {QUESTION_FORMATS}, actual: {fmt!r}.")
    if not records:
        raise InvalidDataset(f"Question file `{name}` has no records.")
    if fmt == "auto":
        fmt = detect_format(records[0])
    tasks = []
    for i, record in enumerate(records):
        if fmt == "nq" and "question_text" in record:
            question, answers = record["question_text"], _nq_simplified(record)
            if not answers:
                continue  # most simplified-NQ questions have no short answer
            rid = record.get("example_id", i)
        else:
            question = record.get("question")
            if fmt == "search_r1":
                raw = record.get("golden_answers")
                if raw is None:
                    raw = ((record.get("reward_model") or {}).get("ground_truth") or {}).get(
                        "target"
                    )
            else:
                raw = record.get("answer", record.get("answers"))
            answers = _answers(raw)
            rid = record.get("_id", record.get("id", i))
        if not isinstance(question, str) or not question.strip():
            raise InvalidDataset(
                f"Question file `{name}` record {i} ({fmt}) has no `question` text; fields: "
                f"{sorted(record)}."
            )
        if not answers:
            raise InvalidDataset(
                f"Question file `{name}` record {i} ({fmt}) has no answer; expects `answer` "
                f"(a string or a list of strings). Fields: {sorted(record)}."
            )
        task: dict[str, Any] = {
            "id": str(rid),
            "question": question.strip(),
            "answers": answers,
            "source": fmt,
        }
        if fmt == "hotpotqa":
            task["type"] = record.get("type")
            task["level"] = record.get("level")
        tasks.append(task)
    if not tasks:
        raise InvalidDataset(f"Question file `{name}` has no question with a usable answer.")
    return tasks


def _hotpot_context(record: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    context = record.get("context")
    if isinstance(context, Mapping):  # the Hugging Face layout
        return list(zip(context.get("title", []), context.get("sentences", []), strict=False))
    return [(str(c[0]), list(c[1])) for c in context or [] if len(c) == 2]


def hotpotqa_corpus(records: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One passage per distinct paragraph title in HotpotQA contexts.

    Raises:
        InvalidDataset: If no record has a ``context``.
    """
    seen: dict[str, dict[str, str]] = {}
    for record in records:
        for title, sentences in _hotpot_context(record):
            if title not in seen:
                seen[title] = {
                    "id": f"hotpot-{len(seen)}",
                    "title": title,
                    "text": "".join(str(s) for s in sentences).strip(),
                }
    if not seen:
        raise InvalidDataset(
            "The HotpotQA records have no `context` paragraphs to build a corpus from; pass "
            "`corpus=` (a JSONL of id/title/text passages)."
        )
    return list(seen.values())
