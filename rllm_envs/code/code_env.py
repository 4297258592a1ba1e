"""``rllm/Code-v0`` and ``rllm/CodeMultiTurn-v1``: competitive programming, judged in a sandbox."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from rllm_envs.code.datasets import FORMATS, apply_in_process, in_process_share, normalize
from rllm_envs.code.judge import (
    DEFAULT_TIME_LIMIT,
    JudgeResult,
    extract_code,
    has_unseen_hidden_test,
    hidden_pass_fraction,
    judge_task,
    unseen_hidden_tests,
)
from rllm_envs.core import TextEnv, Transition
from rllm_envs.error import InvalidDataset, InvalidEnvConfig, did_you_mean
from rllm_envs.sandbox import Backend, Status, select_backend
from rllm_envs.sandbox.harness import CXX_FLAGS, WALL_EXTRA, WALL_FACTOR, wall_limit
from rllm_envs.sandbox.runner import check_language
from rllm_envs.tasks import DatasetTasks, Task, load_records, rename_fields

__all__ = ["CodeEnv", "embedded_tasks", "load_code_tasks", "REWARD_MODES"]

REWARD_MODES = ("all", "fraction")
_SHOW = 600  # characters of a test's input/output shown in feedback
_DIFFICULTIES = ("easy", "medium", "hard")
#: Largest test count and judging budget (tests x seconds per test) of a task record passed
#: with ``options={"task": ...}``: what one step of a client-written task may cost a sandbox.
MAX_TASK_TESTS = 1000
MAX_TASK_SECONDS = 600.0

_log = logging.getLogger("rllm_envs.code")


@lru_cache(maxsize=1)
def _embedded_records() -> tuple[dict[str, Any], ...]:
    import json

    text = (resources.files("rllm_envs.code.data") / "problems.jsonl").read_text("utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def embedded_tasks() -> list[Task]:
    """The embedded problem set (original problems with reference solutions), as code tasks."""
    return [normalize(r, format="livecodebench") for r in _embedded_records()]


def load_code_tasks(
    dataset: str | Path | None = None,
    *,
    dataset_format: str = "auto",
    split: str | None = None,
    field_map: Mapping[str, str] | None = None,
    convert_asserts: bool = True,
    in_process: str = "drop",
) -> list[Task]:
    """Read code tasks from a local file or ``hf:`` name (``None``: the embedded set).

    Args:
        dataset: A local file or ``"hf:<name>"``; ``None`` for the embedded problems.
        dataset_format: A schema of :data:`rllm_envs.code.datasets.FORMATS`, or ``"auto"``.
        split: Split of an ``hf:`` dataset.
        field_map: ``{schema_field: record_field}`` renames applied to each raw record
            before it is read (e.g. ``{"question_content": "statement"}`` for a
            LiveCodeBench-like file whose statement column is ``statement``).
        convert_asserts: Convert assert-style tests to host-compared functional tests
            where possible (see :mod:`rllm_envs.code.convert`); ``False`` keeps them.
        in_process: What to do with tasks still judged inside the submission's process
            (assert kind, ``verdict_trust="in_process"``: a submission can disarm them):
            ``"drop"`` (default, safe for RL), ``"zero"`` (kept, marked so the env gives
            them reward 0) or ``"allow"``. Their share is logged (see
            :func:`rllm_envs.code.datasets.apply_in_process`).

    Raises:
        InvalidDataset: If the file cannot be read or a record fits no known schema.
        InvalidEnvConfig: For an unknown format or ``in_process``, or a ``field_map``
            without a dataset.
    """
    if dataset_format != "auto" and dataset_format not in FORMATS:
        raise InvalidEnvConfig(
            f"Expects `dataset_format` in {['auto', *FORMATS]}, actual: {dataset_format!r}."
            + did_you_mean(dataset_format, FORMATS)
        )
    if field_map is not None and not isinstance(field_map, Mapping):
        raise InvalidEnvConfig(
            "Expects `field_map` to be a dict {schema_field: record_field}, actual type: "
            f"{type(field_map).__name__}."
        )
    if dataset is None:
        if field_map:
            raise InvalidEnvConfig("`field_map` applies to a `dataset`; none was given.")
        return apply_in_process(embedded_tasks(), in_process, name="embedded")
    records = load_records(dataset, split=split)
    tasks = []
    for i, raw in enumerate(records):
        record = rename_fields(raw, field_map, name=str(dataset), index=i)
        try:
            task = normalize(record, format=dataset_format, convert_asserts=convert_asserts)
        except ValueError as e:
            raise InvalidDataset(f"Dataset {dataset} record {i}: {e}") from e
        task["id"] = task["id"] or f"{Path(str(dataset)).stem}-{i}"
        tasks.append(task)
    return apply_in_process(tasks, in_process, name=str(dataset))


#: The name of each language in prompts (its fence tag is the language itself).
_NAMES = {"python": "Python 3", "cpp": "C++17"}


def _fence(code: str, language: str = "python") -> str:
    return f"```{language}\n" + code.rstrip("\n") + "\n```"


def _trust(task: Task) -> str:
    return "in_process" if task["kind"] == "assert" else "host"


def _cut(text: str, limit: int = _SHOW) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[... cut ...]"


class CodeEnv(TextEnv):
    r"""Write a program that passes a problem's tests; it is run in a sandbox and judged.

    ## Description
    A competitive-programming task: a statement (with examples), maybe starter code, and
    hidden tests. The model answers with a Python 3 (or, with ``language="cpp"``, C++17)
    program in a fenced code block; the program runs in a sandbox
    (:mod:`rllm_envs.sandbox`: firejail or bubblewrap, no network, read-only system,
    CPU/memory/process/output limits) and all tests run in one sandbox
    (:mod:`rllm_envs.sandbox.harness`). Outputs are compared with
    LiveCodeBench's rules (:mod:`rllm_envs.code.judge`). The default task source is an
    embedded set of 35 original problems (27 stdin, 8 functional; easy to hard) with
    reference solutions; ``dataset=`` reads LiveCodeBench, TACO/APPS, Codeforces,
    CodeContests, HumanEval(+), MBPP, LeetCode, KodCode, PrimeIntellect or rLLM/DeepCoder
    records (:mod:`rllm_envs.code.datasets`); their assert-style tests become
    host-compared functional tests where possible (:mod:`rllm_envs.code.convert`). With
    ``multi_turn=True`` (``rllm/CodeMultiTurn-v1``) a submission that fails a public test
    gets feedback on it and the model may try again; one that passes the public tests is
    judged on the hidden tests and ends the episode.

    ## Observation
    First: the statement, the starter code if any, and the answer format (one fenced
    ```` ```python ```` block, or ```` ```cpp ````; for function tasks, the class or function
    to complete).
    After a step: the verdict of each public test, then one line for the hidden tests as a
    whole (``passed`` or ``not all passed`` once every public test passed; ``not run``
    when they did not run: with the default ``stop_on_failure`` they run only once the
    public tests pass; ``not reported`` when they ran after a public test failed, on the
    last turn or without ``stop_on_failure``, as in ``reward_mode="fraction"``: the
    observation then says no more about them than ``not run`` would), and the first
    failing public test (input, expected and actual output, error). Never how many hidden
    tests passed or which one failed: with that a policy could check guesses of hidden
    answers one test at a time. The hidden tests run in a fresh random order on every judge
    call (:func:`rllm_envs.code.judge.judge_task`).

    ## Action
    Free text; the code is its last fenced Python (or C++) block (:func:`rllm_envs.code.
    judge.extract_code`: text before ``</think>`` is ignored, an unclosed block at the end
    counts).
    A reply without a code block is a normal step with an ``invalid_action`` flag.

    ## Reward
    Weighted components (``reward_weights``): ``all_passed`` = 1 when every test passes
    (weight 1 with ``reward_mode="all"``), ``pass_fraction`` = fraction of the *unseen
    hidden* tests passed (weight 1 with ``reward_mode="fraction"``, else 0; see below),
    ``invalid_action`` = 1 for a reply without code (weight 0, log only). In the multi-turn
    variant only the submission that ends the episode is scored (earlier steps give 0), so
    the return is at most 1. With ``reward_mode="all"`` judging stops at the first failing
    test, and with ``stop_on_failure`` ``pass_fraction`` counts the hidden tests all or
    nothing (1 if every unseen hidden test passed, else 0).

    What each component pays for: ``all_passed`` only for a program that passes every test,
    hidden ones included. ``pass_fraction`` pays for hidden tests passed whose expected
    output no prompt shows (:func:`rllm_envs.code.judge.unseen_hidden_tests`): never for the
    public tests (the statement's examples), nor for a hidden test whose input is a public
    test's or that the statement shows as an example, so a program that prints the shown
    examples' outputs earns nothing for the copies; and only above what a program without
    the task's logic passes (one fixed output, the input or a line of it echoed, its first
    or last word: :func:`~rllm_envs.code.judge.trivial_pass_share`), so a constant earns 0
    on a YES/NO task. A public test that fails does not cost it (the last turn and
    ``stop_on_failure=False`` still run the hidden tests). ``invalid_action`` pays nothing
    (a log-only flag). A task with no such hidden test (every expected output in its
    prompt) has nothing honest to pay for under either reward: it is left out of the task
    list (logged), and passed with ``options={"task": ...}`` it raises
    ``InvalidEnvConfig``.

    ## Episode End
    Single-turn: terminates after one step. Multi-turn: terminates at the first submission
    that passes the public tests (its hidden tests decide the reward, solved or not), so a
    program that ran on hidden inputs is never followed by feedback showing a program's
    output; truncates after ``max_turns`` steps otherwise. On a turn before the last the
    hidden tests run only if every public test passed.

    ## Information
    The common keys of :mod:`rllm_envs.core` plus ``kind`` (``"stdin"``, ``"functional"``
    or ``"assert"``), ``language`` (``"python"`` or ``"cpp"``), ``difficulty``,
    ``num_public_tests`` and ``num_tests``; on ``step``:
    ``public_verdicts`` (verdict per public test: ``AC``, ``WA``, ``TLE``, ``RE``, ``MLE``,
    ``OLE``, ``CE`` or ``SKIP``; empty when no code ran), ``hidden_passed`` (``True``
    when every hidden test passed, ``False`` when one did not, ``None`` when none ran or a
    public test failed: what the observation says, no more), ``tests_total`` (the task's
    number of tests), ``has_code``, ``judge_error`` (``None`` unless the sandbox itself
    failed) and ``verdict_trust``: ``"host"`` when every verdict was decided on the
    host from the program's observed output, ``"in_process"`` for assert-kind tasks whose
    checks run inside the submission's own process (forgeable; see
    :mod:`rllm_envs.code.convert`); ``reward_zeroed``: the task's reward is 0 whatever the
    verdict (``in_process="zero"``). No timings (they are not deterministic).

    ## Arguments
    - ``dataset`` (str | None): ``None`` for the embedded problems, a local
      ``.jsonl``/``.json``/``.parquet`` file, or ``"hf:<name>"`` (needs network and the
      ``datasets`` extra).
    - ``dataset_format`` (str, default ``"auto"``): ``"livecodebench"``, ``"taco"``,
      ``"apps"``, ``"codeforces"``, ``"code_contests"``, ``"humaneval"``,
      ``"humanevalplus"``, ``"mbpp"``, ``"leetcode"``, ``"kodcode"``, ``"primeintellect"``,
      ``"deepcoder"`` (alias ``"rllm"``: rLLM/DeepCoder records).
    - ``split`` (str | None): split of an ``hf:`` dataset.
    - ``field_map`` (dict | None): ``{schema_field: record_field}`` renames applied to each
      record before it is read, for files whose columns have other names (e.g.
      ``{"question_content": "statement"}``).
    - ``convert_asserts`` (bool, default True): turn assert-style tests (HumanEval, MBPP,
      LeetCode, KodCode) into functional tests that the host compares
      (:mod:`rllm_envs.code.convert`); what cannot be converted stays assert kind, whose
      verdict is decided inside the submission's process. ``False`` keeps every assert.
    - ``in_process`` (``"drop"``, ``"zero"`` or ``"allow"``, default ``"drop"``): what to do
      with tasks still judged inside the submission's process (assert kind, forgeable by a
      submission that disarms the asserts): leave them out (safe for RL), keep them with
      reward 0 (``info["reward_zeroed"]``), or keep them as they are. The share of such
      tasks in the dataset is logged and kept as ``env.unwrapped.in_process_share``.
    - ``difficulty`` (str | None): keep only tasks of this difficulty (``"easy"``,
      ``"medium"``, ``"hard"`` for the embedded set).
    - ``multi_turn`` (bool, default False) and ``max_turns`` (int, default 1, or 4 when
      multi-turn).
    - ``reward_mode`` (``"all"`` or ``"fraction"``: ``all_passed`` or ``pass_fraction``
      pays, see Reward); ``stop_on_failure`` (bool, default: True for ``"all"``).
    - ``language`` (``"python"`` or ``"cpp"``, default ``"python"``): the language asked
      for and judged. C++ keeps only stdin tasks, is compiled in the sandbox with ``g++``
      (``apt-get install g++``) and its oracle is the task's ``solution_cpp`` (the
      embedded stdin problems have one; CodeContests records carry C++ solutions).
    - ``time_limit`` (float | None): seconds per test (default: the task's, else 6). A task
      record passed with ``options={"task": ...}`` may set its own ``time_limit`` in (0, 60]
      and have at most :data:`MAX_TASK_TESTS` tests and :data:`MAX_TASK_SECONDS` of
      wall-clock time in all (each test counts
      :func:`~rllm_envs.sandbox.harness.wall_limit` of its time limit).
    - ``memory_mb`` (int, default 1024): address-space limit per test.
    - ``sandbox_backend``: sandbox backend name (``"firejail"``, ``"bubblewrap"``, ``"plain"``) or
      ``None`` for auto-selection; an unusable sandbox raises ``SandboxUnavailable`` here.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - Every id: ``pass_fraction`` (the ``reward_mode="fraction"`` reward) counts only the
      hidden tests no prompt shows, never the public ones (a program printing the
      examples' outputs earned 0.30 of the embedded stdin problems, now 0); a hidden test
      the statement shows as an example, in any notation, is seen; tasks without an unseen
      test, or whose unseen tests expect one answer line (``-1``; ``NO`` per case), which a
      constant passes, or are all passed by an echo or a pick of the input's first or last
      word (some loaded records, none of the embedded ones), are left out under
      either mode; the feedback (and ``hidden_passed``)
      says nothing of hidden tests that ran after a public test failed; the share is paid
      above what a constant, an echo or a fixed input word passes (``print("NO")`` earned
      0.61 of a YES/NO dataset's fraction reward). The default
      ``reward_mode="all"`` rewards and observations of the embedded tasks are unchanged,
      so the ids are not bumped (the logged, unweighted ``pass_fraction`` component changed
      too).
    - ``rllm/CodeMultiTurn-v1``: an attempt that passes the public tests ends the episode
      (hidden tests decide its reward); the hidden tests run in a random order and the
      feedback (all ids) gives one line for them as a whole; ``info`` has ``hidden_passed``
      instead of ``tests_passed``.
    - v0: Initial version.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "all_passed": 1.0,
        "pass_fraction": 0.0,
        "invalid_action": 0.0,
    }

    def __init__(
        self,
        *,
        dataset: str | Path | None = None,
        dataset_format: str = "auto",
        split: str | None = None,
        field_map: Mapping[str, str] | None = None,
        convert_asserts: bool = True,
        in_process: str = "drop",
        difficulty: str | None = None,
        multi_turn: bool = False,
        max_turns: int | None = None,
        reward_mode: str = "all",
        language: str = "python",
        stop_on_failure: bool | None = None,
        time_limit: float | None = None,
        memory_mb: int = 1024,
        sandbox_backend: str | Backend | None = None,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if reward_mode not in REWARD_MODES:
            raise InvalidEnvConfig(
                f"Expects `reward_mode` in {REWARD_MODES}, actual: {reward_mode!r}."
            )
        if time_limit is not None and not (
            isinstance(time_limit, (int, float)) and 0 < time_limit <= 60
        ):
            raise InvalidEnvConfig(
                f"Expects `time_limit` to be seconds in (0, 60] or None, actual: {time_limit!r}."
            )
        if not isinstance(memory_mb, int) or memory_mb < 64:
            raise InvalidEnvConfig(
                f"Expects `memory_mb` to be an int >= 64, actual: {memory_mb!r}."
            )
        check_language(language)  # a machine without g++ fails here, with the fix
        loaded = load_code_tasks(
            dataset,
            dataset_format=dataset_format,
            split=split,
            field_map=field_map,
            convert_asserts=convert_asserts,
            in_process="allow",
        )
        #: Share of the loaded tasks judged inside the submission's process (before
        #: ``in_process`` was applied).
        self.in_process_share = in_process_share(loaded)
        self.in_process = in_process
        name = "code-embedded" if dataset is None else f"code-{Path(str(dataset)).stem}"
        tasks = apply_in_process(loaded, in_process, name=name)
        if not tasks:
            raise InvalidEnvConfig(
                f"Every task of {name} is judged inside the submission's process (assert "
                "kind) and in_process='drop' removed them; pass convert_asserts=True, or "
                "in_process='zero' or 'allow' (forgeable: not for RL)."
            )
        if language == "cpp":
            tasks = [t for t in tasks if t["kind"] == "stdin"]
            if not tasks:
                raise InvalidEnvConfig(
                    "language='cpp' judges stdin programs only, and this dataset has no stdin "
                    "task; use language='python'."
                )
        if difficulty is not None:
            kept = [t for t in tasks if str(t.get("difficulty", "")).lower() == difficulty.lower()]
            if not kept:
                found = sorted({str(t.get("difficulty", "")) for t in tasks})
                raise InvalidEnvConfig(
                    f"No task has difficulty {difficulty!r}; the dataset has {found}."
                )
            tasks = kept
        weights = {"all_passed": 1.0, "pass_fraction": 0.0}
        if reward_mode == "fraction":
            weights = {"all_passed": 0.0, "pass_fraction": 1.0}
        weights.update(reward_weights or {})  # a positive `invalid_action`: refused by the base
        # A task with no unseen hidden test (every expected output shown by its prompt, or one
        # answer line repeated) pays a copy of its examples, or a constant, under either reward:
        # it is left out.
        kept = [t for t in tasks if has_unseen_hidden_test(t)]
        if len(kept) < len(tasks):
            _log.info(
                "%s: %d of %d tasks left out: no hidden test apart from the shown examples, or "
                "every one expects the same answer line, so a copy or a constant would pass",
                name,
                len(tasks) - len(kept),
                len(tasks),
            )
        if not kept:
            raise InvalidEnvConfig(
                f"No task of {name} has a hidden test whose expected output the prompt does "
                "not show (and more than one answer line), so its rewards could pay only for "
                "copies of the examples or a constant; use a dataset with hidden tests."
            )
        tasks = kept
        self.multi_turn = bool(multi_turn)
        if max_turns is None:
            max_turns = 4 if self.multi_turn else 1
        if not self.multi_turn and max_turns != 1:
            raise InvalidEnvConfig(
                f"Expects `max_turns` == 1 without multi_turn=True, actual: {max_turns!r}."
            )
        super().__init__(
            tasks=DatasetTasks(tasks, name=name, required=("question", "kind")),
            max_turns=max_turns,
            reward_weights=weights,
            render_mode=render_mode,
        )
        self.reward_mode = reward_mode
        self.language = language
        self.stop_on_failure = reward_mode == "all" if stop_on_failure is None else stop_on_failure
        self.time_limit = time_limit
        self.memory_mb = memory_mb
        # Resolve now: a machine without a sandbox fails at construction, with the fix.
        self.backend = select_backend(sandbox_backend)

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        missing = [k for k in ("question", "kind", "public_tests", "hidden_tests") if k not in task]
        if missing:
            raise InvalidEnvConfig(
                f"A code task record needs the fields {missing} (see rllm_envs.code.datasets); "
                "normalise raw records with rllm_envs.code.datasets.normalize()."
            )
        tests = [task["public_tests"], task["hidden_tests"]]
        if not all(isinstance(t, list) for t in tests) or not all(
            isinstance(case, Mapping) and {"input", "output"} <= case.keys()
            for case in tests[0] + tests[1]
        ):
            raise InvalidEnvConfig(
                "A code task's public_tests and hidden_tests are lists of "
                "{'input': ..., 'output': ...} records."
            )
        limit = task.get("time_limit")
        if limit is not None and not (
            isinstance(limit, (int, float)) and not isinstance(limit, bool) and 0 < limit <= 60
        ):
            raise InvalidEnvConfig(
                f"A code task's time_limit is seconds in (0, 60] or None, actual: {limit!r}."
            )
        # A client-written task must not buy hours of sandbox time with one step: the
        # judging budget is bounded like every other per-step cost. It counts the wall clock
        # a test may hold its sandbox (a program that sleeps uses no CPU time), not only the
        # CPU-time limit.
        count = len(tests[0]) + len(tests[1])
        seconds = count * wall_limit(float(self.time_limit or limit or DEFAULT_TIME_LIMIT))
        if count > MAX_TASK_TESTS or seconds > MAX_TASK_SECONDS:
            raise InvalidEnvConfig(
                f"A code task may have at most {MAX_TASK_TESTS} tests and "
                f"{MAX_TASK_SECONDS:.0f} s of wall-clock time in all (a test may run "
                f"{WALL_FACTOR:g} x its time limit + {WALL_EXTRA:g} s); this one has {count} "
                f"tests, {seconds:.0f} s."
            )
        # After the size limits: what a statement shows is searched once they hold.
        if not has_unseen_hidden_test(dict(task)):
            raise InvalidEnvConfig(
                "A code task needs a hidden test whose expected output the prompt does not "
                "show (not a public test's input, not an example of the question, not made of "
                "the examples' cases), and its unseen tests more than one answer; this one "
                "has none, so a copy of its examples or a constant would be paid. Add hidden "
                "tests (a statement is searched up to MAX_STATEMENT_TOKENS tokens)."
            )

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._attempts: dict[str, JudgeResult] = {}
        self._unseen: list[int] | None = None  # the task's paid hidden tests, found once
        parts = [str(task["question"]).strip()]
        kind = task["kind"]
        if task.get("starter_code"):
            parts.append("Starter code:\n" + _fence(str(task["starter_code"])))
        if kind == "stdin":
            parts.append(
                f"Write a complete {_NAMES[self.language]} program that reads from standard "
                "input and writes the answer to standard output."
                + (
                    f" It is compiled with g++ {' '.join(CXX_FLAGS)}."
                    if self.language == "cpp"
                    else ""
                )
            )
        elif kind == "functional":
            name = task["func_name"]
            target = f"`Solution.{name}`" if task.get("starter_code") else f"`{name}`"
            parts.append(
                f"Complete {target}: return the answer (do not print it, do not read input). "
                "Include the whole class or function and any imports."
            )
        else:
            parts.append("Write the Python code; hidden tests will call it.")
        parts.append(
            "Answer with your code in one fenced block, exactly like this:\n"
            + _fence("// your code" if self.language == "cpp" else "# your code", self.language)
        )
        if self.multi_turn:
            parts.append(
                f"You have {self.max_turns} attempts. An attempt that passes the example tests "
                "is judged on the hidden tests and ends the episode; after one that fails an "
                "example test you see that test and may try again."
            )
        return "\n\n".join(parts), self._task_info(task)

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        code = extract_code(action, self.language)
        last_turn = self.turn >= self.max_turns
        if code is None:
            reason = "no fenced code block in the reply"
            text = (
                "No code found. Reply with your program in one fenced block: "
                f"```{self.language} ... ```."
            )
            if self.multi_turn and not last_turn:
                text += f" {self.max_turns - self.turn} attempt(s) left."
            return Transition(
                observation=text,
                reward_components={"all_passed": 0.0, "pass_fraction": 0.0, "invalid_action": 1.0},
                terminated=not self.multi_turn,
                correct=False,
                invalid_reason=reason,
                info={
                    "public_verdicts": [],
                    "hidden_passed": None,
                    "tests_total": self._num_tests(),
                    "has_code": False,
                    "judge_error": None,
                    "verdict_trust": _trust(self.task),
                    "reward_zeroed": self.task.get("in_process") == "zero",
                },
            )
        # Multi-turn: a program run on hidden inputs ends the episode, so no later turn's
        # feedback shows the output of a program that could carry them over (host page
        # cache, timing). Earlier turns run only while the public tests fail.
        gate = self.multi_turn and not last_turn
        # A program sent again on such a turn gets its verdict again, not a second run: a
        # policy that resubmits a failed attempt (more than half of the judged turns of the
        # reward-hacking check) costs one sandbox run, and a program whose output varies gets
        # no second draw at the public tests. The last turn runs it (its hidden tests too).
        result = self._attempts.get(code) if gate else None
        if result is None:
            result = judge_task(
                code,
                self.task,
                time_limit=self.time_limit,
                memory_mb=self.memory_mb,
                stop_on_failure=self.stop_on_failure,
                backend=self.backend,
                language=self.language,
                hidden_needs_public_pass=gate,
            )
            # Not a verdict the machine's load can decide (a time or memory limit, a crash:
            # a fork or thread refused under load reads as a run-time error, a sandbox that
            # failed to run): another run may go otherwise.
            if (
                gate
                and result.sandbox_status is Status.OK
                and not {"TLE", "MLE", "RE"} & set(result.verdicts)
            ):
                self._attempts[code] = result
        num_public = len(self.task["public_tests"])
        public_passed = all(v == "AC" for v in result.verdicts[:num_public])
        hidden = result.verdicts[num_public:]
        hidden_passed = None if all(v == "SKIP" for v in hidden) else all(v == "AC" for v in hidden)
        if not hidden:
            hidden_passed = True
        elif not public_passed:
            # What the observation says: hidden tests are described only once every public
            # one passed (they may have run: the last turn, or without stop_on_failure).
            hidden_passed = None
        solved = result.all_passed
        ends = solved or not self.multi_turn or (public_passed and bool(result.results))
        scored = ends or last_turn
        # An in-process verdict can be forged: with in_process="zero" it never pays.
        zeroed = self.task.get("in_process") == "zero"
        components = {
            "all_passed": float(solved) if scored and not zeroed else 0.0,
            "pass_fraction": self._fraction(result) if scored and not zeroed else 0.0,
            "invalid_action": 0.0,
        }
        return Transition(
            observation=self._feedback(result, last_turn or ends),
            reward_components=components,
            terminated=ends,
            correct=solved,
            invalid_reason=None,
            info={
                "public_verdicts": result.verdicts[:num_public],
                "hidden_passed": hidden_passed,
                "tests_total": result.total,
                "has_code": True,
                "judge_error": result.sandbox_error,
                "verdict_trust": result.verdict_trust,
                "reward_zeroed": zeroed,
            },
        )

    def oracle_action(self) -> str:
        """The task's reference solution (in the env's language) in a fenced block.

        Raises:
            InvalidDataset: If the task has no reference solution (e.g. LiveCodeBench).
        """
        assert self.task is not None, "Call reset() before oracle_action()."
        solution = self.task.get("solution_cpp" if self.language == "cpp" else "solution")
        if not solution:
            raise InvalidDataset(
                f"Task {self.task['id']} has no reference solution in "
                f"{_NAMES[self.language]}, so there is no oracle."
            )
        return _fence(str(solution), self.language)

    # ---------------------------------------------------------------------- internals

    def _fraction(self, result: JudgeResult) -> float:
        """Share of the unseen hidden tests passed; all or nothing with ``stop_on_failure``.

        Public tests and hidden tests the statement shows never count
        (:func:`rllm_envs.code.judge.hidden_pass_fraction`): their expected outputs are in
        the prompt. How many hidden tests ran before the first failure (in a random order)
        is noise, and a per-test count would be an oracle on which hidden answers are right.
        """
        assert self.task is not None
        if self._unseen is None:
            self._unseen = unseen_hidden_tests(dict(self.task))
        return hidden_pass_fraction(
            result, self.task, all_or_nothing=self.stop_on_failure, unseen=self._unseen
        )

    def _num_tests(self) -> int:
        assert self.task is not None
        return len(self.task["public_tests"]) + len(self.task["hidden_tests"])

    def _task_info(self, task: Task) -> dict[str, Any]:
        return {
            "kind": task["kind"],
            "language": self.language,
            "difficulty": str(task.get("difficulty") or ""),
            "num_public_tests": len(task["public_tests"]),
            "num_tests": len(task["public_tests"]) + len(task["hidden_tests"]),
        }

    def _feedback(self, result: JudgeResult, ends: bool) -> str:
        """Per-test verdicts of the public tests, one line for the hidden tests as a whole.

        Never a hidden test's count, position or output: with per-test results a policy
        could check its guesses of hidden answers one at a time.
        """
        assert self.task is not None
        if result.all_passed:
            return "Accepted: every test passed."
        if result.sandbox_error and not result.results:
            return "The judge could not run your program. Please submit it again."
        verdicts = result.verdicts
        public = self.task["public_tests"]
        if verdicts and all(v == "CE" for v in verdicts):
            head = "Compilation error:\n" + _cut(result.results[0].error or "", 1500)
        else:
            lines = ["Not accepted."]
            if public:
                lines.append(
                    "Example tests: "
                    + ", ".join(
                        f"{i + 1} {_VERDICT_WORDS[v]}"
                        for i, v in enumerate(verdicts[: len(public)])
                    )
                    + "."
                )
            hidden = verdicts[len(public) :]
            public_passed = all(v == "AC" for v in verdicts[: len(public)])
            if hidden:
                if all(v == "SKIP" for v in hidden):
                    lines.append("Hidden tests: not run (they run once the example tests pass).")
                elif not public_passed:
                    # They ran (the last turn, or no stop_on_failure) but say nothing more
                    # than "not run" would: the example tests failed.
                    lines.append(
                        "Hidden tests: not reported (they are reported once the example "
                        "tests pass)."
                    )
                elif all(v == "AC" for v in hidden):
                    lines.append("Hidden tests: passed.")
                else:
                    lines.append("Hidden tests: not all passed.")
            failing = next(
                (i for i, v in enumerate(verdicts[: len(public)]) if v not in ("AC", "SKIP")),
                None,
            )
            if failing is not None:
                test, outcome = public[failing], result.results[failing]
                got_label = "Your result" if self.task["kind"] == "functional" else "Your output"
                lines.append(
                    f"Example test {failing + 1} failed: {_VERDICT_WORDS[outcome.verdict]}."
                )
                if self.task["kind"] != "assert":
                    lines += [
                        "Input:\n" + _cut(str(test["input"])),
                        "Expected:\n" + _cut(str(test["output"])),
                        f"{got_label}:\n" + _cut(outcome.output),
                    ]
                else:
                    lines.append("Test:\n" + _cut(str(test["input"])))
                if outcome.error:
                    lines.append("Error:\n" + _cut(outcome.error, 1000))
            head = "\n".join(lines)
        if self.multi_turn and not ends:
            left = self.max_turns - self.turn
            head += (
                f"\n\nYou have {left} attempt(s) left. Reply with the corrected program in one "
                f"fenced ```{self.language} block."
            )
        return head


_VERDICT_WORDS = {
    "AC": "accepted",
    "WA": "wrong answer",
    "TLE": "time limit exceeded",
    "RE": "runtime error",
    "MLE": "memory limit exceeded",
    "OLE": "output limit exceeded",
    "CE": "compilation error",
    "SKIP": "not run",
}
