"""Corpus and question loaders on small files in the real schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rllm_envs.error import InvalidDataset
from rllm_envs.search import detect_format, hotpotqa_corpus, load_corpus, question_records
from rllm_envs.tasks import load_records

FIXTURES = Path(__file__).parent / "fixtures"


def test_plain_corpus():
    passages = load_corpus(FIXTURES / "corpus.jsonl")
    assert len(passages) == 5
    assert passages[1] == {
        "id": "d2",
        "title": "Ada Lovelace",
        "text": passages[1]["text"],
    } and passages[1]["text"].startswith("Ada Lovelace was")


def test_search_r1_wiki_contents_corpus():
    passages = load_corpus(FIXTURES / "wiki_contents.jsonl")
    assert passages[1]["title"] == "Ross Island"
    assert passages[1]["text"].startswith("Ross Island is an island")


def test_corpus_without_text_is_rejected(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": 1, "body": "x"}) + "\n")
    with pytest.raises(InvalidDataset, match="neither `text` nor `contents`"):
        load_corpus(path)


@pytest.mark.parametrize(
    "name, fmt, first_answers",
    [
        ("questions.jsonl", "plain", ["London"]),
        ("hotpot_dev_distractor.json", "hotpotqa", ["yes"]),
        ("hotpot_hf.jsonl", "hotpotqa", ["yes"]),
        ("nq_open.jsonl", "plain", ["Ross Island", "Antarctica"]),
        ("nq_simplified.jsonl", "nq", ["Charles Babbage"]),
        ("search_r1.jsonl", "search_r1", ["Charles Babbage", "Babbage"]),
    ],
)
def test_question_formats(name, fmt, first_answers):
    records = load_records(FIXTURES / name)
    assert detect_format(records[0]) == fmt
    tasks = question_records(records, name=name)
    assert tasks[0]["answers"] == first_answers
    assert all(t["question"] and t["answers"] for t in tasks)


def test_hotpotqa_ids_and_types_are_kept():
    tasks = question_records(load_records(FIXTURES / "hotpot_dev_distractor.json"))
    assert tasks[1]["id"] == "5a8c7595554299585d9e36b6"
    assert tasks[1]["type"] == "bridge" and tasks[1]["level"] == "hard"


def test_simplified_nq_skips_questions_without_short_answers():
    tasks = question_records(load_records(FIXTURES / "nq_simplified.jsonl"))
    assert [t["question"] for t in tasks] == ["who designed the analytical engine"]


def test_search_r1_answers_from_reward_model():
    tasks = question_records(load_records(FIXTURES / "search_r1.jsonl"))
    assert tasks[1]["answers"] == ["Antarctica"]


@pytest.mark.parametrize("name", ["hotpot_dev_distractor.json", "hotpot_hf.jsonl"])
def test_hotpotqa_context_becomes_a_deduplicated_corpus(name):
    passages = hotpotqa_corpus(load_records(FIXTURES / name))
    titles = [p["title"] for p in passages]
    assert len(titles) == len(set(titles)) and "Ed Wood" in titles
    assert any("American director" in p["text"] for p in passages)


def test_bad_question_records_are_named():
    with pytest.raises(InvalidDataset, match="no answer"):
        question_records([{"question": "q", "answer": []}])
    with pytest.raises(InvalidDataset, match="no `question`"):
        question_records([{"answer": "a"}])
    with pytest.raises(InvalidDataset, match="dataset_format"):
        question_records([{"question": "q", "answer": "a"}], fmt="squad")
    with pytest.raises(InvalidDataset, match="no context|no `context`"):
        hotpotqa_corpus([{"question": "q", "answer": "a"}])
