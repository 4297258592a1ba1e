"""Answer scoring, the generated knowledge base and BM25 retrieval with its disk cache."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.search import (
    BM25Retriever,
    build_kb,
    exact_match,
    f1_score,
    kb_passages,
    make_question,
    normalize_answer,
    score,
    tokenize,
)
from rllm_envs.search import retrieval as retrieval_module
from rllm_envs.search.kb import DIFFICULTY_HOPS

pytest.importorskip("bm25s")
pytest.importorskip("rank_bm25")


# ----------------------------------------------------------------------------- scoring


def test_normalisation_is_squads():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("an Apple, a day") == "apple day"


def test_exact_match_and_f1():
    assert exact_match("the Ross Island.", ["Ross Island"]) == 1.0
    assert exact_match("Ross", ["Ross Island"]) == 0.0
    assert f1_score("Ross", ["Ross Island"]) == pytest.approx(2 / 3)
    assert f1_score("nothing", ["Ross Island", "Antarctica"]) == 0.0
    assert exact_match("", ["x"]) == 0.0 and f1_score("  ", ["x"]) == 0.0


def test_reference_scores_one_and_garbage_zero():
    task = {"answers": ["Charles Babbage", "Babbage"]}
    assert score("babbage", task) == 1.0
    assert score("qwzx ☃ \\boxed{", task) == 0.0
    assert score(None, task) == 0.0
    assert score("x" * 1_000_000, task) == 0.0


# ---------------------------------------------------------------------------------- kb


def test_kb_is_deterministic_and_names_are_unique():
    a, b = build_kb(3, 50), build_kb(3, 50)
    assert kb_passages(a) == kb_passages(b)
    names = [e["name"] for kind in (a.countries, a.cities, a.people, a.companies) for e in kind]
    assert len(names) == len(set(names))
    assert kb_passages(build_kb(4, 50)) != kb_passages(a)


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTY_HOPS))
def test_questions_have_the_difficultys_hops(difficulty):
    kb = build_kb(0, 60)
    for i in range(30):
        q = make_question(np.random.default_rng(i), kb=kb, difficulty=difficulty)
        assert q["n_hops"] in DIFFICULTY_HOPS[difficulty]
        assert len(q["hops"]) == q["n_hops"]


def test_answers_are_only_reachable_through_the_hops():
    """The last hop's retrieved passages hold the answer; the question alone names no answer."""
    kb = build_kb(0, 200)
    retriever = BM25Retriever(kb_passages(kb), cache_dir=False)
    for i in range(60):
        q = make_question(np.random.default_rng(i), kb=kb, difficulty=4)
        answer = q["answers"][0]
        assert answer not in q["question"]
        last = " ".join(p["title"] + " " + p["text"] for p, _ in retriever.search(q["hops"][-1], 3))
        assert answer in last, (q, last)


# --------------------------------------------------------------------------- retrieval

PASSAGES = [
    {"id": "a", "title": "Lake Vostok", "text": "A subglacial lake in Antarctica."},
    {"id": "b", "title": "Ada Lovelace", "text": "An English mathematician and writer."},
    {"id": "c", "title": "Mount Erebus", "text": "An active volcano in Antarctica."},
]


def test_tokenize_drops_stopwords_and_case():
    assert tokenize("Where IS the Lake of Vostok?") == ["lake", "vostok"]


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_both_backends_rank_the_same(backend):
    retriever = BM25Retriever(PASSAGES, backend=backend, cache_dir=False)
    hits = retriever.search("volcano Antarctica", 3)
    assert hits[0][0]["id"] == "c"
    assert {p["id"] for p, _ in hits} == {"a", "c"}  # no shared term: not returned
    assert retriever.search("the of", 3) == [] and retriever.search("", 3) == []
    assert retriever.search("zzzz", 3) == []


def test_index_is_cached_on_disk_by_corpus_hash(tmp_path, monkeypatch):
    monkeypatch.setattr(retrieval_module, "_MEMO", {})  # no in-process copy: build for real
    first = BM25Retriever(PASSAGES, cache_dir=tmp_path)
    first.build()
    assert first.index_path is not None and (first.index_path / "params.index.json").is_file()
    monkeypatch.setattr(retrieval_module, "_MEMO", {})
    built = []
    monkeypatch.setattr(BM25Retriever, "_build", lambda self: built.append(1))
    second = BM25Retriever(PASSAGES, cache_dir=tmp_path)
    assert second.search("volcano", 1)[0][0]["id"] == "c"
    assert built == []  # loaded from disk, not rebuilt
    other = BM25Retriever(PASSAGES[:2], cache_dir=tmp_path)
    assert other.index_path != first.index_path
    assert not any(p.name.startswith(first.index_path.name + ".tmp") for p in tmp_path.rglob("*"))


def test_default_cache_dir_honours_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RLLM_ENVS_CACHE", str(tmp_path / "c"))
    retriever = BM25Retriever(PASSAGES)
    assert str(retriever.index_path).startswith(str(tmp_path / "c"))


def test_retriever_pickles_without_its_index(tmp_path):
    retriever = BM25Retriever(PASSAGES, cache_dir=tmp_path)
    retriever.build()
    clone = pickle.loads(pickle.dumps(retriever))
    assert clone._index is None
    assert clone.search("lake", 1)[0][0]["id"] == "a"


def test_bad_retriever_arguments():
    with pytest.raises(InvalidEnvConfig):
        BM25Retriever(PASSAGES, backend="faiss")
    with pytest.raises(InvalidEnvConfig):
        BM25Retriever([])
