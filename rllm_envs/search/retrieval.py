"""In-process BM25 retrieval on CPU, with the index built once and cached on disk.

:class:`BM25Retriever` ranks a corpus of ``{"id", "title", "text"}`` passages for a query.
Two libraries can do the ranking:

* ``"bm25s"`` (the default): sparse-matrix BM25 (Lucene's variant), scores precomputed at
  index time, so a query costs a few sparse row look-ups. Its index is saved under
  ``<cache_dir>/search/bm25s-<corpus hash>/`` and loaded from there next time (memory-mapped),
  so a corpus is indexed once per machine, not once per process.
* ``"rank_bm25"``: ``rank_bm25.BM25Okapi``, which scores every passage per query in numpy;
  kept as the measured baseline (``benchmarks/perf/bench_search.py``), indexed in memory only.

Both get the same tokens (:func:`tokenize`: NFKC, lower case, word characters, English
stop words removed), so they differ only in the ranking library. Within a process, indexes
are shared by corpus hash, so vector envs and resets do not rebuild them. Retrievers pickle
without their index and reload it on first use.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rllm_envs.error import InvalidEnvConfig, require

__all__ = [
    "BM25Retriever",
    "BACKENDS",
    "tokenize",
    "corpus_hash",
    "default_cache_dir",
    "STOPWORDS",
    "bm25s_index",
    "passage_text",
]

BACKENDS = ("bm25s", "rank_bm25")
#: Bump when tokenization or the saved layout changes: it is part of the cache key.
_INDEX_VERSION = "1"
_TOKEN_RE = re.compile(r"\w+")
#: English stop words (the usual short list; names and numbers are never in it).
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with what which who whom where when how why did "
    "does do from".split()
)
#: Indexes shared within the process, by (backend, corpus hash); at most ``_MEMO_SIZE``.
_MEMO: dict[tuple[str, str], Any] = {}
_MEMO_SIZE = 8
_MEMO_LOCK = threading.Lock()


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` without stop words (the same for both backends)."""
    text = unicodedata.normalize("NFKC", text).lower()
    return [t for t in _TOKEN_RE.findall(text) if t not in STOPWORDS]


def passage_text(passage: dict[str, Any]) -> str:
    """The text that is indexed for a passage: its title, then its body."""
    return f"{passage.get('title', '')}\n{passage.get('text', '')}"


def corpus_hash(passages: Sequence[dict[str, Any]]) -> str:
    """A stable hash of the passages' ids, titles and texts (the cache key of an index)."""
    digest = hashlib.sha256(_INDEX_VERSION.encode())
    for p in passages:
        digest.update(
            json.dumps([str(p.get("id", "")), p.get("title", ""), p.get("text", "")]).encode()
        )
        digest.update(b"\n")
    return digest.hexdigest()[:24]


def default_cache_dir() -> Path:
    """``$RLLM_ENVS_CACHE``, else ``$XDG_CACHE_HOME/rllm-envs``, else ``~/.cache/rllm-envs``."""
    if os.environ.get("RLLM_ENVS_CACHE"):
        return Path(os.environ["RLLM_ENVS_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "rllm-envs"


class BM25Retriever:
    """BM25 ranking of a passage corpus.

    Args:
        passages: ``{"id", "title", "text"}`` dicts (the title is indexed with the text).
        backend: ``"bm25s"`` (default; cached on disk) or ``"rank_bm25"`` (in memory).
        cache_dir: Where on-disk indexes live (default :func:`default_cache_dir`); ``None``
            uses the default, ``False`` disables the disk cache.
        show_progress: Show the libraries' progress bars while indexing large corpora.

    Raises:
        InvalidEnvConfig: If the corpus is empty or the backend unknown.
        DependencyNotInstalled: If the backend's library is missing (``rllm-envs[search]``).
    """

    def __init__(
        self,
        passages: Sequence[dict[str, Any]],
        *,
        backend: str = "bm25s",
        cache_dir: str | Path | bool | None = None,
        show_progress: bool = False,
    ) -> None:
        if backend not in BACKENDS:
            raise InvalidEnvConfig(f"Expects `retriever` in {BACKENDS}, actual: {backend!r}.")
        if len(passages) == 0:
            raise InvalidEnvConfig("Expects a non-empty corpus of passages.")
        require(
            "bm25s" if backend == "bm25s" else "rank_bm25", "search", feature=f"{backend} retrieval"
        )
        self.passages = list(passages)
        self.backend = backend
        self.cache_dir: Path | None
        if cache_dir is False:
            self.cache_dir = None
        elif cache_dir is None or cache_dir is True:
            self.cache_dir = default_cache_dir()
        else:
            self.cache_dir = Path(cache_dir).expanduser()
        self.show_progress = show_progress
        self.key = corpus_hash(self.passages)
        self._index: Any = None

    # ------------------------------------------------------------------------- public

    @property
    def index_path(self) -> Path | None:
        """The on-disk location of this corpus's index (``bm25s`` with a cache dir only)."""
        if self.cache_dir is None or self.backend != "bm25s":
            return None
        return self.cache_dir / "search" / f"bm25s-{self.key}"

    def build(self) -> None:
        """Load or build the index now (otherwise it happens on the first search)."""
        self._get_index()

    def search(self, query: str, k: int = 3) -> list[tuple[dict[str, Any], float]]:
        """The top ``k`` passages for ``query`` with their BM25 scores (best first).

        Passages that share no term with the query are not returned, so the list may be
        shorter than ``k`` (empty for an empty or all-stop-word query).
        """
        tokens = tokenize(query)
        if not tokens or k < 1:
            return []
        index = self._get_index()
        k = min(int(k), len(self.passages))
        if self.backend == "bm25s":
            ids, scores = index.retrieve([tokens], k=k, show_progress=False, n_threads=0)
            pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True)]
        else:
            all_scores = index.get_scores(tokens)
            top = np.argsort(-all_scores, kind="stable")[:k]
            pairs = [(int(i), float(all_scores[i])) for i in top]
        return [(self.passages[i], s) for i, s in pairs if s > 0.0]

    # ---------------------------------------------------------------------- internals

    def _get_index(self) -> Any:
        if self._index is None:
            memo_key = (self.backend, self.key)
            with _MEMO_LOCK:
                index = _MEMO.get(memo_key)
                if index is None:
                    index = self._load() or self._build()
                    while len(_MEMO) >= _MEMO_SIZE:  # oldest first: dicts keep insertion order
                        _MEMO.pop(next(iter(_MEMO)))
                    _MEMO[memo_key] = index
            self._index = index
        return self._index

    def _build(self) -> Any:
        corpus_tokens = [tokenize(passage_text(p)) for p in self.passages]
        if self.backend == "rank_bm25":
            rank_bm25 = require("rank_bm25", "search", feature="rank_bm25 retrieval")
            # rank_bm25 divides by the corpus length; an all-stop-word passage is fine.
            return rank_bm25.BM25Okapi(corpus_tokens)
        index = bm25s_index(corpus_tokens, show_progress=self.show_progress)
        path = self.index_path
        if path is not None:
            # Save to a private directory, then rename: concurrent builders never see (or
            # leave) a half-written index.
            tmp = path.with_name(f"{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                index.save(str(tmp), show_progress=False)
                if path.exists():
                    _rmtree(tmp)
                else:
                    os.replace(tmp, path)
            except OSError:
                _rmtree(tmp)  # an unwritable cache only costs a rebuild next time
        return index

    def _load(self) -> Any:
        path = self.index_path
        if path is None or not (path / "params.index.json").is_file():
            return None
        bm25s = require("bm25s", "search", feature="bm25s retrieval")
        try:
            return bm25s.BM25.load(str(path), mmap=True, show_progress=False)
        except Exception:  # a corrupt or foreign cache entry is rebuilt, not fatal
            return None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_index"] = None  # reloaded from the process memo or the disk cache
        return state


def bm25s_index(corpus_tokens: Sequence[list[str]], *, show_progress: bool = False) -> Any:
    """A ``bm25s.BM25`` index of pre-tokenised passages.

    The tokens are mapped to integer ids here and handed to bm25s as its ``Tokenized`` type:
    given plain string lists it builds the same vocabulary about twice as slowly.
    """
    bm25s = require("bm25s", "search", feature="bm25s retrieval")
    from bm25s.tokenization import Tokenized

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(token, len(vocab)) for token in doc] for doc in corpus_tokens]
    index = bm25s.BM25()
    index.index(Tokenized(ids=ids, vocab=vocab), show_progress=show_progress)
    return index


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
