"""Search (``rllm/Search-v1``): multi-turn retrieval-augmented QA over an in-process BM25 index.

Plain modules (no Gymnasium import): :mod:`~rllm_envs.search.kb` (the generated knowledge
base and its questions), :mod:`~rllm_envs.search.retrieval` (BM25 with an on-disk index cache),
:mod:`~rllm_envs.search.data` (corpus and question-file loaders) and
:mod:`~rllm_envs.search.scoring` (exact match and F1). The environment class is in
:mod:`rllm_envs.search.search_env`.
"""

from __future__ import annotations

from rllm_envs.search.data import (
    QUESTION_FORMATS,
    corpus_from_records,
    detect_format,
    hotpotqa_corpus,
    load_corpus,
    question_records,
)
from rllm_envs.search.kb import KnowledgeBase, build_kb, kb_passages, make_question
from rllm_envs.search.retrieval import BACKENDS, BM25Retriever, default_cache_dir, tokenize
from rllm_envs.search.scoring import exact_match, f1_score, normalize_answer, score
from rllm_envs.search.search_env import SearchEnv

__all__ = [
    "SearchEnv",
    "BM25Retriever",
    "BACKENDS",
    "tokenize",
    "default_cache_dir",
    "KnowledgeBase",
    "build_kb",
    "kb_passages",
    "make_question",
    "load_corpus",
    "corpus_from_records",
    "question_records",
    "detect_format",
    "hotpotqa_corpus",
    "QUESTION_FORMATS",
    "normalize_answer",
    "exact_match",
    "f1_score",
    "score",
]
