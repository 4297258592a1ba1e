"""``rllm/Search-v1``: multi-turn retrieval-augmented question answering over a BM25 index."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rllm_envs.core import TextEnv, Transition
from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.search.data import (
    QUESTION_FORMATS,
    corpus_from_records,
    detect_format,
    hotpotqa_corpus,
    load_corpus,
    question_records,
)
from rllm_envs.search.kb import DIFFICULTY_HOPS, build_kb, kb_passages, make_question
from rllm_envs.search.retrieval import BACKENDS, BM25Retriever
from rllm_envs.search.scoring import exact_match, f1_score
from rllm_envs.tasks import (
    DatasetTasks,
    ProceduralTasks,
    Task,
    TaskSource,
    check_difficulty,
    load_records,
    question_text,
    rename_fields,
)
from rllm_envs.text import answer_text, is_placeholder, tag_contents
from rllm_envs.tools import (
    FINAL_ANSWER,
    SearchFunction,
    ToolCall,
    ToolRegistry,
    search_tool,
)
from rllm_envs.tools.runner import run_turn

__all__ = ["SearchEnv", "kb_question"]

_QUESTION_FIELDS = ("question", "answers")
#: Example values of the prompt (placeholders already, refused as queries and answers).
_EXAMPLES = ("your query", "the answer", "a name", "a year", "a name, a year, ...")


def kb_question(
    rng: np.random.Generator, *, kb_seed: int, kb_size: int, difficulty: int, task_seed: int = 0
) -> Task:
    """Task generator of the embedded knowledge base (picklable through ``partial``)."""
    return make_question(rng, kb=build_kb(kb_seed, kb_size, task_seed), difficulty=difficulty)


class SearchEnv(TextEnv):
    r"""Answer questions by searching a corpus: multi-turn retrieval-augmented QA.

    ## Description
    The model issues search queries, reads the top passages of a BM25 index (in process, on
    CPU, no server or key) and answers. By default the corpus is an embedded, procedurally
    generated knowledge base of invented countries, cities, rivers, people and companies,
    with facts spread over passages; questions are single-hop (the birthplace of a person) or
    multi-hop (the country of the birthplace of a company's founder), and their answers are
    only in the corpus. A user corpus (JSONL of ``id``/``title``/``text``, or Search-R1's
    ``contents``) with HotpotQA, Natural Questions, Search-R1 or plain question files works
    too; a HotpotQA file alone brings its own corpus (its context paragraphs).

    ## Observation
    The first observation holds the instructions (search and answer formats, the number of
    passages per search, the turn budget) and the question. After a search, the observation
    holds the passages as ``<information>Doc 1 (Title: ...) text ...</information>``.
    No ANSI codes.

    ## Action
    Free text. ``<search>query</search>`` searches (several per reply are run, up to
    ``max_searches_per_turn``); ``<answer>text</answer>`` answers and ends the episode. The
    function-calling form also works: ``<tool_call>{"name": "search", "arguments": {"query":
    ...}}</tool_call>`` and ``final_answer`` (any form read by
    :func:`rllm_envs.tools.parse_tool_calls`). Only the answer part of the reply is read
    (:mod:`rllm_envs.text`: text before the last ``</think>`` is ignored; a reply cut inside
    an unclosed ``<think>`` does nothing). Copying the instructions does nothing either: an
    answer that is a placeholder (``"..."``, ``"the answer"``, ``""``) is refused, and a
    search for a placeholder (``"your query"``, ``""``) is not run; both are invalid actions
    and the episode goes on.

    ## Reward
    The weighted sum of components (``reward_weights``): ``em`` = exact match of the answer
    with any accepted answer after SQuAD normalisation (lower case, no punctuation or
    articles; weight 1.0); ``f1`` = the best token F1 (weight 0.0, log only);
    ``invalid_action`` = 1 for a reply with no usable search or answer, or with an unusable
    call, a placeholder search or a placeholder answer (weight 0.0, log only; pass
    ``reward_weights={"invalid_action": -0.05}`` for a penalty). Its best value, 0, needs a
    reply whose every search and answer is real.

    ## Episode End
    Terminates on an answer (right or wrong). Truncates after ``max_turns`` replies.

    ## Information
    The common keys of :mod:`rllm_envs.core` plus ``tools`` (OpenAI function-calling schemas
    of ``search`` and ``final_answer``, on reset and every step), ``n_hops`` (passages to
    chain, ``None`` for dataset questions); on ``step``: ``queries`` (the searches run),
    ``retrieved`` (ids of the passages returned), ``answer`` (the answer or ``None``),
    ``f1``, and the tool-turn keys ``tool_calls``, ``tool_results``, ``call_format``.

    ## Arguments
    - ``difficulty`` (int 1-5, default 2): hops of the generated questions: 1 = single-hop,
      2 = single- and two-hop, 3 = two-hop, 4 = two- and three-hop, 5 = three-hop.
    - ``kb_size`` (int >= 10, default 200): people in the generated world (about 2.8
      passages each); ``kb_seed`` (int, default 0): seed of the world. The world depends
      on ``task_seed`` too: each task seed plays its own world, and evaluation seeds
      (``rllm_envs.tasks.EVAL_SEED_START`` and up) play worlds whose names no training world
      uses, so no answer can be memorised from training.
    - ``corpus`` (path, optional): a user corpus file (JSONL/JSON/Parquet).
    - ``dataset`` (path or ``"hf:<name>"``, optional): a question file; ``dataset_format``
      (``"auto"``, ``"plain"``, ``"hotpotqa"``, ``"nq"``, ``"search_r1"``); ``field_map``
      renames columns (e.g. ``{"question": "query"}``).
    - ``top_k`` (int, default 3): passages per search; ``max_passage_chars`` (default 500).
    - ``retriever`` (``"bm25s"`` default, or ``"rank_bm25"``); ``cache_dir`` (path; default
      ``$RLLM_ENVS_CACHE`` or ``~/.cache/rllm-envs``; ``False`` disables the disk cache).
    - ``max_searches_per_turn`` (int, default 3).
    - ``reveal_reference`` (bool, default ``True``): ``False`` (a server's default) reports
      an unpaid ``f1`` as 1 or 0 only: against a hidden answer a token F1 is an oracle.
    - ``task_seed`` (int, default 0), ``max_turns`` (int, default 8), ``reward_weights``,
      ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version.
    - v1: the generated world depends on ``task_seed`` and
      evaluation seeds use their own name words (answers of one seed were answerable from
      memory under another: the world depended on ``kb_seed`` only); a seed plays every
      question of its world, and no answer holds more than ``max(1 / labels, 5%)`` of them
      (:class:`rllm_envs.tasks.ProceduralTasks` ``balance``).
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "em": 1.0,
        "f1": 0.0,
        "invalid_action": 0.0,
    }

    def __init__(
        self,
        *,
        difficulty: int = 2,
        kb_size: int = 200,
        kb_seed: int = 0,
        corpus: str | Path | None = None,
        dataset: str | Path | None = None,
        dataset_format: str = "auto",
        field_map: Mapping[str, str] | None = None,
        top_k: int = 3,
        max_passage_chars: int = 500,
        retriever: str = "bm25s",
        cache_dir: str | Path | bool | None = None,
        max_searches_per_turn: int = 3,
        task_seed: int = 0,
        max_turns: int = 8,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
        reveal_reference: bool = True,
    ) -> None:
        difficulty = check_difficulty(difficulty, DIFFICULTY_HOPS)
        if not isinstance(reveal_reference, bool):
            raise InvalidEnvConfig(
                f"Expects `reveal_reference` to be a bool, actual: {reveal_reference!r}."
            )
        self.reveal_reference = reveal_reference
        if not isinstance(kb_size, int) or kb_size < 10:
            raise InvalidEnvConfig(f"Expects `kb_size` to be an int >= 10, actual: {kb_size!r}.")
        if not isinstance(top_k, int) or not 1 <= top_k <= 50:
            raise InvalidEnvConfig(f"Expects `top_k` to be an int in [1, 50], actual: {top_k!r}.")
        if retriever not in BACKENDS:
            raise InvalidEnvConfig(f"Expects `retriever` in {BACKENDS}, actual: {retriever!r}.")
        if dataset_format not in QUESTION_FORMATS:
            raise InvalidEnvConfig(
                f"Expects `dataset_format` in {QUESTION_FORMATS}, actual: {dataset_format!r}."
            )
        if not isinstance(max_searches_per_turn, int) or max_searches_per_turn < 1:
            raise InvalidEnvConfig(
                f"Expects `max_searches_per_turn` >= 1, actual: {max_searches_per_turn!r}."
            )
        tasks: TaskSource
        if dataset is None:
            if corpus is not None:
                raise InvalidEnvConfig(
                    "A user `corpus` needs questions about it: pass `dataset=` (a question file "
                    "with `question` and `answer`)."
                )
            if field_map is not None:
                raise InvalidEnvConfig("`field_map` only applies with `dataset`.")
            passages = kb_passages(build_kb(kb_seed, kb_size, task_seed))
            generate = partial(
                kb_question,
                kb_seed=kb_seed,
                kb_size=kb_size,
                difficulty=difficulty,
                task_seed=task_seed,
            )
            # The world is the seed's universe's already (its names are words of that universe
            # only, kb.word_universe), so no question is redrawn for its universe (split=False):
            # the seed keeps every question of its world, and a constant answer meets all of
            # them. Answers are balanced on that world's questions (one country answers many
            # multi-hop questions). Keyed by the exact question (masking its names would leave
            # only the template).
            tasks = ProceduralTasks(
                generate,
                name=f"search-kb{kb_seed}x{kb_size}-d{difficulty}",
                seed=task_seed,
                key=question_text,
                balance=True,
                split=False,
            )
            self.corpus_name = "an invented encyclopedia of people, places and companies"
        else:
            raw = [
                rename_fields(r, field_map, name=str(dataset), index=i)
                for i, r in enumerate(load_records(dataset))
            ]
            if not raw:
                raise InvalidDataset(f"Question file {dataset} has no records.")
            fmt = detect_format(raw[0]) if dataset_format == "auto" else dataset_format
            name = Path(str(dataset)).stem
            questions = question_records(raw, fmt=fmt, name=name)
            if corpus is not None:
                passages = load_corpus(corpus)
                self.corpus_name = Path(str(corpus)).name
            elif fmt == "hotpotqa":
                passages = corpus_from_records(hotpotqa_corpus(raw), name=name)
                self.corpus_name = f"the context paragraphs of {Path(str(dataset)).name}"
            else:
                raise InvalidEnvConfig(
                    f"Questions in `{fmt}` format need a corpus: pass `corpus=` (a JSONL of "
                    "id/title/text passages)."
                )
            tasks = DatasetTasks(questions, name=name, required=_QUESTION_FIELDS)
        super().__init__(
            tasks=tasks, max_turns=max_turns, reward_weights=reward_weights, render_mode=render_mode
        )
        self.difficulty = difficulty
        self.top_k = top_k
        self.max_searches_per_turn = max_searches_per_turn
        self.n_passages = len(passages)
        self.retriever = BM25Retriever(passages, backend=retriever, cache_dir=cache_dir)
        tool = search_tool(self.retriever, top_k=top_k, max_passage_chars=max_passage_chars)
        assert isinstance(tool.function, SearchFunction)
        self._search = tool.function
        self.registry = ToolRegistry([tool, FINAL_ANSWER])
        self._schemas = self.registry.schemas()
        self._progress = 0

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        answers = task.get("answers")
        if not isinstance(task.get("question"), str) or not answers:
            raise InvalidEnvConfig(
                "A Search task record needs `question` (str) and `answers` (list of accepted "
                f"strings); got fields {sorted(task)}."
            )
        if isinstance(answers, str):
            raise InvalidEnvConfig("Expects `answers` to be a list of strings, not a string.")

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.retriever.build()  # index once, before the first step (then shared/cached)
        self._progress = 0
        observation = "\n".join(
            [
                "Answer the question below using a search engine over "
                f"{self.corpus_name} ({self.n_passages} passages). The answer is in these "
                "passages: search for it rather than guessing.",
                f"To search, write <search>your query</search>; the top {self.top_k} passages "
                "come back inside <information>...</information>. Search as often as you need.",
                "When you know the answer, write <answer>the answer</answer> with a short "
                "answer only (a name, a year, ...). This ends the episode.",
                'Function calls also work: <tool_call>{"name": "search", "arguments": '
                '{"query": "..."}}</tool_call> and <tool_call>{"name": "final_answer", '
                '"arguments": {"answer": "..."}}</tool_call>.',
                f"You have {self.max_turns} replies.",
                "",
                f"Question: {task['question']}",
            ]
        )
        return observation, self._extra_info(task)

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        self._search.retrieved = []
        report = run_turn(
            self.registry, action, max_calls=self.max_searches_per_turn, examples=_EXAMPLES
        )
        queries = [
            str(call.arguments.get("query", ""))
            for call, result in zip(report.executed, report.results, strict=True)
            if call.name == "search" and result.ok
        ]
        if report.final_answer is None:
            for query in tag_contents(answer_text(action), "search"):
                if is_placeholder(query, _EXAMPLES):
                    report.refuse(
                        f"<search>{query.strip()[:40]}</search> is a placeholder, not a query; "
                        "it was not run: search for the names and facts you need"
                    )
                    continue
                call = ToolCall("search", {"query": query.strip()})
                if len(report.executed) >= self.max_searches_per_turn:
                    report.errors.append(
                        f"only {self.max_searches_per_turn} searches run per reply; the rest "
                        "were skipped"
                    )
                    break
                result = self.registry.execute(call)
                report.calls.append(call)
                report.add(call, result)
                if result.ok:
                    queries.append(query.strip())
        self._advance_plan(queries, report.final_answer)
        info = {
            **self._extra_info(self.task),
            **report.info(),
            "queries": queries,
            "retrieved": list(self._search.retrieved),
            "answer": report.final_answer,
        }
        if report.final_answer is not None:
            answers = self.task["answers"]
            em = exact_match(report.final_answer, answers)
            f1 = f1_score(report.final_answer, answers)
            if not self.reveal_reference and not self.reward_weights.get("f1"):
                # A token F1 against a hidden answer is a bag-of-words oracle: a client
                # replaying one task narrows the answer's words down. Unpaid and hidden, it
                # reads 1 or 0.
                f1 = em
            info["f1"] = f1
            verdict = "correct" if em == 1.0 else "not correct"
            return Transition(
                observation=f"Answer received: {report.final_answer[:200]}. It is {verdict}.",
                reward_components={"em": em, "f1": f1, "invalid_action": 0.0},
                terminated=True,
                correct=em == 1.0,
                info=info,
            )
        info["f1"] = 0.0
        left = self.max_turns - self.turn
        if report.nothing_usable:
            errors = "; ".join(report.errors)
            reason = report.invalid_reason() or "no <search> query and no <answer> found"
            observation = (
                (f"[error] {errors}\n" if errors else "")
                + "Write <search>your query</search> to search or <answer>...</answer> to "
                f"answer. {left} replies left."
            )
            return Transition(
                observation=observation,
                reward_components={"em": 0.0, "f1": 0.0, "invalid_action": 1.0},
                invalid_reason=reason,
                info=info,
            )
        invalid = report.invalid_calls > 0
        return Transition(
            observation=report.observation() + f"\n\n{left} replies left.",
            reward_components={"em": 0.0, "f1": 0.0, "invalid_action": float(invalid)},
            invalid_reason=report.invalid_reason(),
            info=info,
        )

    def oracle_action(self) -> str:
        """Search each hop's entity in turn, then answer (a dataset question: search it once)."""
        assert self.task is not None, "Call reset() before oracle_action()."
        hops = self.task.get("hops") or [self.task["question"]]
        if self._progress < len(hops):
            return f"<search>{hops[self._progress]}</search>"
        return f"<answer>{self.task['answers'][0]}</answer>"

    # ---------------------------------------------------------------------- internals

    def _advance_plan(self, queries: list[str], answer: str | None) -> None:
        assert self.task is not None
        hops = self.task.get("hops") or [self.task["question"]]
        if self._progress < len(hops) and queries == [str(hops[self._progress]).strip()]:
            self._progress += 1

    def _extra_info(self, task: Task) -> dict[str, Any]:
        return {"tools": self._schemas, "n_hops": task.get("n_hops")}
