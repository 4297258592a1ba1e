"""BM25 retrieval for rllm/Search-v0: bm25s (the chosen library) vs rank-bm25, in one run.

Measured on two corpora:

* the embedded default corpus (the generated knowledge base, 560 passages), queried with the
  oracle's hop queries;
* a synthetic 100k-passage corpus (60 tokens per passage drawn from a Zipf law over a
  50k-word vocabulary, like running text), queried with 5-word queries drawn from passages.

For each: queries per second through :class:`~rllm_envs.search.BM25Retriever` (tokenising the
query, ranking, returning the top 3), and on the large corpus the index build time from the
same pre-tokenised passages (the library's own work; tokenisation is shared and reported
separately) and, for bm25s, loading the on-disk cache. Each bm25s benchmark names its rank-bm25
counterpart as its baseline; ``speedup`` = rank-bm25 time / bm25s time (queries: goal >= 1;
building has no goal: bm25s precomputes scores, so it builds slower and queries far faster).

With ``--benchmark-disable`` (the CI smoke run) the synthetic corpus has 10k passages so the
file stays quick; real runs use 100k.
"""

from __future__ import annotations

import numpy as np
import pytest

from rllm_envs.search import BM25Retriever, build_kb, kb_passages, make_question, tokenize
from rllm_envs.search import retrieval as retrieval_module
from rllm_envs.search.retrieval import bm25s_index, passage_text

bm25s = pytest.importorskip("bm25s")
rank_bm25 = pytest.importorskip("rank_bm25")

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
def synthetic_indexes(synthetic_tokens):
    return {
        "bm25s": bm25s_index(synthetic_tokens),
        "rank_bm25": rank_bm25.BM25Okapi(synthetic_tokens),
    }


def _retriever(passages, backend, request, corpus):
    retriever = BM25Retriever(passages, backend=backend, cache_dir=False)
    if corpus == "default":
        retriever.build()
    else:  # the same index the build benchmarks time, built once for the module
        retriever._index = request.getfixturevalue("synthetic_indexes")[backend]
    return retriever


def _query_all(retriever, queries):
    def run():
        for q in queries:
            retriever.search(q, 3)

    return run


# ------------------------------------------------------------------- queries per second


@pytest.mark.parametrize("corpus", ["default", "synthetic100k"])
def test_queries_rank_bm25(benchmark, corpus, request):
    passages, queries = request.getfixturevalue(
        "default_corpus" if corpus == "default" else "synthetic_corpus"
    )
    run = _query_all(_retriever(passages, "rank_bm25", request, corpus), queries)
    rounds = 30 if corpus == "default" else 2  # rank-bm25 needs ~1 s per query at 100k
    benchmark.extra_info.update(queries_per_round=len(queries), passages=len(passages))
    benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("corpus", ["default", "synthetic100k"])
def test_queries_bm25s(benchmark, corpus, request):
    passages, queries = request.getfixturevalue(
        "default_corpus" if corpus == "default" else "synthetic_corpus"
    )
    run = _query_all(_retriever(passages, "bm25s", request, corpus), queries)
    benchmark.extra_info.update(
        baseline=f"test_queries_rank_bm25[{corpus}]",
        metric="speedup",
        goal=1,
        queries_per_round=len(queries),
        passages=len(passages),
    )
    benchmark.pedantic(run, rounds=30 if corpus == "default" else 10, iterations=1, warmup_rounds=1)


# ------------------------------------------------------------------------ index building


def test_tokenize_synthetic100k(benchmark, synthetic_corpus):
    passages, _ = synthetic_corpus
    benchmark.extra_info.update(passages=len(passages), shared_by="both libraries")
    benchmark.pedantic(
        lambda: [tokenize(passage_text(p)) for p in passages], rounds=1, iterations=1
    )


def test_build_rank_bm25_synthetic100k(benchmark, synthetic_tokens):
    benchmark.pedantic(lambda: rank_bm25.BM25Okapi(synthetic_tokens), rounds=2, iterations=1)


def test_build_bm25s_synthetic100k(benchmark, synthetic_tokens):
    # No goal: bm25s front-loads scoring into the index (slower to build, far faster to query),
    # and its index is built once per machine and then loaded from the disk cache.
    benchmark.extra_info.update(baseline="test_build_rank_bm25_synthetic100k", metric="speedup")

    benchmark.pedantic(lambda: bm25s_index(synthetic_tokens), rounds=2, iterations=1)


def test_load_bm25s_cache_synthetic100k(
    benchmark, synthetic_corpus, synthetic_indexes, tmp_path_factory, monkeypatch
):
    """Loading the on-disk index (what every process after the first pays) vs building it."""
    passages, _ = synthetic_corpus
    cache = tmp_path_factory.mktemp("bm25-cache")
    monkeypatch.setattr(retrieval_module, "_MEMO", {})
    path = BM25Retriever(passages, cache_dir=cache).index_path
    synthetic_indexes["bm25s"].save(str(path), show_progress=False)  # what a first build saves

    def load():
        retrieval_module._MEMO.clear()
        BM25Retriever(passages, cache_dir=cache).build()

    benchmark.extra_info.update(
        baseline="test_build_bm25s_synthetic100k", metric="speedup", note="includes corpus hash"
    )
    benchmark.pedantic(load, rounds=3, iterations=1)
