"""``rllm/SWE-v0``: fix an issue in a Python repository with tools; hidden tests judge it."""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rllm_envs.core import TextEnv, Transition
from rllm_envs.demonstrations import DEMONSTRATIONS, Demonstration
from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.swe import judge
from rllm_envs.swe.repo import (
    PatchError,
    PatchTooLarge,
    Workspace,
    WorkspaceLimits,
    apply_diff,
    is_test_path,
    make_diff,
    normalize_path,
)
from rllm_envs.swe.spec import CALL_FORMAT, SWE_DEMONSTRATION
from rllm_envs.swe.tasks import (
    MAX_DIFFICULTY,
    base_files,
    check_patches,
    check_task,
    fixed_files,
    generate,
    probe,
)
from rllm_envs.tasks import DatasetTasks, ProceduralTasks, Task, TaskSource, check_difficulty
from rllm_envs.tools import Tool, ToolCall, ToolRegistry, parse_tool_calls, strip_reasoning

__all__ = ["SWEEnv", "TOOL_SCHEMAS"]


def _arg(kind: str, description: str) -> dict[str, str]:
    return {"type": kind, "description": description}


_PATH = _arg("string", "A file path relative to the repository root, e.g. pkg/module.py.")
#: Name, description and argument schema of every tool (the OpenAI ``parameters`` object).
TOOL_SCHEMAS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "list_files",
        "List the files of the repository under a folder (default: all).",
        {
            "type": "object",
            "properties": {"path": _arg("string", "A folder relative to the repository root.")},
            "required": [],
        },
    ),
    (
        "read_file",
        "Show a file with line numbers, optionally only lines start_line..end_line.",
        {
            "type": "object",
            "properties": {
                "path": _PATH,
                "start_line": _arg("integer", "First line to show (1-based)."),
                "end_line": _arg("integer", "Last line to show (inclusive)."),
            },
            "required": ["path"],
        },
    ),
    (
        "search",
        "Find the lines that contain a text (exact, case-sensitive) in the repository or "
        "under a folder.",
        {
            "type": "object",
            "properties": {
                "query": _arg("string", "The exact text to find."),
                "path": _arg("string", "Only search under this folder or file."),
            },
            "required": ["query"],
        },
    ),
    (
        "replace",
        "Replace the text `old` by `new` in a file; `old` must occur exactly once.",
        {
            "type": "object",
            "properties": {
                "path": _PATH,
                "old": _arg("string", "The exact text to replace, as it is in the file."),
                "new": _arg("string", "The text to put in its place."),
            },
            "required": ["path", "old", "new"],
        },
    ),
    (
        "apply_patch",
        "Apply a unified diff (--- a/<path> / +++ b/<path> headers, @@ hunks) to the repository.",
        {
            "type": "object",
            "properties": {"patch": _arg("string", "The unified diff.")},
            "required": ["patch"],
        },
    ),
    (
        "create_file",
        "Create a new file with the given content.",
        {
            "type": "object",
            "properties": {"path": _PATH, "content": _arg("string", "The whole file.")},
            "required": ["path", "content"],
        },
    ),
    (
        "run_tests",
        "Run the repository's tests in a sandbox: all, those under a path, or one test id "
        "(path::name).",
        {
            "type": "object",
            "properties": {
                "target": _arg("string", "A test file or folder, or a test id path::name.")
            },
            "required": [],
        },
    ),
    (
        "run_python",
        "Run Python code in a sandbox with the repository importable; shows its output.",
        {
            "type": "object",
            "properties": {"code": _arg("string", "The Python code to run.")},
            "required": ["code"],
        },
    ),
    (
        "submit",
        "Submit your changes; hidden tests decide whether the issue is fixed. Ends the episode.",
        {"type": "object", "properties": {}, "required": []},
    ),
)
_MAX_LISTED = 300
_MAX_READ_LINES = 400
_MAX_MATCHES = 50


@dataclass(frozen=True, repr=False, eq=False)
class _EnvTool:
    """A tool's function: the env's ``_tool_<name>`` method (picklable, unlike a bound one)."""

    env: SWEEnv
    name: str

    def __call__(self, **arguments: Any) -> str:
        return str(getattr(self.env, "_tool_" + self.name)(**arguments))


def _dataset_tasks(dataset: str | Path, repos_dir: str | Path | None) -> TaskSource:
    from rllm_envs.swe.loader import load_swebench

    if repos_dir is None:
        raise InvalidEnvConfig(
            "`dataset` needs `repos_dir`: the folder with the git repositories the records "
            "name (see rllm_envs.swe.loader)."
        )
    records = load_swebench(dataset, repos_dir)
    return DatasetTasks(records, name=Path(str(dataset)).stem, required=("FAIL_TO_PASS",))


class SWEEnv(TextEnv):
    r"""Fix an issue in a Python repository by calling tools; hidden tests judge the fix.

    ## Description
    A multi-turn software-engineering environment in the SWE-bench mould. Each task is an
    issue and a repository: by default one of the embedded procedural repositories (small
    Python packages with real test suites) with a seeded bug (off-by-one, wrong condition,
    missing case, wrong default, mutated API) and an issue written from what the buggy code
    does; or SWE-bench/SWE-Gym records over git repositories on disk (``dataset`` and
    ``repos_dir``, see :mod:`rllm_envs.swe.loader`). The agent reads, searches and edits a
    copy-on-write working copy of the repository, runs code and the public tests in a
    sandbox, and submits.

    ## Observation
    The first observation holds the issue, the repository's files, the tools with their
    arguments, the call format and the number of replies. Later observations hold each
    tool's result (``[name result]`` blocks) and any error about the reply.

    ## Action
    Free text with tool calls, read by :func:`rllm_envs.tools.parse_tool_calls` (Hermes
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, bare JSON or OpenAI-style
    calls), at most ``max_calls_per_turn`` per reply; text before the last ``</think>`` is
    ignored. Tools: ``list_files``, ``read_file`` (line ranges), ``search`` (exact text),
    ``replace`` (exact text, once), ``apply_patch`` (unified diff), ``create_file``,
    ``run_tests``, ``run_python`` and ``submit``. Calls after ``submit`` do not run.

    ## Reward
    At ``submit`` the working copy's diff is applied to a pristine copy of the base
    repository; its changes to the test suite (test files, test folders, ``conftest.py``) are
    dropped, the hidden tests are placed on top, and the fail-to-pass and pass-to-pass tests
    run in a fresh sandbox, each in its own process, as probes that report the values their
    assertions check (expected sides removed); the host compares them with the same probes'
    values on the reference fix, run in sandboxes of their own (:mod:`rllm_envs.swe.judge`),
    so no verdict is decided where the submitted code runs. A guard in each test process
    also refuses introspection of the test runner (frames, ``gc``, tracing, ``ctypes``,
    process memory, rebinding its state), and a run where it refused anything counts every
    test as failed. Components:
    ``resolved`` = 1 when every fail-to-pass and pass-to-pass test passes (weight 1.0; with
    ``partial_credit=True`` the fraction of the fail-to-pass tests the issue and the
    repository do not show (the task's fresh cases on which the buggy code returns a value
    and that keep none of the issue's numbers in place) that pass when no pass-to-pass test
    breaks, at most the share of all fail-to-pass tests: special-casing the issue's example,
    gating a fix on its numbers or generic error handling earns none of it); ``fail_to_pass`` and
    ``pass_to_pass``, the fractions that pass (weight 0.0, log only; without partial credit
    the run stops at the first test that fails, fail-to-pass tests first, and the tests not
    run count as failed); ``invalid_call``, the number of unusable parts of the reply
    (weight 0.0). Every component is 0 before submit.

    ## Episode End
    Terminates at ``submit``. Truncates after ``max_turns`` replies, or when the replies
    together pass ``max_episode_chars`` characters (a token budget); with
    ``submit_at_end=True`` the working copy is then judged as if submitted.

    ## Information
    The common keys of :mod:`rllm_envs.core` plus ``tools`` (OpenAI function schemas),
    ``repo``, ``difficulty`` and ``changed_files`` (paths the working copy changed); on
    ``step``: ``tool_calls``, ``tool_results`` (``[{"name", "ok", "error"}]``),
    ``call_format``, ``submitted``, ``patch_too_large`` (an ``apply_patch`` of the reply
    passed the diff's work bounds and was refused), and after a verdict ``fail_to_pass``,
    ``pass_to_pass``, ``patch_applied``, ``dropped_test_changes`` (test-suite paths whose
    changes were discarded), ``verdict_trust`` (``"host"``: no expected value of a hidden
    test is in the sandbox -- literal sides are dropped and tables' expected columns are
    replaced by placeholders, :mod:`rllm_envs.swe.tables`; ``"host_partial"`` when some
    hidden checks keep their expected values in the probe, e.g. a table read other ways
    than as an expected side, or a check the sandbox decides (a helper's or library
    predicate's bool); ``"in_process"`` for a task without a reference patch: see
    :mod:`rllm_envs.swe.judge` for what each guarantees; a verdict that is not ``"host"``
    pays 0 unless ``partial_verdicts="pay"``, since a submission can read or forge what its
    sandbox decides), ``verdict_withheld`` (``""``, or the sentence saying why a resolved
    verdict's reward was withheld; from reset on, for a loaded record on which no verdict
    can pay, why: no reference patch, or hidden tests that keep checks the sandbox decides,
    read from the tests before anything is submitted and also warned once per task),
    ``verdict_weakened`` (why a verdict is ``"host_partial"``: which kinds of hidden checks
    the probes left to the sandbox or weakened, e.g. identity checks, tables) and
    ``verdict_tampering`` (the test
    process tried to reach the runner's state; the run then counts as failed, reward 0) and
    ``reference_failing_tests`` (tests the task's own reference repository fails: a broken
    record; its pass-to-pass ones are not judged, and a warning names them once per task).

    ## Arguments
    - ``difficulty`` (int 1-5, default 1): 1 names the file in the issue, 2 the function,
      3 only the behaviour and adds a module with no bug, 4 two bugs, 5 two bugs and two
      modules with no bug.
    - ``dataset`` (path, optional) and ``repos_dir`` (folder): SWE-bench-format records
      over local git repositories instead of the embedded source.
    - ``partial_credit`` (bool, default False): see Reward.
    - ``partial_verdicts`` (``"withhold"``, the default, or ``"pay"``): whether a verdict whose
      ``verdict_trust`` is not ``"host"`` (``"host_partial"``, ``"in_process"``) pays; every
      embedded task is judged ``"host"``, so this matters for ``dataset=`` records only.
    - ``test_time_limit`` (float, default 10.0): seconds per test (and per ``run_python``).
    - ``verdict_time_limit`` (float, default 120.0): seconds for the whole verdict run.
    - ``memory_mb`` (int, default 1024): address-space limit of each test process.
    - ``sandbox_backend`` (str, optional): the sandbox backend (default: automatic).
    - ``warm`` (bool, default True): use sandboxes started ahead of time
      (:func:`rllm_envs.swe.judge.close_pools` stops them).
    - ``max_calls_per_turn`` (int, default 4), ``max_output_chars`` (int, default 6000).
    - ``max_episode_chars`` (int, optional): the episode's budget of reply characters.
    - ``submit_at_end`` (bool, default False): judge the working copy at truncation.
    - ``max_repo_chars`` (int, default 32 MiB): the working copy's size limit.
    - ``task_seed`` (int, default 0), ``max_turns`` (int, default 30), ``reward_weights``,
      ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version.
    """

    #: The worked examples agents show (the shared ones and this family's): a copy earns 0.
    demonstrations: ClassVar[tuple[Demonstration, ...]] = (*DEMONSTRATIONS, SWE_DEMONSTRATION)
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "resolved": 1.0,
        "fail_to_pass": 0.0,
        "pass_to_pass": 0.0,
        "invalid_call": 0.0,
    }

    def __init__(
        self,
        *,
        difficulty: int = 1,
        dataset: str | Path | None = None,
        repos_dir: str | Path | None = None,
        partial_credit: bool = False,
        partial_verdicts: str = "withhold",
        test_time_limit: float = judge.DEFAULT_TIME_LIMIT,
        verdict_time_limit: float = 120.0,
        memory_mb: int = 1024,
        sandbox_backend: str | None = None,
        warm: bool = True,
        max_calls_per_turn: int = 4,
        max_output_chars: int = 6000,
        max_episode_chars: int | None = None,
        submit_at_end: bool = False,
        max_repo_chars: int = 32 << 20,
        task_seed: int = 0,
        max_turns: int = 30,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        difficulty = check_difficulty(difficulty, range(1, MAX_DIFFICULTY + 1))
        partial_verdicts = judge.check_partial_verdicts(partial_verdicts)
        for name, value, low in (
            ("max_calls_per_turn", max_calls_per_turn, 1),
            ("max_output_chars", max_output_chars, 500),
            ("memory_mb", memory_mb, 128),
            ("max_repo_chars", max_repo_chars, 1024),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidEnvConfig(
                    f"Expects `{name}` to be an int >= {low}, actual: {value!r}."
                )
        if max_episode_chars is not None and (
            not isinstance(max_episode_chars, int) or max_episode_chars < 1
        ):
            raise InvalidEnvConfig(
                f"Expects `max_episode_chars` to be an int >= 1 or None, actual: "
                f"{max_episode_chars!r}."
            )
        if not isinstance(verdict_time_limit, (int, float)) or not 0 < verdict_time_limit:
            raise InvalidEnvConfig(
                f"Expects `verdict_time_limit` to be seconds > 0, actual: {verdict_time_limit!r}."
            )
        if not isinstance(test_time_limit, (int, float)) or not 0 < test_time_limit <= 600:
            raise InvalidEnvConfig(
                f"Expects `test_time_limit` to be seconds in (0, 600], actual: {test_time_limit!r}."
            )
        tasks: TaskSource
        if dataset is not None:
            tasks = _dataset_tasks(dataset, repos_dir)
        else:
            if repos_dir is not None:
                raise InvalidEnvConfig("`repos_dir` only applies with `dataset`.")
            tasks = ProceduralTasks(
                partial(generate, difficulty=difficulty),
                name=f"swe-d{difficulty}",
                seed=task_seed,
                probe=partial(probe, difficulty=difficulty),
            )
        super().__init__(
            tasks=tasks, max_turns=max_turns, reward_weights=reward_weights, render_mode=render_mode
        )
        if sandbox_backend is not None:
            from rllm_envs.sandbox import select_backend

            select_backend(sandbox_backend)  # an unknown or unusable backend fails here
        self.difficulty = difficulty
        self.partial_credit = bool(partial_credit)
        self.partial_verdicts = partial_verdicts
        self.test_time_limit = float(test_time_limit)
        self.verdict_time_limit = float(verdict_time_limit)
        self.memory_mb = memory_mb
        self.sandbox_backend = sandbox_backend
        self.warm = bool(warm)
        self.max_calls_per_turn = max_calls_per_turn
        self.max_output_chars = max_output_chars
        self.max_episode_chars = max_episode_chars
        self.submit_at_end = bool(submit_at_end)
        self.limits = WorkspaceLimits(max_total_chars=max_repo_chars)
        self.registry = ToolRegistry(
            [Tool(n, d, p, function=_EnvTool(self, n)) for n, d, p in TOOL_SCHEMAS],
            max_output_chars=max_output_chars,
        )
        self._schemas = self.registry.schemas()
        self.workspace: Workspace | None = None
        self._chars = 0
        self._patch_too_large = False
        self._submitted = False
        self._never_paid = ""
        self._unpayable_tasks: dict[str, str] = {}

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        if "repo_path" in task:
            # A folder on the host that runs the env: a client (of a server) naming one would
            # read any git repository the env can (its files become the observation). Records
            # of the env's own dataset name theirs under `repos_dir`, the operator's choice.
            raise InvalidDataset(
                "A passed task carries its repository as `files` ({path: text}); `repo_path` "
                "names a folder on the env's host and is read only from the env's own dataset "
                "(`dataset=` with `repos_dir=`)."
            )
        check_task(task)

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        base = base_files(task)
        check_patches(task, base)  # a broken record fails here, not at submit
        self._never_paid = self._unpayable(task, base)
        self.workspace = Workspace(base, self.limits)
        self._chars = 0
        self._submitted = False
        paths = self.workspace.paths()
        listed = "\n".join(paths[:_MAX_LISTED])
        if len(paths) > _MAX_LISTED:
            listed += f"\n[... {len(paths) - _MAX_LISTED} more; use list_files]"
        observation = "\n".join(
            [
                f"Fix the issue below in the repository `{task.get('repo', 'repo')}`.",
                "",
                "Issue:",
                str(task["problem_statement"]).strip(),
                "",
                "Files:",
                listed,
                "",
                "Tools:",
                self.registry.describe(),
                "",
                CALL_FORMAT,
                f"You have {self.max_turns} replies.",
            ]
        )
        return observation, self._extra_info()

    def _unpayable(self, task: Task, base: Any) -> str:
        """Why no submission can earn reward on ``task`` here (``""``: one can); warned once.

        Only a loaded record can be one (every embedded task is judged on the host): one
        without a reference patch, or whose hidden tests keep checks the sandbox decides,
        under ``partial_verdicts="withhold"``.
        """
        if self.partial_verdicts == "pay" or not isinstance(self.tasks, DatasetTasks):
            return ""
        key = str(task.get("id"))
        if key not in self._unpayable_tasks:
            why = judge.never_paid(task, base)
            self._unpayable_tasks[key] = why
            if why:
                warnings.warn(
                    f"No submission can earn reward on SWE task {key[:200]!r}: {why}",
                    stacklevel=4,
                )
        return self._unpayable_tasks[key]

    def _act(self, action: str) -> Transition:
        assert self.task is not None and self.workspace is not None
        self._chars += len(action)
        self._patch_too_large = False
        parsed = parse_tool_calls(strip_reasoning(action))
        errors = list(parsed.errors)
        invalid = len(parsed.errors)
        blocks: list[str] = []
        results: list[dict[str, Any]] = []
        problems: list[str] = []
        submitted = False
        for i, call in enumerate(parsed.calls):
            if submitted:
                errors.append(f"`{call.name[:64]}` after submit was not run")
                continue
            if i >= self.max_calls_per_turn:
                errors.append(
                    f"only {self.max_calls_per_turn} tool calls run per reply; "
                    f"`{call.name[:64]}` was skipped"
                )
                continue
            if call.name == "submit" and self.registry.check(call) is None:
                submitted = True
                results.append({"name": "submit", "ok": True, "error": None})
                continue
            result = self.registry.execute(call)
            results.append({"name": result.name, "ok": result.ok, "error": result.error})
            if result.error in ("unknown_tool", "invalid_arguments"):
                invalid += 1
                problems.append(result.output.removeprefix("Error: "))
            status = "" if result.ok else " (error)"
            blocks.append(f"[{call.name[:64]} result{status}]\n{result.output}")
        blocks += [f"[error] {e}" for e in errors]
        nothing = not parsed.calls and not parsed.errors
        if nothing:
            invalid = 1
            blocks.append(
                "No tool call found in your reply. Call a tool with "
                '<tool_call>{"name": ..., "arguments": {...}}</tool_call>, or submit.'
            )
        info = {
            **self._extra_info(),
            "tool_calls": [_call_info(c) for c in parsed.calls],
            "tool_results": results,
            "call_format": parsed.format,
            "submitted": submitted,
            "patch_too_large": self._patch_too_large,
        }
        reason = None
        if nothing:
            reason = "no tool call found"
        elif invalid:
            reason = "; ".join([*parsed.errors, *problems])[:500] or "unusable tool call"
        last = self.turn >= self.max_turns or self._over_budget()
        if submitted or (last and self.submit_at_end):
            return self._judge(blocks, invalid, info, reason, submitted)
        left = self.max_turns - self.turn
        blocks.append(f"{left} replies left.")
        return Transition(
            observation="\n\n".join(blocks),
            reward_components=self._components(None, invalid),
            invalid_reason=reason,
            info=info,
        )

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply a reply; the episode also truncates when the character budget is spent."""
        observation, reward, terminated, truncated, info = super().step(action)
        if not (terminated or truncated) and self._over_budget():
            truncated = True
            self.done = True
        return observation, float(reward), terminated, truncated, info

    def oracle_action(self) -> str:
        """The reference fix as an ``apply_patch`` call (from the working copy), then submit."""
        assert self.task is not None and self.workspace is not None, "Call reset() first."
        target = fixed_files(self.task)
        current = self.workspace.snapshot()
        paths = sorted(
            p
            for p in set(target) | set(current)
            if target.get(p) != current.get(p) and not is_test_path(p)
        )
        calls = []
        if paths:
            patch = make_diff(current, target, only=paths)
            calls.append(ToolCall("apply_patch", {"patch": patch}))
        calls.append(ToolCall("submit", {}))
        return "\n".join(c.to_text() for c in calls)

    def close(self) -> None:
        """Drop the working copy (the shared sandboxes stay for other envs)."""
        self.workspace = None
        super().close()

    # ---------------------------------------------------------------------- verdict

    def _over_budget(self) -> bool:
        return self.max_episode_chars is not None and self._chars >= self.max_episode_chars

    def _components(self, result: judge.Verdict | None, invalid: int) -> dict[str, float]:
        if result is None:
            return {
                "resolved": 0.0,
                "fail_to_pass": 0.0,
                "pass_to_pass": 0.0,
                "invalid_call": float(invalid),
            }
        return {
            "resolved": judge.reward_of(result, self.partial_credit, self.partial_verdicts),
            "fail_to_pass": result.fail_to_pass,
            "pass_to_pass": result.pass_to_pass,
            "invalid_call": float(invalid),
        }

    def _judge(
        self,
        blocks: list[str],
        invalid: int,
        info: dict[str, Any],
        reason: str | None,
        submitted: bool,
    ) -> Transition:
        assert self.task is not None and self.workspace is not None
        self._submitted = True
        result = judge.verdict(
            self.workspace.base,
            self.workspace.diff(),
            test_patch=str(self.task.get("test_patch") or ""),
            fail_to_pass=list(self.task["FAIL_TO_PASS"]),
            pass_to_pass=list(self.task.get("PASS_TO_PASS") or ()),
            time_limit=self.test_time_limit,
            memory_mb=self.memory_mb,
            backend=self.sandbox_backend,
            warm=self.warm,
            stop_on_failure=not self.partial_credit,
            total_time=self.verdict_time_limit,
            reference_patch=str(self.task.get("patch") or ""),
            unshown=self.task.get("FAIL_TO_PASS_UNSHOWN"),
        )
        word = "resolved" if result.resolved else "not resolved"
        how = "Submitted" if submitted else "Out of replies; your changes were judged"
        blocks.append(
            f"{how}. The issue is {word}: {result.fail_to_pass:.0%} of the fail-to-pass and "
            f"{result.pass_to_pass:.0%} of the pass-to-pass tests passed."
        )
        withheld = judge.withheld(result, self.partial_credit, self.partial_verdicts)
        if withheld:
            blocks.append(withheld)
        if not result.applied:
            blocks.append(f"Your changes could not be applied: {result.error}")
        if result.dropped:
            blocks.append("Changes to the test suite were discarded: " + ", ".join(result.dropped))
        if result.tampering:
            blocks.append(
                "The code under test tried to reach the test runner's state; every test "
                "of the run counts as failed."
            )
        info.update(
            fail_to_pass=result.fail_to_pass,
            pass_to_pass=result.pass_to_pass,
            patch_applied=result.applied,
            dropped_test_changes=list(result.dropped),
            verdict_trust=result.verdict_trust,
            verdict_weakened=list(result.weakened),
            verdict_withheld=withheld or self._never_paid,
            verdict_tampering=result.tampering,
            reference_failing_tests=list(result.reference_failing),
        )
        return Transition(
            observation="\n\n".join(blocks),
            reward_components=self._components(result, invalid),
            terminated=submitted,
            correct=result.resolved and not withheld,
            invalid_reason=reason,
            info=info,
        )

    # ------------------------------------------------------------------------ tools

    def _path(self, path: object) -> str:
        return normalize_path(path)

    def _tool_list_files(self, path: str = "") -> str:
        assert self.workspace is not None
        prefix = "" if not str(path).strip(" ./") else self._path(path).rstrip("/") + "/"
        found = [p for p in self.workspace.paths() if p.startswith(prefix)]
        if not found:
            raise PatchError(f"no files under {path!r}")
        text = "\n".join(found[:_MAX_LISTED])
        return text + (
            f"\n[... {len(found) - _MAX_LISTED} more]" if len(found) > _MAX_LISTED else ""
        )

    def _tool_read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        assert self.workspace is not None
        name = self._path(path)
        text = self.workspace.read(name)
        if text is None:
            raise PatchError(f"no file {name}; use list_files to see the files")
        lines = text.splitlines()
        first = max(int(start_line), 1)
        last = len(lines) if end_line is None else min(int(end_line), len(lines))
        last = min(last, first + _MAX_READ_LINES - 1)
        if first > max(len(lines), 1):
            raise PatchError(f"{name} has {len(lines)} lines; start_line {first} is past its end")
        shown = [f"{n:4d}  {lines[n - 1]}" for n in range(first, last + 1)]
        more = f"\n[... lines {last + 1}-{len(lines)} not shown]" if last < len(lines) else ""
        return f"{name} (lines {first}-{last} of {len(lines)})\n" + "\n".join(shown) + more

    def _tool_search(self, query: str, path: str = "") -> str:
        assert self.workspace is not None
        if not query:
            raise PatchError("the query is empty")
        prefix = "" if not str(path).strip(" ./") else self._path(path).rstrip("/")
        hits = []
        for name in self.workspace.paths():
            if prefix and not (name == prefix or name.startswith(prefix + "/")):
                continue
            for n, line in enumerate((self.workspace.read(name) or "").splitlines(), 1):
                if query in line:
                    hits.append(f"{name}:{n}: {line.strip()[:200]}")
                    if len(hits) > _MAX_MATCHES:
                        return "\n".join(hits[:_MAX_MATCHES]) + "\n[... more matches]"
        return "\n".join(hits) if hits else f"No line contains {query[:100]!r}."

    def _tool_replace(self, path: str, old: str, new: str) -> str:
        assert self.workspace is not None
        name = self._path(path)
        text = self.workspace.read(name)
        if text is None:
            raise PatchError(f"no file {name}")
        if not old:
            raise PatchError("`old` is empty; give the exact text to replace")
        count = text.count(old)
        if count != 1:
            raise PatchError(
                f"`old` occurs {count} times in {name}; it must occur exactly once (copy it "
                "exactly, with more lines around it if needed)"
            )
        self.workspace.write(name, text.replace(old, new, 1))
        return f"Replaced 1 occurrence in {name}."

    def _tool_apply_patch(self, patch: str) -> str:
        assert self.workspace is not None
        try:
            changes = apply_diff(self.workspace.snapshot(), patch)
        except PatchTooLarge:
            self._patch_too_large = True
            raise
        for name, text in changes.items():
            self.workspace.write(name, text)
        return "Applied; changed " + ", ".join(sorted(changes)) + "."

    def _tool_create_file(self, path: str, content: str) -> str:
        assert self.workspace is not None
        name = self._path(path)
        if self.workspace.exists(name):
            raise PatchError(f"{name} exists; edit it with replace or apply_patch")
        self.workspace.write(name, content)
        return f"Created {name} ({len(content.splitlines())} lines)."

    def _tool_run_tests(self, target: str = "") -> str:
        assert self.workspace is not None
        files = self.workspace.snapshot()
        target = str(target).strip()
        if "::" in target:
            path, _, rest = target.partition("::")
            report = judge.run_tests(
                files,
                [self._path(path) + "::" + rest],
                time_limit=self.test_time_limit,
                memory_mb=self.memory_mb,
                backend=self.sandbox_backend,
                warm=self.warm,
            )
        else:
            prefix = "" if not target.strip(" ./") else self._path(target)
            test_files = [
                p
                for p in sorted(files)
                if p.endswith(".py")
                and (p.rsplit("/", 1)[-1].startswith("test_") or p.endswith("_test.py"))
                and (not prefix or p == prefix or p.startswith(prefix.rstrip("/") + "/"))
            ]
            if not test_files:
                raise PatchError(f"no test files under {target or 'the repository'}")
            report = judge.collect_and_run(
                files,
                test_files,
                time_limit=self.test_time_limit,
                total_time=max(60.0, 4 * self.test_time_limit),
                memory_mb=self.memory_mb,
                backend=self.sandbox_backend,
                warm=self.warm,
            )
        return report.summary(self.max_output_chars)

    def _tool_run_python(self, code: str) -> str:
        assert self.workspace is not None
        head, output = judge.run_python(
            self.workspace.snapshot(),
            code,
            time_limit=self.test_time_limit,
            memory_mb=self.memory_mb,
            backend=self.sandbox_backend,
            warm=self.warm,
        )
        return head + ("\nOutput:\n" + output if output else "")

    def _tool_submit(self) -> str:  # intercepted in _act; kept for direct registry use
        return "Submitted."

    # ---------------------------------------------------------------------- internals

    def _extra_info(self) -> dict[str, Any]:
        assert self.task is not None
        changed = sorted(self.workspace.changed) if self.workspace is not None else []
        return {
            "tools": self._schemas,
            "repo": str(self.task.get("repo", "repo")),
            "difficulty": self.task.get("difficulty", self.difficulty),
            "changed_files": changed,
            # Set from reset when no verdict on this task can pay (see `_unpayable`); the
            # verdict's own reason replaces it after submit.
            "verdict_withheld": self._never_paid,
        }


def _call_info(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments
    if isinstance(arguments, Mapping):
        arguments = {
            str(k)[:64]: (v[:200] if isinstance(v, str) else v) for k, v in arguments.items()
        }
    try:
        arguments = json.loads(json.dumps(arguments, ensure_ascii=False, default=str))
    except (TypeError, ValueError, RecursionError):
        arguments = str(arguments)[:200]
    return {"name": call.name[:64], "arguments": arguments}
