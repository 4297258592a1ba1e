"""BM25 retrieval for rllm/Search-v1: bm25s (the chosen library) vs rank-bm25, in one run.

Measured on two corpora:

* the embedded default corpus (the generated knowledge base, 560 passages), queried with the
  oracle's hop queries;
* a synthetic 100k-passage corpus (60 tokens per passage drawn from a Zipf law over a
  50k-word vocabulary, like running text), queried with 5-word queries drawn from passages.

Warm: queries per second through the public :class:`~rllm_envs.search.BM25Retriever` of
each library (``backend="bm25s"`` / ``"rank_bm25"``, built once through ``build()``), the same
queries on the same corpus: tokenising the query, ranking, returning the top 3. Cold (large
corpus): building the index from the same pre-tokenised passages with each library's entry
point (:func:`~rllm_envs.search.bm25s_index`, what the retriever calls, vs
``rank_bm25.BM25Okapi``); tokenisation is the same for both and timed on its own; and, for
bm25s, loading the saved index with ``bm25s.BM25.load`` (what every process after the first
pays). Each bm25s benchmark names its rank-bm25 counterpart as its baseline; ``speedup`` =
rank-bm25 time / bm25s time, a ratio of medians (:mod:`benchmarks.perf._ratios`). Goal:
bm25s answers queries faster than rank-bm25 (>= 1x). Building has no goal: bm25s
precomputes the scores, so it builds slower to query far faster, and builds once per machine.

With ``--benchmark-disable`` (the CI smoke run) the synthetic corpus has 10k passages so the
file stays quick; real runs use 100k.
"""

from __future__ import annotations

from importlib import metadata

import numpy as np
import pytest

from benchmarks.perf._ratios import median_ratio, record
from rllm_envs.search import BM25Retriever, build_kb, kb_passages, make_question, tokenize
from rllm_envs.search.retrieval import bm25s_index, passage_text

bm25s = pytest.importorskip("bm25s")
rank_bm25 = pytest.importorskip("rank_bm25")
VERSIONS = {name: metadata.version(name) for name in ("bm25s", "rank-bm25")}

N_SYNTHETIC = 100_000
QUERIES_PER_ROUND = 50
#: rank-bm25 scores every passage per query (about 1 query/s at 100k): fewer per round there.
SYNTHETIC_QUERIES_PER_ROUND = 10


@pytest.fixture(scope="module")
def default_corpus():
    kb = build_kb(0, 200)
    passages = kb_passages(kb)
    queries = [
        hop
        for i in range(QUERIES_PER_ROUND)
        for hop in make_question(np.random.default_rng(i), kb=kb, difficulty=4)["hops"]
    ][:QUERIES_PER_ROUND]
    return passages, queries


@pytest.fixture(scope="module")
def synthetic_corpus(request):
    n = 10_000 if request.config.getoption("benchmark_disable", False) else N_SYNTHETIC
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    ids = np.minimum(rng.zipf(1.2, size=(n, 60)), 50_000) - 1
    passages = [
        {"id": str(i), "title": f"t{i}", "text": " ".join(vocab[row])} for i, row in enumerate(ids)
    ]
    picks = rng.integers(n, size=SYNTHETIC_QUERIES_PER_ROUND)
    queries = [" ".join(vocab[ids[p, rng.integers(60, size=5)]]) for p in picks]
    return passages, queries


@pytest.fixture(scope="module")
def synthetic_tokens(synthetic_corpus):
    passages, _ = synthetic_corpus
    return [tokenize(passage_text(p)) for p in passages]


@pytest.fixture(scope="module")
def retrievers(default_corpus, synthetic_corpus):
    """One retriever per (backend, corpus), built once through the public API."""
    built = {}
    for corpus, (passages, _) in (("default", default_corpus), ("synthetic100k", synthetic_corpus)):
        for backend in ("rank_bm25", "bm25s"):
            retriever = BM25Retriever(passages, backend=backend, cache_dir=False)
            retriever.build()
            built[backend, corpus] = retriever
    return built


def _corpus(request, corpus):
    return request.getfixturevalue("default_corpus" if corpus == "default" else "synthetic_corpus")


def _query_all(retriever, queries):
    def run():
        return [retriever.search(q, 3) for q in queries]

    return run


# ------------------------------------------------------------------- queries per second


@pytest.mark.parametrize("corpus", ["default", "synthetic100k"])
def test_queries_rank_bm25(benchmark, corpus, request, retrievers):
    passages, queries = _corpus(request, corpus)
    run = _query_all(retrievers["rank_bm25", corpus], queries)
    rounds = 30 if corpus == "default" else 2  # rank-bm25 needs ~1 s per query at 100k
    benchmark.extra_info.update(
        label=f"rank-bm25 queries, {len(passages):,} passages",
        queries_per_round=len(queries),
        passages=len(passages),
    )
    answers = benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=1)
    assert all(answers), "every query shares words with some passage"
    record(benchmark)


@pytest.mark.parametrize("corpus", ["default", "synthetic100k"])
def test_queries_bm25s(benchmark, corpus, request, retrievers):
    passages, queries = _corpus(request, corpus)
    run = _query_all(retrievers["bm25s", corpus], queries)
    kind = "the generated knowledge base" if corpus == "default" else "synthetic Zipf text"
    benchmark.extra_info.update(
        label=f"BM25 top-3 queries (bm25s), {len(passages):,} passages of {kind}",
        baseline=f"test_queries_rank_bm25[{corpus}]",
        baseline_label="rank-bm25 `BM25Okapi`, same corpus and queries",
        metric="speedup",
        goal=1,
        versions=VERSIONS,
        work=[len(queries), "queries"],
        queries_per_round=len(queries),
        passages=len(passages),
    )
    rounds = 30 if corpus == "default" else 10
    answers = benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=1)
    assert all(answers), "every query shares words with some passage"
    median_ratio(benchmark)


# ------------------------------------------------------------------------ index building


def test_tokenize_synthetic100k(benchmark, synthetic_corpus):
    passages, _ = synthetic_corpus
    benchmark.extra_info.update(
        label=f"tokenising {len(passages):,} passages", shared_by="both libraries"
    )
    benchmark.pedantic(
        lambda: [tokenize(passage_text(p)) for p in passages], rounds=1, iterations=1
    )
    record(benchmark)


def test_build_rank_bm25_synthetic100k(benchmark, synthetic_tokens):
    benchmark.extra_info.update(label="rank-bm25 index build")
    benchmark.pedantic(lambda: rank_bm25.BM25Okapi(synthetic_tokens), rounds=2, iterations=1)
    record(benchmark)


def test_build_bm25s_synthetic100k(benchmark, synthetic_tokens):
    # No goal: bm25s front-loads scoring into the index (slower to build, far faster to query),
    # and its index is built once per machine and then loaded from the disk cache.
    benchmark.extra_info.update(
        label=f"BM25 index build (bm25s), {len(synthetic_tokens):,} tokenised passages",
        baseline="test_build_rank_bm25_synthetic100k",
        baseline_label="rank-bm25 `BM25Okapi(tokens)`, same tokens",
        metric="speedup",
        versions=VERSIONS,
    )
    benchmark.pedantic(lambda: bm25s_index(synthetic_tokens), rounds=2, iterations=1)
    median_ratio(benchmark)


def test_load_bm25s_index_synthetic100k(benchmark, synthetic_tokens, tmp_path_factory):
    """Loading the saved index (what every process after the first pays) vs building it."""
    path = tmp_path_factory.mktemp("bm25-cache") / "index"
    bm25s_index(synthetic_tokens).save(str(path), show_progress=False)  # what a first build saves
    benchmark.extra_info.update(
        label="bm25s index load from disk (memory-mapped), same index",
        baseline="test_build_bm25s_synthetic100k",
        baseline_label="building it (bm25s, same tokens)",
        metric="speedup",
    )
    index = benchmark.pedantic(
        lambda: bm25s.BM25.load(str(path), mmap=True, show_progress=False), rounds=3, iterations=1
    )
    assert index.scores["num_docs"] == len(synthetic_tokens)
    median_ratio(benchmark)
