"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/Search-v1",
        previous={
            "rllm/Search-v0": (
                "the world depends on `task_seed` and evaluation seeds use their own names; no "
                "answer above max(1/labels, 5%) of a world's questions"
            )
        },
        entry_point="rllm_envs.search.search_env:SearchEnv",
        description="Multi-turn retrieval-augmented QA: search a BM25 index (in process, cached "
        "on disk) and answer; an invented knowledge base with single- and multi-hop questions.",
        family="Search",
        spec="rllm_envs.search.spec:SPEC",
        scorer="rllm_envs.search.scoring:score",
        extra="search",
    ),
)
