"""The SWE executor: runs a repository's tests, or a snippet, inside one sandbox.

Standard library only. The host sends this file into a sandbox as a *trusted* program
(:func:`rllm_envs.sandbox.runner.program_header` with ``trusted=True``, or a
:class:`~rllm_envs.sandbox.SandboxPool` ``program``); it runs in the bootstrap, holds the
report channel, and never imports repository code itself.

The sandbox has no writable path, so the repository travels in the spec and is served from
memory: a meta-path finder imports its modules (``/repo/<path>`` in tracebacks) after the
standard library, which a repository cannot shadow. pytest is not used (the sandbox's
interpreter has none, and a real pytest would read the repository's ``conftest.py``, plugins
and configuration): a small runner collects test functions, ``Test*`` classes and
``unittest.TestCase`` methods, expands ``pytest.mark.parametrize`` with pytest's ids, and
offers the common part of pytest's API (``raises``, ``warns``, ``deprecated_call``,
``approx``, marks, ``skip``, ``fail``, fixtures defined in the test file or in the
``conftest.py`` files on its path, ``monkeypatch``, ``capsys``, ``capfd``, ``caplog``,
``recwarn``, ``tmp_path`` and ``tmp_path_factory``) as a ``pytest`` module that the
repository cannot replace. Of a ``conftest.py`` only the fixtures are used (no hooks, plugins
or configuration), and the verdict runs the pristine ones. The repository's files can be read
as ``/repo/<path>``; ``tmp_path`` folders are a file system in the test process's memory
under ``/tmp/pytest-of-sandbox/`` (the sandbox has no writable path).

Every test runs in a fresh forked process (own process group, CPU/memory/file-size limits,
nothing open but its output file, its result file and its tamper file) and everything it
left is killed before the next one. Before any repository code runs there, the process
installs a guard (:func:`_arm`, an audit hook) that refuses introspection of the runner and
reports each refusal in the tamper file; a pass is written only by the guard, with a token
made in that process after the fork. The executor reports what it observed for each test on
the channel: the kernel's wait status, whether it hit the time limit, the result (``P`` +
the run's nonce when the result file held ``P`` + that process's token, ``F``/``S``/``E`` +
a message otherwise), what the guard refused and the end of the output. The host decides
each verdict (:mod:`rllm_envs.swe.judge`).

Spec (``marshal``, on stdin): ``files`` ``{path: text}``, ``mode`` (``"tests"``: run the node
ids ``tests``; ``"collect"``: collect and run the tests of ``test_files``; ``"python"``: run
``code`` as ``__main__``), ``nonce``, ``observe`` (the test modules are probes: a test's
result is ``O`` and the JSON of what it observed and how it ended, which the host compares
with the reference's; see :func:`observed`), ``time_limit`` (per test), ``memory_mb``,
``output_chars``, ``max_tests`` and ``reap``. Records: a 4-byte big-endian length and a JSON
object per test (``index``, ``id``, ``outcome``, ``code``, ``signal``, ``result``,
``output``, ``time``, ``tamper``), then ``{"done": true}``.
"""

from __future__ import annotations

import decimal
import fractions
import functools
import hashlib
import marshal
import os
import resource
import select
import signal
import sys
import time
import types
from itertools import islice

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Where the repository appears to be (file names in tracebacks; nothing is on disk).
REPO_PREFIX = "/repo/"
_RESULT_FD = 3
_RESULT_CAP = 4000
#: What an observing test may report (see :func:`observed`).
_OBSERVED_CAP = 1 << 20
#: Names a repository may not provide: the runner's own ``pytest``.
_RESERVED = frozenset({"pytest", "_pytest"})

# Captured before any repository code runs in a test process: rebinding ``os.write`` or
# ``os._exit`` there does not change what the runner calls.
_write = os.write
_exit = os._exit
_audit = sys.audit


# ------------------------------------------------------------------ in-memory import


class RepoFinder:
    """Imports a repository's modules from ``{path: source}`` (meta-path finder and loader)."""

    def __init__(self, files: dict[str, str], roots: list[str]) -> None:
        self.files = files
        self.roots = roots
        self.dirs = set()
        for path in files:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                self.dirs.add("/".join(parts[:i]))
        self.blocked = set(_STDLIB_NAMES) | _RESERVED

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """The spec of repository module ``name``, or ``None`` (not the repository's)."""
        from importlib.machinery import ModuleSpec

        if name.partition(".")[0] in self.blocked:
            return None
        rel = name.replace(".", "/")
        loader: Any = self
        for root in self.roots:
            base = root + rel
            if base + "/__init__.py" in self.files:
                spec = ModuleSpec(name, loader, origin=base + "/__init__.py", is_package=True)
                spec.submodule_search_locations = [REPO_PREFIX + base]
                spec.has_location = True
                return spec
            if base + ".py" in self.files:
                spec = ModuleSpec(name, loader, origin=base + ".py")
                spec.has_location = True
                return spec
            if base in self.dirs:  # a folder without __init__.py: a namespace package
                spec = ModuleSpec(name, loader, origin=None, is_package=True)
                spec.submodule_search_locations = [REPO_PREFIX + base]
                return spec
        return None

    def create_module(self, spec: Any) -> None:
        """Default module creation."""
        return None

    def exec_module(
        self,
        module: Any,
        *,
        _records: Any = None,
        _sources: Any = None,
        _exec: Any = exec,
        _hidden: bool = False,
    ) -> None:
        """Run the module's source from memory.

        In a test process, :func:`install` seals ``_records`` (what the runner runs: the
        functions each test file's ``def`` statements made, recorded right after it ran) and
        ``_sources`` (the files as they were before any repository code ran) and ``_hidden``
        (install's ``hide_tests``) as defaults the guard lets no one read or rebind; the
        attributes of this object are not used for them.
        """
        origin = module.__spec__.origin
        if origin is None:
            return
        import linecache

        sources = self.files if _sources is None else _sources
        filename = REPO_PREFIX + origin
        source = sources[origin]
        # A hidden test module (a probe: install's hide_tests) has no lines to show: what
        # its code holds (a print's label, a case's name) is not one linecache read away
        # from a traceback's frame (s39 att39e F3: 5/5 paid reading the caller's test).
        shown = self.files.get(origin) or ""
        linecache.cache[filename] = (len(shown), None, shown.splitlines(True), filename)
        module.__file__ = filename
        if not is_test_file(origin):
            _exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
            if _hidden and _WALKING[0]:  # what the suite changes in it from now on is walked
                _note_repo(module.__dict__)
                _note_modules()
            return
        namespace = module.__dict__
        first = _records is not None and origin not in _records
        if first:
            _records[origin] = None  # a second load of the same file (nested) is not recorded
        _audit(_WATCH_EVENT, namespace)  # the guard checks the module's names
        import warnings

        with warnings.catch_warnings():  # "'str' object is not callable": bound below
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = strict_asserts(source, filename)
            if _hidden:
                if _WALKING[0]:
                    _after_imports(tree)
                _one_position(tree)
            code = compile(tree, filename, "exec", dont_inherit=True)
        code = _bind_compare(code)
        defs, pending = [], [code]
        while pending:
            found = pending.pop()
            pending += [c for c in found.co_consts if isinstance(c, type(found))]
            # Only ``def`` statements' code: a function made from the module's, a class
            # body's, a lambda's or a comprehension's code is not a test.
            if found.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS and not found.co_name.startswith(
                "<"
            ):
                defs.append(found)
        import builtins

        _exec(code, namespace)
        if _hidden and first:
            _MODULE_SPACES.append(namespace)  # walked when the test ends (_report_observed)
        # A builtin's name in the module that its own code does not bind was put there by
        # the code it imported (a probe's ``callable(x)`` would call it).
        _audit(_BUILTINS_EVENT, namespace, _bound_names(tree, namespace))
        if first and namespace.get("__builtins__") in (builtins, vars(builtins)):
            names = dict(namespace)
            classes = {
                id(v): (v, dict(vars(v)))
                for v in names.values()
                if isinstance(v, type) and v.__module__ == namespace.get("__name__")
            }
            _records[origin] = (module, names, classes, {id(c): c for c in defs})
            _audit(_WATCH_EVENT, namespace)  # and again with what the file defined

    def get_source(self, name: str) -> str | None:
        """The source of module ``name`` (for ``inspect`` and tracebacks)."""
        spec = self.find_spec(name)
        return None if spec is None or spec.origin is None else self.files[spec.origin]


def _bound_names(tree: Any, namespace: dict[str, Any]) -> frozenset[str]:
    """Every name a module's code may bind anywhere; ``import *`` binds what it found.

    ``namespace``: the module's, after it ran (a name a star import bound is one whose value
    is the imported module's own).
    """
    import ast
    import importlib.util

    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            try:
                name = importlib.util.resolve_name(
                    "." * node.level + (node.module or ""), namespace.get("__package__")
                )
            except (ImportError, ValueError, TypeError):
                continue
            source = sys.modules.get(name)
            if source is not None:
                names.update(k for k, v in vars(source).items() if namespace.get(k) is v)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.partition(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return frozenset(names)


def repo_roots(files: dict[str, str]) -> list[str]:
    """Import roots of a repository: its top folder, and ``src/`` when it holds packages."""
    roots = [""]
    if any(p.startswith("src/") and p.endswith("/__init__.py") for p in files):
        roots.append("src/")
    return roots


def install(
    files: dict[str, str],
    extra_roots: list[str] = (),  # type: ignore[assignment]
    records: dict[str, Any] | None = None,
    hide_tests: bool = False,
) -> RepoFinder:
    """Install the repository finder and the runner's ``pytest`` module in this process.

    ``records``: where the finder records each test file it runs (see
    :meth:`RepoFinder.exec_module`); sealed in the finder's code, out of the repository's reach.
    ``hide_tests``: test modules cannot be opened or listed as files, nor read through the
    finder (``get_source``, ``linecache``) or their functions' code (the probes' sources:
    what of a hidden test's expected values could not be moved out of them is not one
    ``open`` away; it stays in memory).
    """
    import types
    import unittest

    if records is not None:
        sealed = {
            "_records": records,
            "_sources": types.MappingProxyType(dict(files)),
            "_exec": exec,
            "_hidden": hide_tests,
        }
        RepoFinder.exec_module.__kwdefaults__ = sealed
    # Hidden test modules are known to the finder by name, their sources only to the sealed
    # ``_sources`` that runs them (the finder and its get_source are readable).
    known = {p: "" if hide_tests and is_test_file(p) else t for p, t in files.items()}
    finder = RepoFinder(known, [*extra_roots, *repo_roots(files)])
    sys.meta_path.append(finder)
    sys.modules["pytest"] = _pytest_module()
    setattr(unittest.TestCase, "_baseAssertEqual", _unittest_equal)  # noqa: B010
    setattr(unittest.TestCase, "assertNotEqual", _unittest_not_equal)  # noqa: B010
    setattr(unittest.TestCase, "assertIn", _unittest_in)  # noqa: B010
    setattr(unittest.TestCase, "assertNotIn", _unittest_not_in)  # noqa: B010
    _TESTS_HIDDEN[0] = hide_tests
    if hide_tests:
        shown = {p: t for p, t in files.items() if not is_test_file(p)}
        _file_view(shown, {d for p in shown for d in _folders(p)})
    else:
        _file_view(files, finder.dirs)
    if hide_tests and _WALKING[0]:
        # What every module holds before the suite runs (_module_values): noted once in the
        # executor (main), inherited here; the modules install changed are noted again (its
        # finder in sys.meta_path is not the suite's).
        _MODULE_BASES.pop(id(sys), None)
        _note_modules()
    return finder


#: Whether this process's test modules are hidden (install's ``hide_tests``): read by the
#: guard when it is armed, before any repository code runs.
_TESTS_HIDDEN = [False]


def _folders(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _repo_path(path: Any) -> str | None:
    """The repository-relative path of ``path`` (``/repo/x`` or relative), or ``None``."""
    import posixpath

    try:
        text = os.fspath(path)
    except TypeError:
        return None
    if not isinstance(text, str):
        return None
    if not text.startswith("/"):
        text = REPO_PREFIX + text
    text = posixpath.normpath(text)
    if text == REPO_PREFIX.rstrip("/"):
        return ""
    return text[len(REPO_PREFIX) :] if text.startswith(REPO_PREFIX) else None


def _file_view(files: dict[str, str], dirs: set[str]) -> None:
    """Let code read the repository's files as ``/repo/<path>`` (or relative paths).

    The sandbox has no such folder: ``open`` for reading, ``os.path.exists``/``isfile``/
    ``isdir``, ``os.listdir`` and ``os.getcwd`` answer from memory for those paths, so tests
    that read data files next to them work. Nothing can be written there.
    """
    import builtins
    import io
    import os.path as osp

    real_open, real_exists, real_isfile = io.open, osp.exists, osp.isfile
    real_isdir, real_listdir = osp.isdir, os.listdir

    def repo_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        rel = _repo_path(file) if isinstance(mode, str) and not set(mode) & set("wax+") else None
        if rel is not None and rel in files:
            data = files[rel]
            return io.BytesIO(data.encode("utf-8")) if "b" in mode else io.StringIO(data)
        return real_open(file, mode, *args, **kwargs)

    def exists(path: Any) -> bool:
        rel = _repo_path(path)
        return rel in files or rel in dirs or rel == "" if rel is not None else real_exists(path)

    def isfile(path: Any) -> bool:
        rel = _repo_path(path)
        return rel in files if rel is not None else real_isfile(path)

    def isdir(path: Any) -> bool:
        rel = _repo_path(path)
        return (rel in dirs or rel == "") if rel is not None else real_isdir(path)

    def listdir(path: Any = ".") -> list[str]:
        rel = _repo_path(path)
        if rel is None:
            return real_listdir(path)
        prefix = rel + "/" if rel else ""
        names = {p[len(prefix) :].split("/")[0] for p in files if p.startswith(prefix)}
        if not names and rel not in dirs:
            raise FileNotFoundError(2, "No such file or directory", path)
        return sorted(names)

    builtins.open = io.open = repo_open
    osp.exists, osp.isfile, osp.isdir = exists, isfile, isdir  # type: ignore[assignment]
    os.listdir = listdir  # type: ignore[assignment]
    os.getcwd = lambda: REPO_PREFIX.rstrip("/")
    _scratch_view()


#: Where ``tmp_path`` folders are: a file system in the test process's memory (the sandbox
#: has no writable path), gone with the process.
SCRATCH_PREFIX = "/tmp/pytest-of-sandbox/"


def _scratch_view() -> None:
    """A writable file system in memory under :data:`SCRATCH_PREFIX` (for ``tmp_path``).

    ``open`` (any mode), ``os.stat``/``lstat``, ``os.path.exists``/``isfile``/``isdir``,
    ``os.listdir``/``scandir``, ``os.mkdir``/``makedirs``, ``os.remove``/``unlink``/``rmdir``,
    ``os.rename``/``replace``, ``os.chmod`` answer from memory for paths under it, so
    ``pathlib`` (``write_text``, ``read_text``, ``mkdir``, ``exists``, ``iterdir``, ``glob``,
    ``unlink``) and ``shutil.copy`` work there (not ``shutil.rmtree``, which opens folders).
    Other paths go to the real functions unchanged.
    """
    import builtins
    import io
    import os.path as osp
    import posixpath
    import stat as st

    data: dict[str, bytes] = {}
    dirs = {SCRATCH_PREFIX.rstrip("/")}
    real: dict[str, Any] = {
        "open": io.open,
        "stat": os.stat,
        "lstat": os.lstat,
        "exists": osp.exists,
        "isfile": osp.isfile,
        "isdir": osp.isdir,
        "listdir": os.listdir,
        "mkdir": os.mkdir,
        "remove": os.remove,
        "rmdir": os.rmdir,
        "rename": os.rename,
        "replace": os.replace,
        "chmod": os.chmod,
        "scandir": os.scandir,
    }

    def mine(path: Any) -> str | None:
        try:
            text = os.fspath(path)
        except TypeError:
            return None
        if not isinstance(text, str):
            return None
        text = posixpath.normpath(text)
        root = SCRATCH_PREFIX.rstrip("/")
        return text if text == root or text.startswith(SCRATCH_PREFIX) else None

    def missing(path: str) -> OSError:
        return FileNotFoundError(2, "No such file or directory", path)

    class _Stored(io.BytesIO):
        def __init__(self, name: str, initial: bytes) -> None:
            super().__init__(initial)
            self.name_ = name

        def flush(self) -> None:
            super().flush()
            if not self.closed:
                data[self.name_] = self.getvalue()

        def close(self) -> None:
            if not self.closed:
                data[self.name_] = self.getvalue()
            super().close()

    def scratch_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        path = mine(file)
        if path is None:
            return real["open"](file, mode, *args, **kwargs)
        if path in dirs:
            raise IsADirectoryError(21, "Is a directory", path)
        if posixpath.dirname(path) not in dirs:
            raise missing(path)
        writing = bool(set(mode) & set("wax+"))
        if "x" in mode and path in data:
            raise FileExistsError(17, "File exists", path)
        if not writing or "+" in mode and "w" not in mode:
            if path not in data:
                raise missing(path)
        initial = b"" if "w" in mode else data.get(path, b"")
        if writing:
            data[path] = initial
            raw: Any = _Stored(path, initial)
            if "a" in mode:
                raw.seek(0, 2)
        else:
            raw = io.BytesIO(initial)
        if "b" in mode:
            return raw
        encoding = kwargs.get("encoding") or (args[1] if len(args) > 1 else None) or "utf-8"
        newline = kwargs.get("newline", args[3] if len(args) > 3 else None)
        wrapper = io.TextIOWrapper(raw, encoding=encoding, newline=newline, write_through=True)
        return wrapper

    def scratch_stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        name = mine(path)
        if name is None:
            return real["stat"](path, *args, **kwargs)
        if name in dirs:
            return os.stat_result((st.S_IFDIR | 0o755, 0, 0, 2, 0, 0, 0, 0, 0, 0))
        if name in data:
            size = len(data[name])
            return os.stat_result((st.S_IFREG | 0o644, 0, 0, 1, 0, 0, size, 0, 0, 0))
        raise missing(name)

    def scratch_lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if mine(path) is None:
            return real["lstat"](path, *args, **kwargs)
        return scratch_stat(path)

    def wrap(name: str, answer: Any) -> Any:
        def check(path: Any) -> bool:
            found = mine(path)
            return real[name](path) if found is None else answer(found)

        return check

    def scratch_listdir(path: Any = ".") -> list[str]:
        name = mine(path)
        if name is None:
            return real["listdir"](path)
        if name not in dirs:
            raise missing(name)
        prefix = name + "/"
        found = {p[len(prefix) :].split("/")[0] for p in (*data, *dirs) if p.startswith(prefix)}
        return sorted(found)

    def scratch_mkdir(path: Any, mode: int = 0o777, *args: Any, **kwargs: Any) -> None:
        name = mine(path)
        if name is None:
            return real["mkdir"](path, mode, *args, **kwargs)
        if name in dirs or name in data:
            raise FileExistsError(17, "File exists", name)
        if posixpath.dirname(name) not in dirs:
            raise missing(name)
        dirs.add(name)
        return None

    def scratch_remove(path: Any, *args: Any, **kwargs: Any) -> None:
        name = mine(path)
        if name is None:
            return real["remove"](path, *args, **kwargs)
        if name not in data:
            raise missing(name)
        del data[name]
        return None

    def scratch_rmdir(path: Any, *args: Any, **kwargs: Any) -> None:
        name = mine(path)
        if name is None:
            return real["rmdir"](path, *args, **kwargs)
        if name not in dirs:
            raise missing(name)
        if scratch_listdir(name):
            raise OSError(39, "Directory not empty", name)
        dirs.discard(name)
        return None

    def moving(which: str) -> Any:
        def move(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            a, b = mine(src), mine(dst)
            if a is None and b is None:
                return real[which](src, dst, *args, **kwargs)
            if a is None or b is None or a not in data:
                raise OSError(18, "Invalid cross-device link or not a file", str(src))
            if posixpath.dirname(b) not in dirs:
                raise missing(b)
            data[b] = data.pop(a)
            return None

        return move

    def scratch_chmod(path: Any, *args: Any, **kwargs: Any) -> None:
        name = mine(path)
        if name is None:
            return real["chmod"](path, *args, **kwargs)
        if name not in data and name not in dirs:
            raise missing(name)
        return None

    class _Entry:
        def __init__(self, folder: str, name: str) -> None:
            self.name, self.path = name, f"{folder}/{name}"

        def __fspath__(self) -> str:
            return self.path

        def is_dir(self, follow_symlinks: bool = True) -> bool:
            return self.path in dirs

        def is_file(self, follow_symlinks: bool = True) -> bool:
            return self.path in data

        def is_symlink(self) -> bool:
            return False

        def stat(self, follow_symlinks: bool = True) -> Any:
            return scratch_stat(self.path)

    class _Entries(list):
        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

        def close(self) -> None:
            return None

    def scratch_scandir(path: Any = ".") -> Any:
        name = mine(path)
        if name is None:
            return real["scandir"](path)
        return _Entries(_Entry(name, n) for n in scratch_listdir(name))

    builtins.open = io.open = scratch_open
    os.chmod = scratch_chmod
    os.scandir = scratch_scandir
    os.stat, os.lstat = scratch_stat, scratch_lstat
    osp.exists = wrap("exists", lambda p: p in data or p in dirs)
    osp.isfile = wrap("isfile", lambda p: p in data)
    osp.isdir = wrap("isdir", lambda p: p in dirs)
    os.listdir = scratch_listdir  # type: ignore[assignment]
    os.mkdir = scratch_mkdir
    os.remove = os.unlink = scratch_remove
    os.rmdir = scratch_rmdir
    os.rename, os.replace = moving("rename"), moving("replace")


def _scratch_dir(prefix: str) -> Any:
    """A new empty folder of the in-memory scratch file system (see :func:`_scratch_view`)."""
    import itertools
    import pathlib

    for n in itertools.count():
        path = pathlib.Path(f"{SCRATCH_PREFIX}{prefix}{n}")
        if not path.exists():
            path.mkdir()
            return path
    raise AssertionError("unreachable")


# ------------------------------------------------------------------ strict equality
#
# ``assert f(x) == [1, 2]`` passes for any object whose ``__eq__`` returns True, and Python
# asks the left operand first (and the right one's reflected method when the left says
# NotImplemented; ``in`` asks each element), so a submission could return such an object
# and pass every equality test. In test files, ``==``, ``!=``, ``in`` and ``not in`` are
# rewritten to :func:`strict_compare`:
# where either side is a plain value (numbers, strings, bytes, None, and lists, tuples,
# dicts and sets of them), the other must be a plain value of the same kind, compared
# element by element; objects of the repository's own classes keep their ``__eq__``.

#: Where the rewritten comparisons call :func:`strict_compare`: a constant of the compiled
#: code, replaced by the function itself (no name a test's process could rebind).
_COMPARE = "__rllm_compare__"
#: The constants a probe's observer names (``probe.OBSERVE``, ``probe.OBSERVING``) are
#: compiled to, then bound to :func:`observe` and :class:`_Observing` (:func:`_bind_compare`).
_OBSERVE_CONST = "__rllm_observe_const__"
_OBSERVING_CONST = "__rllm_observing_const__"
_ISINSTANCE_CONST = "__rllm_isinstance_const__"
_NOTE_CONST = "__rllm_note_modules_const__"  # bound to _note_modules (a probe's imports)
_PROBE_NAMES = {
    "__rllm_observe__": _OBSERVE_CONST,
    "__rllm_observing__": _OBSERVING_CONST,
    "__rllm_isinstance__": _ISINSTANCE_CONST,
}
_CHECK_EVENT = "rllm.swe.check"
#: ``CO_OPTIMIZED | CO_NEWLOCALS``: the code of a function (not of a module or class body).
_FUNCTION_FLAGS = 0x1 | 0x2
_NUMBERS = (bool, int, float, complex)
_PLAIN = (*_NUMBERS, str, bytes, type(None), list, tuple, dict, set, frozenset)
#: Exact numbers of the standard library, bound before any repository code runs: they compare
#: with plain numbers as Python does (``Decimal(43) == 43``, ``Fraction(3, 2) == 1.5``).
_EXACT_NUMBERS = (decimal.Decimal, fractions.Fraction)
#: Dict views compared with sets as sets (``d.keys() == {"a", "b"}``).
_SET_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))


def is_test_file(path: str) -> bool:
    """Whether ``path`` is a test module (:func:`rllm_envs.swe.repo.is_test_path`'s rule).

    ``test_*.py``, ``*_test.py``, ``tests.py``, ``conftest.py`` or a module in a test folder.
    """
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")[:-1]
    return name.endswith(".py") and (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name in ("tests.py", "conftest.py")
        or any(p in ("tests", "test", "testing") for p in parts)
    )


#: How the plain value a subclass instance holds is read without its own methods: the
#: plain type's C code (``tuple.__getitem__(v, slice(None))`` of a namedtuple, ``str.__str__``
#: of a ``str`` Enum member, ``dict.copy`` of a ``Counter``) returns an exact plain copy.
_PLAIN_COPIES: dict[type, Any] = {
    int: int.__int__,
    float: float.__float__,
    complex: lambda v: complex(complex.__getattribute__(v, "real"), v.imag),
    str: str.__str__,
    bytes: lambda v: bytes.__getitem__(v, slice(None)),
    list: lambda v: list.__getitem__(v, slice(None)),
    tuple: lambda v: tuple.__getitem__(v, slice(None)),
    dict: dict.copy,
    set: set.copy,
    frozenset: frozenset.copy,
}


def plain_copy(value: Any) -> Any:
    """The plain value an instance of a subclass of a plain type holds (else ``value``).

    A ``namedtuple`` as its tuple, a ``str`` / ``int`` Enum member as its str / int, a
    ``Counter`` / ``OrderedDict`` / ``defaultdict`` as its dict, a float subclass as its
    float: what pytest's ``==`` with a literal compares (the plain type's ``__eq__``), read
    from the value's storage, so an overridden ``__eq__`` / ``__iter__`` decides nothing.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    for base in kind.__mro__[1:]:
        copy = _PLAIN_COPIES.get(base)
        if copy is not None:
            try:
                return copy(value)
            except Exception:
                return value
    return value


def strict_equal(a: Any, b: Any, depth: int = 0) -> bool:
    """``a == b``, but a plain value equals only a plain value of the same kind.

    A subclass of a plain type (a namedtuple, an Enum with a ``str`` or ``int`` mixin,
    ``Counter``, ``OrderedDict``, a float subclass) compared with a plain value is compared
    as the plain value it holds (:func:`plain_copy`), as pytest's ``==`` does.
    """
    ta, tb = type(a), type(b)
    if isinstance(b, _Approx):
        return b == a
    if isinstance(a, _Approx):
        return a == b
    if (ta in _PLAIN) != (tb in _PLAIN) and depth <= 100:
        a, b = plain_copy(a), plain_copy(b)
        if type(a) in _PLAIN and type(b) in _PLAIN:
            return strict_equal(a, b, depth + 1)
    if ta not in _PLAIN and tb not in _PLAIN:
        return bool(a == b)
    if ta in _NUMBERS and tb in _NUMBERS:
        return bool(a == b)
    if (ta in _NUMBERS or ta in _EXACT_NUMBERS) and (tb in _NUMBERS or tb in _EXACT_NUMBERS):
        return bool(a == b)  # a Decimal or Fraction (exactly) with a number
    if ta in _SET_VIEWS or tb in _SET_VIEWS:
        try:
            a, b = (set(a) if ta in _SET_VIEWS else a), (set(b) if tb in _SET_VIEWS else b)
        except TypeError:  # an item holding an unhashable value
            return False
        return type(a) in (set, frozenset) and type(b) in (set, frozenset) and bool(a == b)
    if ta in (set, frozenset) and tb in (set, frozenset):
        return bool(a == b)  # a frozenset equals the set of the same elements
    if ta is not tb or depth > 100:
        return False
    if ta in (list, tuple):
        return len(a) == len(b) and all(
            strict_equal(x, y, depth + 1) for x, y in zip(a, b, strict=True)
        )
    if ta is dict:
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k], depth + 1) for k in a)
    return bool(a == b)


def strict_contains(item: Any, container: Any) -> bool:
    """``item in container``, with :func:`strict_equal` for plain containers."""
    kind = type(container)
    if kind in (list, tuple, set, frozenset, dict):
        return any(strict_equal(item, x) for x in container)
    if kind in (str, bytes):
        return type(item) is kind and item in container
    return item in container


def strict_compare(
    left: Any, op: str, right: Any, _check: Any = sys.audit, _event: str = _CHECK_EVENT
) -> bool:
    """``left <op> right`` for ``==``, ``!=``, ``in`` and ``not in``, compared strictly.

    In a guarded test process the guard checks before and after that nothing the comparison
    uses was rebound (``_check`` is sealed there).
    """
    _check(_event)
    if op in ("in", "not in"):
        found = strict_contains(left, right)
        result = found if op == "in" else not found
    else:
        same = strict_equal(left, right)
        result = same if op == "==" else not same
    _check(_event)
    return result


def _bind_compare(code: Any) -> Any:
    """``code`` with every constant ``_COMPARE`` replaced by :func:`strict_compare`."""
    consts = tuple(
        strict_compare
        if type(c) is str and c == _COMPARE
        else observe
        if type(c) is str and c == _OBSERVE_CONST
        else _Observing
        if type(c) is str and c == _OBSERVING_CONST
        else observe_isinstance
        if type(c) is str and c == _ISINSTANCE_CONST
        else _note_modules
        if type(c) is str and c == _NOTE_CONST
        else _bind_compare(c)
        if isinstance(c, type(code))
        else c
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


def value_digest(kind: str, value: Any) -> str:
    """A short digest of a plain text (``kind`` "text") or number (``"number"``).

    As both the sandbox's module walk (:func:`_module_values`) and the host's expected values
    key them: numbers by value (``1050`` and ``1050.0`` are one), exactly (``float.hex``).
    """
    if kind == "number":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        text = "n" + (format(value, "x") if isinstance(value, int) else float.hex(value))
    else:
        text = "t" + value
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


#: Standard-library values a module holds, read as their text (``date(2024, 1, 17)`` is
#: ``"2024-01-17"``): the host keys a written one so too (``probe._aliases``).
_TEXT_VALUES: tuple[type, ...] = tuple(
    getattr(module, name)
    for module, names in (
        (__import__("datetime"), ("date", "datetime", "time", "timedelta")),
        (decimal, ("Decimal",)),
        (fractions, ("Fraction",)),
        (__import__("pathlib"), ("PurePath",)),
        (__import__("uuid"), ("UUID",)),
    )
    for name in names
)


def _module_values(namespaces: list[dict[str, Any]], out: list[Any]) -> None:
    """Append the digests (:func:`value_digest`) of the texts and numbers the suite holds.

    Walked from the test modules' globals and ``os.environ`` when a test ends (so after its
    module's setup too), breadth first, into builtin containers and their subclasses (by the
    builtin's own methods), the attributes of the suite's classes and of any object
    (``__dict__``, ``__slots__``), the defaults and closures of the suite's functions,
    ``partial`` arguments, and standard-library values as their text. A walk past
    :data:`_MODULE_NODES` objects or :data:`_MODULE_VALUES_MAX` values appends
    ``"unwalked"``: the host then takes any expected value as held (s40 att40k: a namedtuple, a
    dataclass, an ``OrderedDict``, a ``date``, a 60! and a big table crowding a value out of
    the first walk each kept an expected value out of sight, 30/30 paid; att40n: a default,
    a closure cell, a ``partial``, ``os.environ`` and ``setup_module``, 40/40).

    What the suite left elsewhere is walked too (s41 att41a: a value set on a repository
    module or class, or in a test module's ``__warningregistry__``, 4/5 paid each): the
    repository's modules for what they hold now and did not once imported (:func:`_note_repo`),
    and every other module's names and its classes' attributes bound since it was noted
    (:func:`_note_modules`; a module never noted, all of them).
    """
    from collections import deque

    own = [*namespaces, *(space for space, _ in _REPO_SPACES)]
    names = {namespace.get("__name__") for namespace in own}
    queue: deque[Any] = deque(os.environ.values())  # what the suite set there too
    for namespace in namespaces:
        queue.extend(_bound_values(namespace))
    queue.extend(_rebound({id(space) for space in own}))
    found = _walked(queue, names)
    for space, before in _REPO_SPACES:
        if found is not None and (held := _walked(deque(_bound_values(space)), names)) is not None:
            found |= held - before
        else:
            found = None
    if found is None:
        out.append("unwalked")
    else:
        out.extend(sorted(found))


#: Names a module or class binds for the import system and the class machinery: not the
#: suite's values (every other name, ``__doc__`` and ``__warningregistry__`` among them, is).
_MACHINERY = frozenset(
    "__builtins__ __loader__ __spec__ __file__ __cached__ __package__ __path__ __name__ "
    "__module__ __qualname__ __dict__ __weakref__ __firstlineno__ __static_attributes__ "
    "__slots__".split()
)


def _bound_values(space: Any) -> list[Any]:
    """The values of a namespace or attribute dict, but for its machinery's."""
    return [v for k, v in list(space.items()) if not (type(k) is str and k in _MACHINERY)]


def _note_modules() -> None:
    """Note what each module not noted yet holds: its names, and what they hold (:func:`_holders`).

    Called in a probe run when the runner is installed, after each repository module ran
    and after each import statement of a test module: what is bound or added later (the
    suite's ``textwrap.X = ...``) is walked when a test ends (:func:`_rebound`).
    """
    for module in list(sys.modules.values()):
        if id(module) in _MODULE_BASES or type(module) is not _MODULE_TYPE:
            continue
        space = module.__dict__
        if space is globals():
            continue  # the runner's own state (what tests observed): not the suite's
        _MODULE_BASES[id(module)] = (module, dict(space), _holders(space, space.get("__name__")))


def _holders(space: dict[str, Any], name: Any) -> list[tuple[Any, dict[Any, Any], bool]]:
    """What a module's values hold, each holder with its items as :func:`_as_dict` gives them.

    Its own classes' attributes, its lists, sets and dicts (``sys.path``, a registry) and its
    objects' attributes, and so on inward to :data:`_NOTE_DEPTH` levels (att41d: a logger's
    name in ``logging.Logger.manager.loggerDict``, an item added to a class's dict-valued
    attribute), at most :data:`_NOTE_HOLDERS` of them a module. Each comes with whether a
    new key of it is walked (a dict's may be the value; the names in logging's registry of
    loggers are not: the code under test names its loggers, and a log record's expected
    name is then no leak; the loggers are, s41 att41f F4).
    """
    out: list[tuple[Any, dict[Any, Any], bool]] = []
    queue = _DEQUE((v, 1) for v in list(space.values()))
    seen: set[int] = set()
    keyless: set[int] = set()
    while queue and len(out) < _NOTE_HOLDERS:
        value, depth = queue.popleft()
        kind = type(value)
        if id(value) in seen or kind in _SCALARS or value is None or value is globals():
            continue  # the runner's own state (what tests observed) is not the suite's
        seen.add(id(value))
        if isinstance(value, type):
            if _CLASS_NAME[0].__get__(value) != name:
                continue  # another module's class: noted with its own module
        elif isinstance(value, (list, set, dict, _DEQUE)):  # att41i: a deque, an OrderedDict
            if any(value is s for s in _IMPORT_STATE):
                continue
        elif kind in (tuple, frozenset):  # not a holder itself; what it holds may be
            if depth < _NOTE_DEPTH:  # (att41m F3: a list in a tuple of shutil's, added to)
                queue.extend((v, depth + 1) for v in value)
            continue
        elif kind is _PLAIN_FUNCTION:  # its attributes (att41m F2: textwrap.dedent.x = ...)
            value = value.__dict__
        elif kind is _MODULE_TYPE or kind.__module__ == "builtins":
            continue
        else:
            value = _instance_dict(value)
            if type(value) is not dict:
                continue
            if kind.__module__ == "logging":
                _LOGGING_DICTS.add(id(value))
                if kind.__name__ == "Manager":
                    keyless.add(id(value.get("loggerDict")))
        items = _as_dict(value)
        out.append((value, items, isinstance(value, dict) and id(value) not in keyless))
        if depth < _NOTE_DEPTH:
            queue.extend((v, depth + 1) for v in list(items.values()))
    return out


def _note_repo(space: dict[str, Any]) -> None:
    """A repository module ran (probe run): what it holds now, so a test's changes show."""
    held = _walked(_DEQUE(_bound_values(space)), {space.get("__name__")})
    _REPO_SPACES.append((space, frozenset(held) if held is not None else frozenset()))


def _rebound(walked: set[int]) -> list[Any]:
    """What was bound or added since :func:`_note_modules` noted a module and its holders.

    A module not noted (imported since, not by an import statement of a test module) gives
    its plain values; the test and repository modules (``walked``: their namespaces' ids)
    are walked whole elsewhere.
    """
    out: list[Any] = []
    runner = id(globals())  # the runner's own state (what tests observed): not the suite's
    for module in list(sys.modules.values()):
        space = module.__dict__ if type(module) is _MODULE_TYPE else None
        if space is None or id(space) in walked or id(space) == runner:
            continue
        noted = _MODULE_BASES.get(id(module))
        if noted is None:  # imported since, by no import statement of a test module
            out += _plain_values(space)
            continue
        _, before, held = noted
        pairs = [(space, before, False), *held]
        for holder, then, keyed in pairs:
            skip = _LOGGING_STATE if id(holder) in _LOGGING_DICTS else _MACHINERY
            for k, v in _as_dict(holder).items():
                if then.get(k, _ABSENT) is not v and not (type(k) is str and k in skip):
                    out += [k, v] if keyed else [v]  # a dict's new key may be the value
    return out


_ABSENT = object()
#: Logging's objects' attributes that are its bookkeeping of names and levels (a logger's,
#: a handler's); the ids of such objects' attribute dicts noted (:func:`_holders`).
_LOGGING_STATE = _MACHINERY | {
    "name",
    "_name",
    "parent",
    "manager",
    "_cache",
    "level",
    "disabled",
    "propagate",
    "loggerMap",
}
_LOGGING_DICTS: set[int] = set()

#: The import system's registry: the names of the modules imported, not the suite's values
#: (a test's expected value may be its package's name; a suite that writes it is noted as
#: tampering with imports).
_IMPORT_STATE = (sys.modules,)
#: How deep into a module's values, and how many holders in it, :func:`_holders` notes.
_NOTE_DEPTH = 4
_NOTE_HOLDERS = 2000
_SCALARS = frozenset({str, bytes, int, float, bool, complex})


def _plain_values(space: dict[str, Any]) -> list[Any]:
    """A module's texts and numbers, and those its lists, tuples, sets and dicts hold.

    What a module noted only at the walk gives (the suite's ``importlib.import_module("m").X
    = ...``), not its objects: what its own code made (threading's threads, s41 att41f F5: a
    repository function's lazy ``import logging`` withheld every correct fix).
    """
    out: list[Any] = []
    for value in _bound_values(space):
        kind = type(value)
        if kind in _SCALARS:
            out.append(value)
        elif kind in (list, tuple, set, frozenset, dict):
            held = [*value, *value.values()] if kind is dict else list(value)
            out += [v for v in held if type(v) in _SCALARS]
    return out


def _as_dict(held: Any) -> dict[Any, Any]:
    """A class's attributes, a dict's items, or a list's, deque's or set's by place or identity.

    By the builtin's own methods (a subclass's ``OrderedDict``/``defaultdict`` included).
    """
    if isinstance(held, type):
        return dict(_CLASS_DICT.__get__(held))
    if isinstance(held, dict):
        return dict(dict.items(held))
    if isinstance(held, (list, _DEQUE)):
        return {(i, id(v)): v for i, v in enumerate(list(held))}
    return {id(v): v for v in list(held)}


def _reduced_into(value: Any, queue: Any) -> bool:
    """Queue what ``value`` pickles as (its constructor's arguments, its state); False if not."""
    try:
        reduced = value.__reduce_ex__(4)
    except Exception:
        return False
    for part in reduced[1:] if isinstance(reduced, tuple) else ():
        if hasattr(type(part), "__next__"):  # a fresh iterator of its items
            queue.extend(islice(part, _MODULE_NODES))
        elif part is not None:
            queue.append(part)
    return True


def _instance_dict(value: Any) -> Any:
    """An object's own ``__dict__`` (None without one), not through its class's lookup."""
    try:
        return object.__getattribute__(value, "__dict__")
    except Exception:
        return None


def _walked(queue: Any, names: set[Any]) -> set[str] | None:
    """The digests of what ``queue``'s values hold (None: past the walk's bounds)."""
    # Each value seen is kept alive by the walk: a value it made (an array's text, what a
    # holder pickles as) freed after its visit gave its id to a later one, which was then
    # skipped as seen (s41: the suite's array of the expected text went unread).
    seen: dict[int, Any] = {}
    found: set[str] = set()
    walked = 0
    while queue:
        value = queue.popleft()
        if id(value) in seen:
            continue
        seen[id(value)] = value
        walked += 1
        if walked > _MODULE_NODES or len(found) > _MODULE_VALUES_MAX:
            return None
        kind = type(value)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str):
            text = str.__str__(value)
            if len(text) > _MODULE_TEXT_MAX:
                return None  # att41d F6: a longer expected text went undigested
            found.add(value_digest("text", text))
        elif isinstance(value, (bytes, bytearray)):
            if len(value) > _MODULE_TEXT_MAX:
                return None
            found.add(value_digest("text", bytes(value).decode("utf-8", "surrogateescape")))
        elif isinstance(value, int):
            found.add(value_digest("number", int.__int__(value)))
        elif isinstance(value, float):
            found.add(value_digest("number", float.__float__(value)))
        elif isinstance(value, _TEXT_VALUES):
            try:
                texts = {str(value), *([value.isoformat()] if hasattr(value, "isoformat") else [])}
            except Exception:
                texts = set()
            found.update(value_digest("text", t) for t in texts if type(t) is str)
            continue
        if isinstance(value, (list, tuple, set, frozenset)):
            base: Any = next(b for b in (list, tuple, set, frozenset) if isinstance(value, b))
            queue.extend(islice(base.__iter__(value), _MODULE_NODES))
        elif isinstance(value, dict):
            queue.extend(islice(dict.keys(value), _MODULE_NODES))
            queue.extend(islice(dict.values(value), _MODULE_NODES))
        if kind in _WALKED_BUILTINS:
            continue  # read above: what it holds is queued
        if kind is _PATTERN:
            queue.append(value.pattern)
            continue
        if kind is _ARRAY:  # its text or numbers, not the bytes it pickles as (att41d F4)
            queue.append(value.tounicode() if value.typecode in ("u", "w") else value.tolist())
            continue
        if isinstance(value, type):
            if _CLASS_NAME[0].__get__(value) not in names:
                continue  # another module's class: its values are not the suite's
            attributes = _CLASS_DICT.__get__(value)
        elif kind is _PLAIN_FUNCTION:
            # The suite's own functions and lambdas: their defaults and closures (att40n: a
            # default argument, a closure cell held an expected value). Others' are not
            # read (the runner's sealed defaults are the guard's).
            if getattr(value, "__module__", None) in names:
                queue.extend(value.__dict__.values())
                queue.extend(value.__defaults__ or ())
                queue.extend((value.__kwdefaults__ or {}).values())
                for cell in value.__closure__ or ():
                    try:
                        queue.append(cell.cell_contents)
                    except ValueError:  # an empty cell
                        pass
            continue
        elif kind is functools.partial:
            queue.extend((value.func, *value.args, *value.keywords.values()))
            continue
        elif kind in (staticmethod, classmethod, _BOUND_METHOD):
            queue.append(value.__func__)
            continue
        elif isinstance(value, BaseException):  # att41f F1: its args, then its attributes
            queue.extend(_EXCEPTION_ARGS.__get__(value))
            queue.extend((value.__cause__, value.__context__))
            attributes = _instance_dict(value) or {}
        elif kind is slice:  # att41f F2
            queue.extend((value.start, value.stop, value.step))
            continue
        elif kind is property:
            queue.extend((value.fget, value.fset, value.fdel, value.__doc__))
            continue
        elif kind is _MATCH:  # att41f F3: the text searched
            queue.extend((value.string, value.re))
            continue
        elif kind is _CONTEXT_VAR:  # its value here, else its own default
            try:
                queue.append(value.get())
            except LookupError:
                pass
            continue
        elif isinstance(value, (_MODULE_TYPE, _FUNCTION_TYPES)):
            continue
        elif (kind.__module__ == "builtins" or kind.__module__ in _STDLIB_NAMES) and (
            hasattr(kind, "__iter__") or hasattr(kind, "__next__") or kind is complex
        ):
            # What another builtin or standard-library holder keeps (a deque, an iterator, a
            # view, a mapping proxy, a complex: att40q, 30/30 paid): what it pickles as, which
            # reads without consuming it; a view is iterated; one that does neither counts as
            # unwalked (a generator's locals).
            if kind is complex:
                queue.extend((value.real, value.imag))
            elif isinstance(value, (_VIEWS_READ, _MAPPING_PROXY)):
                held: Any = value
                queue.extend(islice(iter(held), _MODULE_NODES))
                if isinstance(value, _MAPPING_PROXY):
                    queue.extend(islice(iter(held.values()), _MODULE_NODES))
            elif not _reduced_into(value, queue):
                return None
            continue
        elif kind.__module__ == "builtins" or (
            kind.__module__ in _STDLIB_NAMES and type(_instance_dict(value)) is not dict
        ):
            # A builtin's or standard library's value without attributes of its own (an
            # itemgetter, a timezone, a Struct: s41 att41g, 15/15 paid): what it pickles as;
            # one that does not pickle (a lock) holds nothing the suite computed.
            _reduced_into(value, queue)
            continue
        else:
            attributes = _instance_dict(value) or {}
            if kind.__module__ == "logging":
                # Not a logger's or handler's name, level and bookkeeping: the code under test
                # sets them (a log record's expected name and level are then no leak).
                attributes = {k: v for k, v in attributes.items() if k not in _LOGGING_STATE}
            for slot in {
                s for k in _CLASS_MRO.__get__(kind) for s in k.__dict__.get("__slots__", ())
            }:
                if type(slot) is str:
                    try:
                        queue.append(object.__getattribute__(value, slot))
                    except Exception:
                        pass
        if type(attributes) in (dict, _MAPPING_PROXY):
            queue.extend(_bound_values(attributes))
    return found


def _walk_at_check() -> None:
    """At a check of the reference's probe run: walk the suite's memory as it is now.

    What a test sets only while it runs (a ``monkeypatch``, ``mock.patch.dict(os.environ)``,
    a yield fixture, ``setUpClass`` undone by ``tearDownClass``, a ``finally``) is undone by
    the test's end, when :func:`_report_observed` walks (s41 att41i: 4-5/5 paid each). The
    first 32 checks of a test each walk, then every 8th (a long loop of checks).
    """
    if not _WALKING[0]:
        return
    _CHECK_WALKS[0] += 1
    count = _CHECK_WALKS[0]
    if count > 32 and count % 8:
        return
    found: list[Any] = []
    try:
        _module_values(list(_MODULE_SPACES), found)
    except BaseException:
        found = ["unwalked"]
    _AT_CHECKS.update(found)


def _after_imports(tree: Any) -> None:
    """Have each import statement of a test module note the modules it brought in.

    What a module binds once imported is its own; a name the suite binds on it after is
    walked (:func:`_rebound`; s41 att41a: set on a module the suite imported).
    """
    import ast

    class Noting(ast.NodeTransformer):
        def visit_Import(self, node: ast.AST) -> list[ast.AST]:
            note = ast.Expr(ast.Call(ast.Constant(_NOTE_CONST), [], []))
            return [node, ast.copy_location(note, node)]

        visit_ImportFrom = visit_Import

    Noting().visit(tree)
    ast.fix_missing_locations(tree)


def _one_position(tree: Any) -> None:
    """Give every node of a hidden test module's AST line 1, column 0.

    A frame's line and columns (``traceback.extract_stack``, ``warnings``' ``stacklevel``,
    logging's caller) told which test called: a hidden test appended to a module the agent
    can read runs past that module's last line (s40 att40a F1: a patch raising only for
    callers past it kept the bug and was paid 1.0 ``host``, 5/5).
    """
    import ast

    node: Any
    for node in ast.walk(tree):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = 1
            node.col_offset = node.end_col_offset = 0


def strict_asserts(source: str, filename: str) -> Any:
    """The AST of a test module whose ``==``, ``!=``, ``in`` and ``not in`` are strict.

    Every single comparison of those kinds (in assertions or anywhere else in the test file)
    becomes a call of :func:`strict_compare`, at the same line.
    """
    import ast

    tree = ast.parse(source, filename)

    ops = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in"}

    class Rewrite(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            # A probe's observers become code constants (:func:`_bind_compare`): a module
            # global could be rebound by the code under test, a constant cannot.
            if isinstance(node.ctx, ast.Load) and node.id in _PROBE_NAMES:
                return ast.copy_location(ast.Constant(_PROBE_NAMES[node.id]), node)
            return node

        def visit_Compare(self, node: ast.Compare) -> ast.AST:
            self.generic_visit(node)
            if len(node.ops) != 1 or type(node.ops[0]) not in ops:
                return node
            # A constant that :func:`_bind_compare` replaces by the function.
            call = ast.Call(
                func=ast.Constant(_COMPARE),
                args=[node.left, ast.Constant(ops[type(node.ops[0])]), node.comparators[0]],
                keywords=[],
            )
            return ast.copy_location(call, node)

    return ast.fix_missing_locations(Rewrite().visit(tree))


def _unittest_equal(self: Any, first: Any, second: Any, msg: Any = None) -> None:
    if not strict_equal(first, second):
        raise self.failureException(self._formatMessage(msg, f"{first!r} != {second!r}"))


def _unittest_in(self: Any, member: Any, container: Any, msg: Any = None) -> None:
    if not strict_contains(member, container):
        raise self.failureException(self._formatMessage(msg, f"{member!r} not in {container!r}"))


def _unittest_not_in(self: Any, member: Any, container: Any, msg: Any = None) -> None:
    if strict_contains(member, container):
        raise self.failureException(self._formatMessage(msg, f"{member!r} in {container!r}"))


def _unittest_not_equal(self: Any, first: Any, second: Any, msg: Any = None) -> None:
    if strict_equal(first, second):
        raise self.failureException(self._formatMessage(msg, f"{first!r} == {second!r}"))


# ------------------------------------------------------------------ the pytest subset


class Skipped(BaseException):
    """``pytest.skip``: the test did not run to its end."""


class Failed(AssertionError):
    """``pytest.fail``."""


def _mark_list(marks: Any) -> list[Any]:
    """A ``pytestmark`` as a list: pytest takes one mark or a list of them."""
    if not marks:
        return []
    return list(marks) if isinstance(marks, (list, tuple)) else [marks]


class _Mark:
    """``pytest.mark.name``, a mark decorator.

    Called with arguments it is a new mark; with a function or class alone it marks it.
    ``pytestmark = pytest.mark.slow`` is one too (att38a: the reference failed such modules).
    """

    def __init__(self, name: str, args: tuple = (), kwargs: dict | None = None) -> None:
        self.name, self.args, self.kwargs = name, args, kwargs or {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bare = not (self.args or self.kwargs) and self.name != "parametrize"
        configured = self.args or self.kwargs
        if len(args) == 1 and not kwargs and callable(args[0]) and (bare or configured):
            target = args[0]
            target.pytestmark = [*_mark_list(getattr(target, "pytestmark", [])), self]
            return target
        return _Mark(self.name, self.args + args, {**self.kwargs, **kwargs})


class _MarkFactory:
    def __getattr__(self, name: str) -> Any:
        return _Mark(name)


class _Param:
    def __init__(self, values: tuple, id: str | None, marks: Any) -> None:
        self.values, self.id, self.marks = values, id, marks


class _ExceptionInfo:
    """What ``pytest.raises`` hands the test (``ExceptionInfo``): the caught exception."""

    value: Any = None
    type: Any = None

    @property
    def typename(self) -> str:
        """``ExceptionInfo.typename``: the exception class's name."""
        return self.type.__name__ if self.type is not None else ""

    @property
    def tb(self) -> Any:
        return getattr(self.value, "__traceback__", None)

    def exconly(self, tryshort: bool = False) -> str:
        """``ExceptionInfo.exconly``: ``"Type: text"``."""
        return f"{self.typename}: {self.value}"

    @property
    def exception(self) -> Any:
        """``cm.exception`` of unittest's ``assertRaises`` context: the caught exception."""
        return self.value


class _Raises(_ExceptionInfo):
    def __init__(self, expected: Any, match: str | None) -> None:
        self.expected, self.pattern = expected, match

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if kind is None:
            raise Failed(f"DID NOT RAISE {self.expected}")
        if not issubclass(kind, self.expected):
            return False
        self.value, self.type = value, kind
        if self.pattern is not None:
            self.match(self.pattern)
        return True

    def match(self, pattern: Any) -> bool:
        """``ExceptionInfo.match``: ``re.search`` of ``pattern`` in the exception's text."""
        import re

        if not re.search(pattern, str(self.value)):
            raise AssertionError(f"Regex {pattern!r} does not match {str(self.value)!r}")
        return True

    def errisinstance(self, kind: Any) -> bool:
        return self.type is not None and issubclass(self.type, kind)


def _raises(expected: Any, *args: Any, match: str | None = None, **kwargs: Any) -> Any:
    context = _Raises(expected, match)
    if not args:
        return context
    with context:
        args[0](*args[1:], **kwargs)
    return context


class _Warns:
    """``pytest.warns`` / ``deprecated_call`` in a plain run: the block must warn ``expected``.

    The caught warnings are the context's items (``record[0].message``). In a probe the
    block is a check's block (:class:`_Observing`) instead: the host compares what warned.
    """

    def __init__(self, expected: Any, match: str | None = None) -> None:
        import warnings

        self.expected, self.match = expected, match
        self._catcher = warnings.catch_warnings(record=True)
        self.list: list[Any] = []

    def __enter__(self) -> _Warns:
        import warnings

        self.list = self._catcher.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        import re

        self._catcher.__exit__(kind, value, tb)
        if kind is not None:
            return
        for caught in self.list:
            if issubclass(caught.category, self.expected) and (
                self.match is None or re.search(self.match, str(caught.message))
            ):
                return
        raise Failed(f"DID NOT WARN {self.expected!r}")

    def __len__(self) -> int:
        return len(self.list)

    def __getitem__(self, index: Any) -> Any:
        return self.list[index]

    def __iter__(self) -> Any:
        return iter(self.list)

    def pop(self, cls: Any = Warning) -> Any:
        """The first caught warning of category ``cls``, removed."""
        for i, caught in enumerate(self.list):
            if issubclass(caught.category, cls):
                return self.list.pop(i)
        raise AssertionError(f"{cls!r} not found in warning list")


def _warns(expected: Any = Warning, *args: Any, match: str | None = None, **kwargs: Any) -> Any:
    context = _Warns(expected, match)
    if not args:
        return context
    with context:
        return args[0](*args[1:], **kwargs)


def _deprecated_call(*args: Any, **kwargs: Any) -> Any:
    return _warns((DeprecationWarning, PendingDeprecationWarning), *args, **kwargs)


class _Approx:
    def __init__(
        self, expected: Any, rel: float | None, abs: float | None, nan_ok: bool = False
    ) -> None:
        self.expected, self.rel, self.abs, self.nan_ok = expected, rel, abs, nan_ok

    def _close(self, a: Any, b: Any) -> bool:
        if isinstance(b, (list, tuple)):
            return (
                isinstance(a, (list, tuple))
                and len(a) == len(b)
                and all(self._close(x, y) for x, y in zip(a, b, strict=True))
            )
        if isinstance(b, dict):
            return (
                isinstance(a, dict)
                and a.keys() == b.keys()
                and all(self._close(a[k], b[k]) for k in b)
            )
        a, b = _approx_number(a), _approx_number(b)
        if type(a) not in _NUMBERS or type(b) not in _NUMBERS:
            return strict_equal(a, b)
        try:
            if a == b:
                return True
            if self.nan_ok and a != a and b != b:
                return True
            tolerance = max(
                (1e-6 if self.rel is None else self.rel) * abs(b),
                1e-12 if self.abs is None else self.abs,
            )
            return abs(a - b) <= tolerance
        except TypeError:
            return False

    def __eq__(self, other: object) -> bool:
        return self._close(other, self.expected)

    def __repr__(self) -> str:
        return f"approx({self.expected!r})"


def _approx_number(value: Any) -> Any:
    """The number ``pytest.approx`` compares ``value`` as.

    A float subclass as its float, an exact ``Fraction`` / ``Decimal`` as a float (pytest
    computes their distance too).
    """
    import decimal
    import fractions

    value = plain_copy(value)
    if type(value) in (fractions.Fraction, decimal.Decimal):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return value
    return value


def _fixture(*args: Any, **kwargs: Any) -> Any:
    def mark(function: Any) -> Any:
        function._rllm_fixture = {
            "autouse": bool(kwargs.get("autouse")),
            "name": kwargs.get("name") or function.__name__,
        }
        return function

    if len(args) == 1 and callable(args[0]) and not kwargs:
        return mark(args[0])
    return mark


def _skip(reason: str = "", **kwargs: Any) -> None:
    raise Skipped(reason)


def _fail(reason: str = "", pytrace: bool = True) -> None:
    raise Failed(reason)


def _importorskip(name: str, minversion: Any = None, reason: Any = None) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise Skipped(f"could not import {name!r}") from None


# ------------------------------------------------------------------ observations
#
# In an observing run (spec ``observe``) the hidden test files are probes made on the host
# (:mod:`rllm_envs.swe.probe`): each assertion became a call of ``pytest.observe`` on the
# values it checked, with the expected side removed, and each ``pytest.raises`` block a
# ``pytest.observing()`` block. The test's process reports these values as data; the host
# compares them with the reference's. Nothing here decides a verdict: a forged record still has
# to equal the reference's. Still, what the host reads as observed must be what the runner
# observed (s12 F3: the test's code cleared the list through ``pytest.observe.__globals__``
# and wrote its own ``O`` record on fd 3, which the host took), so the record is written like
# a pass. The list is a sealed default of the functions that fill it (the guard refuses
# reading their ``__defaults__`` / ``__kwdefaults__``; it is in no module's globals), and
# only the guard writes the record, with the process's token, when the runner's
# :func:`_report_observed` asks from :func:`_child_test`; the executor takes an ``O`` record
# only with that token (:meth:`Executor.child`). Hiding fd 3 instead is not possible: the
# runner writes the record from the same process after the test's code ran, so whatever it
# holds the test's code could hold too; the token is kept where the pass token is. The same
# limit as the pass applies: ``_ctypes`` (loaded by the bootstrap) reads memory without an
# audit event, which is why the host's comparison, not this, is the boundary.

_OBSERVED_LIST: list[Any] = []
#: A probe run's test modules' namespaces, walked when a test ends (:func:`_module_values`)
#: and reported with its observations, so the host knows what the sandbox's memory holds
#: beside the probe's literals (s40 att40i: an expected value a module computed at import).
_MODULE_SPACES: list[Any] = []
#: Whether this test process walks the suite's memory: the reference's probe run only (the
#: spec's ``walk``); the host reads no other run's walk (``judge._module_echo``).
_WALKING = [False]
#: What the walks at the probe's checks found (:func:`_walk_at_check`), and how many ran.
_AT_CHECKS: set[str] = set()
_CHECK_WALKS = [0]
#: A probe run's repository modules: each namespace and the digests it held once it ran; and
#: every other module, by id: the module, its names' values and its own classes' attributes
#: when noted (:func:`_note_modules`). The walk reads what changed since (:func:`_module_values`).
_REPO_SPACES: list[tuple[dict[str, Any], frozenset[str]]] = []
_MODULE_BASES: dict[int, tuple[Any, dict[str, Any], list[tuple[Any, dict[Any, Any], bool]]]] = {}
#: At most this many such values, each text at most this long, a module's values walked at
#: most this many nodes deep into its containers.
_MODULE_VALUES_MAX = 20_000
_MODULE_NODES = 100_000
_MODULE_TEXT_MAX = 1 << 20  # a longer text counts as unwalked
_ARRAY = __import__("array").array
_MODULE_TYPE = type(sys)
#: Holders the walk does not read (the suite's own functions and methods it reads above).
_FUNCTION_TYPES: tuple[type, ...] = (type(len),)
_MATCH = type(__import__("re").match("", ""))
_EXCEPTION_ARGS: Any = BaseException.__dict__["args"]
_CONTEXT_VAR = __import__("contextvars").ContextVar
_MAPPING_PROXY = type(type.__dict__)
_VIEWS_READ: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
_PATTERN = type(__import__("re").compile(""))
_WALKED_BUILTINS = frozenset({str, bytes, bytearray, int, float, list, tuple, set, frozenset, dict})
_PLAIN_FUNCTION = type(lambda: 0)
_BOUND_METHOD = types.MethodType
#: An observation bigger than this (nodes, nesting, characters of one text) is reported as
#: the digest of its complete canonical form: compared exactly, never "equal by omission".
_OBSERVE_NODES = 20000
_OBSERVE_DEPTH = 40
_OBSERVE_TEXT = 100000
#: A value past these is unobservable, which never compares equal on the host.
_OBSERVE_ALL_NODES = 5_000_000
_OBSERVE_MAX_DEPTH = 200


#: The builtin types a subclass is recorded as (in this order), each with how its stored value
#: is read: by the base type's own methods, since ``float(v)``,
#: ``str(v)``, ``list(v)`` call the subclass's ``__float__``, ``__str__``, ``__iter__``, so a
#: repository ``class F(float)`` whose ``__float__`` said 0.5 passed ``assert clamp(1.7) <= 1``
#: and ``== approx(..)`` on the host (att33l).
_STORED: dict[Any, Any] = {
    bool: bool,  # final: no subclass
    int: int.__int__,
    float: float.__float__,
    complex: lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v)),
    str: str.__str__,
    bytes: lambda v: bytes.__getitem__(v, slice(None)),
    bytearray: lambda v: bytearray.__getitem__(v, slice(None)),
    list: lambda v: list.__getitem__(v, slice(None)),
    tuple: lambda v: tuple.__getitem__(v, slice(None)),
    dict: lambda v: dict(dict.items(v)),
    set: lambda v: set(set.__iter__(v)),
    frozenset: lambda v: frozenset(frozenset.__iter__(v)),
}


#: The builtins as the runner found them, before repository code ran: what a class that says
#: it is ``builtins.ValueError`` must be.
_BUILTIN_OBJECTS: dict[str, Any] = dict(vars(__import__("builtins")))
#: The standard library's names and, for its modules loaded before repository code ran (those
#: whose values tests compare among them), their attributes then: what a class that says it
#: is ``decimal.Decimal`` must be, whatever the module holds later (att35i: a patch set
#: ``decimal.Decimal`` to a class of its own, named so, whose repr was the expected value's).
_STDLIB_NAMES = frozenset(sys.stdlib_module_names)
for _name in ("collections", "datetime", "enum", "ipaddress", "pathlib", "uuid"):
    __import__(_name)
_STDLIB_OBJECTS: dict[str, dict[str, Any]] = {
    name: dict(vars(module))
    for name, module in list(sys.modules.items())
    if name.partition(".")[0] in _STDLIB_NAMES and isinstance(module, type(sys))
}
#: Where a class's own name is stored, read past any metaclass that would answer otherwise.
_CLASS_NAME = (type.__dict__["__module__"], type.__dict__["__qualname__"])
_CLASS_MRO = type.__dict__["__mro__"]
_CLASS_DICT = type.__dict__["__dict__"]
#: Containers whose subclasses are observed as their plain value when they keep every method
#: a check may use (:func:`_base_operators`).
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
#: What decides a container's ``==``, order, ``in`` and truth under pytest. Its other methods
#: (items, iteration, slicing: ``class Rows(list)`` whose slice is a ``Rows``) do not: the host
#: compares the stored value, so they cannot make a wrong one pass (s40 att40f, honest: such a
#: correct fix failed 5/5 while ``__getitem__`` counted).
_OPERATORS = frozenset(
    {
        *("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__"),
        *("__contains__", "__bool__", "__len__", "__class__", "__getattribute__"),
    }
)


def _base_operators(kind: type, base: type) -> bool:
    """Whether no class of ``kind``'s MRO but ``base``'s own defines one of :data:`_OPERATORS`.

    Such a subclass (``class Ranges(list): pass``) compares, orders and iterates as its
    ``base``'s value under pytest, so it is observed as that value: observed as a kind of its
    own, a correct fix returning one failed every test of its task (s40 att40c, honest). The
    MRO and the class dicts are read through ``type``'s own descriptors (a metaclass cannot
    answer for them).
    """
    own = _CLASS_MRO.__get__(base)
    return all(
        klass in own or _OPERATORS.isdisjoint(_CLASS_DICT.__get__(klass))
        for klass in _CLASS_MRO.__get__(kind)
    )


def _type_name(kind: Any) -> str:
    """``module.qualname`` of a class, marked where the class is not what that name names.

    A class sets its own ``__module__`` and ``__qualname__``: a repository's
    ``class ValueError(Exception)`` with ``__module__ = "builtins"`` was named as the real
    ``ValueError`` and passed ``pytest.raises(ValueError)`` (att33d). A class naming a builtin
    or a loaded standard-library module's attribute must be that object.
    """
    if not isinstance(kind, type):
        return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"
    module, qualname = (get.__get__(kind) for get in _CLASS_NAME)
    if type(module) is not str or type(qualname) is not str:
        return "? (not a name)"  # att33h: a str subclass answered `==` and `partition`
    name = f"{module}.{qualname}"
    if module == "builtins":
        named = _BUILTIN_OBJECTS.get(qualname)
    elif module.partition(".")[0] in _STDLIB_NAMES:
        first, *rest = qualname.split(".")
        at_start = _STDLIB_OBJECTS.get(module)
        if at_start is not None:
            named = at_start.get(first)
        else:  # loaded since: as it is now
            loaded = sys.modules.get(module)
            named = vars(loaded).get(first) if isinstance(loaded, type(sys)) else None
        for part in rest:
            named = vars(named).get(part) if isinstance(named, type) else None
    else:
        return name  # the repository's or the test's own class: whatever it says, it is
    return name if named is kind else f"{name} (not what it names)"


def _mro_names(kind: Any) -> list[str]:
    mro = _CLASS_MRO.__get__(kind) if isinstance(kind, type) else (kind,)
    return [_type_name(k) for k in mro if k is not object]


class _Unobservable(Exception):
    pass


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _canonical_numbers(item: Any) -> Any:
    """``item`` with integral floats written as ints (``2.0 == 2`` inside a digest too)."""
    if isinstance(item, list):
        if len(item) == 2 and item[0] == "float" and isinstance(item[1], str):
            try:
                number = float(item[1])
                if number.is_integer():
                    return ["int", str(int(number))]
            except (ValueError, OverflowError):
                pass
            return item
        return [_canonical_numbers(x) for x in item]
    return item


def observed(value: Any) -> Any:
    """``value`` as JSON-able data: ``[tag, ...]`` by exact type, containers element by element.

    Plain values by their exact type (a subclass is tagged ``sub`` with its type's name),
    dict items and set members sorted, other objects as their type's name and their
    ``__dict__`` (or their ``repr`` when their class defines one). A text longer than
    ``_OBSERVE_TEXT`` or an int of 4000 digits or more is its length and digest; an
    observation of more than ``_OBSERVE_NODES`` nodes or ``_OBSERVE_DEPTH`` levels is
    ``["digest", sha256]`` of its complete canonical form (exact, whatever its size); a value
    past ``_OBSERVE_ALL_NODES`` nodes or ``_OBSERVE_MAX_DEPTH`` levels is ``unobservable``.
    """
    import json

    count = [0]
    deepest = [0]

    def key(item: Any) -> str:
        return json.dumps(item, sort_keys=True)

    def text(tag: str, data: bytes, shown: Any) -> Any:
        if len(data) <= _OBSERVE_TEXT:
            return [tag, shown]
        return [tag + "#", len(data), _digest(data)]

    def walk(v: Any, depth: int) -> Any:
        count[0] += 1
        if count[0] > _OBSERVE_ALL_NODES or depth > _OBSERVE_MAX_DEPTH:
            raise _Unobservable
        if depth > deepest[0]:
            deepest[0] = depth
        kind = type(v)
        if v is None:
            return ["none"]
        if kind is bool:
            return ["bool", v]
        if kind is int:
            if -(10**4000) < v < 10**4000:
                return ["int", str(v)]
            return ["int", "#" + _digest(hex(v).encode("ascii"))]
        if kind is float:
            return ["float", repr(v)]
        if kind is complex:
            return ["complex", repr(v.real), repr(v.imag)]
        if kind is str:
            if len(v) <= _OBSERVE_TEXT:
                return ["str", v]
            return text("str", v.encode("utf-8", "surrogatepass"), None)
        if kind in (bytes, bytearray):
            return text(kind.__name__, bytes(v), bytes(v).hex())
        if kind in (list, tuple):
            return [kind.__name__, [walk(x, depth + 1) for x in v]]
        if kind in (set, frozenset):
            return [kind.__name__, sorted((walk(x, depth + 1) for x in v), key=key)]
        if kind is dict:
            pairs = [[walk(k, depth + 1), walk(x, depth + 1)] for k, x in v.items()]
            return ["dict", sorted(pairs, key=key)]
        if isinstance(v, BaseException):
            return ["exception", _mro_names(kind), [walk(a, depth + 1) for a in v.args]]
        if kind is _Observing or kind is _Warns:
            # ``pytest.warns(...) as rec`` / ``recwarn``: the warnings it caught, not its state.
            return ["warnings", [walk(w, depth + 1) for w in list(v.list)]]
        stable = _stable_fields(v, kind)
        if stable is not None:
            return [stable[0], [walk(x, depth + 1) for x in stable[1:]]]
        if isinstance(v, type):
            return ["type", _type_name(v)]
        for base, stored in _STORED.items():
            if isinstance(v, base):
                plain = walk(stored(v), depth + 1)
                if base in _CONTAINERS and _base_operators(kind, base):
                    return plain
                return ["sub", _type_name(kind), plain]
        state = getattr(v, "__dict__", None)
        if type(state) is dict and state:
            return ["object", _type_name(kind), walk(dict(state), depth + 1)]
        slots = [s for k in kind.__mro__ for s in getattr(k, "__slots__", ()) if type(s) is str]
        if slots:
            values = {s: getattr(v, s, None) for s in slots if not s.startswith("__")}
            return ["object", _type_name(kind), walk(values, depth + 1)]
        if kind.__repr__ is not object.__repr__:
            shown = repr(v)
            if type(shown) is not str:
                raise _Unobservable
            return ["object", _type_name(kind), walk(shown, depth + 1)]
        return ["object", _type_name(kind)]

    try:
        whole = walk(value, 0)
        if count[0] <= _OBSERVE_NODES and deepest[0] <= _OBSERVE_DEPTH:
            return whole
        form = json.dumps(_canonical_numbers(whole), sort_keys=True, ensure_ascii=True)
        return ["digest", _digest(form.encode("ascii"))]
    except _Unobservable:
        return ["unobservable", "too big or too deep"]
    except Exception as e:
        return ["unobservable", _type_name(type(e))]


def _stable_fields(v: Any, kind: type) -> list[Any] | None:
    """What a log record or a caught warning says, without when and where it was made.

    A ``logging.LogRecord``: its logger's name, level, message and exception's type
    (``created``, ``msecs``, ``thread``, ``lineno``, ``pathname`` differ between two runs of
    the same code, or a fix one line lower). A ``warnings.WarningMessage``: its category's
    MRO and message (not its file and line). ``None``: neither.
    """
    logging = sys.modules.get("logging")
    if logging is not None and kind is getattr(logging, "LogRecord", None):
        exc = v.exc_info[0] if isinstance(v.exc_info, tuple) and v.exc_info else None
        kinds = _mro_names(exc) if isinstance(exc, type) else None
        return ["logrecord", v.name, v.levelno, v.levelname, v.getMessage(), kinds]
    warnings = sys.modules.get("warnings")
    if warnings is not None and kind is getattr(warnings, "WarningMessage", None):
        category = v.category
        kinds = _mro_names(category) if isinstance(category, type) else None
        return ["warning", kinds, str(v.message)]
    return None


def _classes_of(classes: Any) -> list[Any] | None:
    """The classes of ``isinstance``'s second argument (a class or nested tuples).

    ``None``: something else (a union, a typing form).
    """
    if type(classes) is tuple:
        found: list[Any] = []
        for item in classes:
            inner = _classes_of(item)
            if inner is None:
                return None
            found += inner
        return found
    return [classes] if isinstance(classes, type) else None


_FUNCTION_TYPE = type(_classes_of)


def _stdlib_check(
    cls: Any,
    *,
    _type: Any = type,
    _vars: Any = vars,
    _mro: Any = type.__dict__["__mro__"].__get__,
    _function: Any = _FUNCTION_TYPE,
    _wrappers: Any = (classmethod, staticmethod),
    _stdlib: tuple[str, ...] = (os.path.dirname(os.__file__) + "/", "<frozen "),
) -> bool:
    """Whether ``issubclass(x, cls)`` runs only the standard library's code.

    Its metaclass's ``__subclasscheck__`` and its ``__subclasshook__`` are ``type``'s /
    ``object``'s or functions of standard-library files (a repository file cannot be
    compiled as one, nor as a frozen module).
    """
    for start, name, base in (
        (_type(cls), "__subclasscheck__", _type),
        (cls, "__subclasshook__", object),
    ):
        for owner in _mro(start):
            if name in _vars(owner):
                if owner is base:
                    break
                entry = _vars(owner)[name]
                if _type(entry) in _wrappers:
                    entry = entry.__func__
                if _type(entry) is not _function or not entry.__code__.co_filename.startswith(
                    _stdlib
                ):
                    return False
                break
    return True


def observe_isinstance(
    value: Any,
    classes: Any,
    *,
    _type: Any = type,
    _issubclass: Any = issubclass,
    _vars: Any = vars,
    _mro: Any = type.__dict__["__mro__"].__get__,
    _classes_of: Any = _classes_of,
    _stdlib_check: Any = None,
) -> bool:
    """``pytest.observe_isinstance``: ``isinstance(value, classes)`` as the probe observes it.

    Decided by ``type(value)``'s real MRO (read without the class's attributes), with
    references bound before any repository code ran: a ``__class__`` property, a
    repository metaclass's ``__instancecheck__`` / ``__subclasscheck__`` or a rebound
    ``issubclass`` decides nothing. A class outside the MRO counts only through a
    standard-library class's own check (``isinstance({}, Mapping)``). Raises ``TypeError``
    where only repository code could answer (a metaclass with its own ``mro()``, a
    repository class with a metaclass of its own and not in the MRO): the check is then
    compared by no one (the reference's probe stops there) or differs from the reference's.
    """
    kind = _type(value)
    wanted = _classes_of(classes)
    if wanted is None:
        return _issubclass(kind, classes)
    meta = _type(kind)
    for owner in _mro(meta):
        if "mro" in _vars(owner):
            if owner is not _type:
                raise TypeError("isinstance: the class's metaclass defines its own mro()")
            break
    mro = _mro(kind)
    for cls in wanted:
        for base in mro:
            if base is cls:
                return True
    undecided = False
    for cls in wanted:
        if _type(cls) is _type:
            continue  # a plain class is an instance's class only through the MRO
        if _stdlib_check(cls):
            if _issubclass(kind, cls):
                return True
        else:
            undecided = True
    if undecided:
        raise TypeError("isinstance: a repository class's metaclass would decide it")
    return False


observe_isinstance.__kwdefaults__["_stdlib_check"] = _stdlib_check  # type: ignore[index]


#: Builtin values whose operators no repository code can change.
_PLAIN_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray})
#: Values looked through for a repository object (nodes): as many as an observation reads
#: (:data:`_OBSERVE_ALL_NODES`; past it the value is unobservable anyway), so a large plain
#: output (a 20,000-element list) is not taken for one.
_OPERATED_NODES = _OBSERVE_ALL_NODES


def _repository_code_decides(value: Any) -> bool:
    """Whether an operator of a check on ``value`` may run code of the repository.

    ``value`` is, or holds in builtin containers, an instance of a class that is neither
    builtin nor the standard library's (a forged name counts as the repository's): its
    truth, ``in``, order and arithmetic are its class's methods, which its state does not
    show (att34d). Containers are looked into by their stored elements (:func:`_contents`):
    a builtin's ``in`` and ``==`` run their elements' ``__eq__`` (att34l).
    """

    def decides(kind: type) -> bool:
        if kind in _VIEWS or _standard(kind):
            return False
        # A subclass of a builtin that redefines none of its methods (``class M(float):
        # pass``): the builtin's operators, on the stored value the host reads.
        base = _builtin_base(kind)
        return base is None or _redefines(kind, base)

    return _anywhere(value, decides)


def _anywhere(value: Any, found: Callable[[type], bool]) -> bool:
    """Whether ``found(type(x))`` for ``value`` or anything it holds (:func:`_contents`).

    Past :data:`_OPERATED_NODES` values read, it is taken to hold.
    """
    todo, count = [value], 0
    while todo:
        count += 1
        if count > _OPERATED_NODES:
            return True
        item = todo.pop()
        kind = type(item)
        if kind in _PLAIN_TYPES:
            continue
        if found(kind):
            return True
        todo.extend(_contents(item, kind) or ())
    return False


def _builtin_base(kind: type) -> type | None:
    """The builtin type a class derives from and is observed as (``None``: none)."""
    mro = _CLASS_MRO.__get__(kind)
    return next((base for base in _STORED if base in mro), None)


#: Container classes of the standard library whose elements are read without running them.
_DEQUE = __import__("collections").deque
_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))


#: The standard library's containers that keep their elements in an attribute.
_USER_CONTAINERS = tuple(
    getattr(__import__("collections"), name) for name in ("UserList", "UserDict", "UserString")
)
_CHAIN_MAP = __import__("collections").ChainMap


def _contents(item: Any, kind: type) -> list[Any] | None:
    """The elements of a container (``None``: not one), read without running its code.

    A builtin container or a subclass of one (a namedtuple, ``class TagList(list)``, a
    ``Counter``) by its stored value (:data:`_STORED`), a deque or a dict view by iteration
    (theirs), the standard library's ``UserList`` / ``UserDict`` / ``ChainMap`` by what they
    hold; never a generator (reading would consume it).
    """
    if kind in _VIEWS or kind is _DEQUE:
        return list(item) if kind is not _VIEWS[2] else [x for pair in item for x in pair]
    if kind in _USER_CONTAINERS:
        return [vars(item).get("data")]
    if kind is _CHAIN_MAP:
        return list(vars(item).get("maps") or ())
    base = _builtin_base(kind)
    if base in (list, tuple, set, frozenset):
        return list(_STORED[base](item))
    if base is dict:
        return [x for pair in _STORED[dict](item).items() for x in pair]
    if base is None and kind not in _VIEWS and _standard(kind):
        return _held(item, kind)
    return None


_DATETIME = __import__("datetime")


def _held(item: Any, kind: type) -> list[Any]:
    """What an object of the standard library holds, read with its own descriptors.

    Its ``tzinfo`` (a datetime or time), its ``__dict__`` values and its slots (a
    ``KeysView``'s mapping).

    An aware datetime compares through its tzinfo's ``utcoffset`` and a ``KeysView``'s ``in``
    through its mapping's ``__getitem__``: a repository class there decides the test (att34o:
    the unchanged code paid 1.0 ``host`` on 6 shapes).
    """
    if isinstance(item, (_DATETIME.datetime, _DATETIME.time)):
        return [item.tzinfo]
    found: list[Any] = []
    state = getattr(item, "__dict__", None)
    if type(state) is dict:
        found.extend(state.values())
    for k in _CLASS_MRO.__get__(kind):
        for slot in getattr(k, "__slots__", ()) if _standard(k) else ():
            if type(slot) is str and not slot.startswith("__"):
                found.append(getattr(item, slot, None))
    return found


def _compared_repository_object(value: Any) -> bool:
    """Whether ``value`` holds an object whose repository class decides how it compares.

    One whose class (of the repository) defines ``__eq__``, ``__ne__``, ``__hash__`` or
    attribute lookup, anywhere in the value: where the test's ``==`` reaches it, its state
    does not show what it decides. The sandbox's strict equality leaves sets, dict keys and
    views to Python, which hashes and compares them (att34f: ``tags() == {"python"}``, 8
    shapes), and compares two values that are not plain with their own ``==`` (att34g:
    ``Money("1.50") == Decimal("1.5")``, ``Stamp(..) == date(..)``, 6 shapes), both with the
    bug in ``__eq__`` and the unchanged code paid 1.0 ``host``. Against a plain literal an
    object never equals (the reference's own run fails), so nothing is lost by saying so.
    """

    def decides(kind: type) -> bool:
        repository = kind not in _VIEWS and not _standard(kind)  # a view's class is unnamed
        return repository and (_defines(kind, _COMPARING) or _held_by_base(kind))

    return _anywhere(value, decides)


#: The standard library's Enum: its members keep their value in their ``__dict__``.
_ENUM_ROOT = __import__("enum").Enum


def _held_by_base(kind: type) -> bool:
    """Whether a repository class keeps its value in a standard-library base's storage.

    ``class Money(Decimal)``, ``class Stamp(date)``: the number or date lives in the base,
    which the observation (the instance's ``__dict__``, or a repository ``__repr__``) does not
    show, and the base's ``==`` compares it (att34j: the unchanged code paid 1.0 ``host`` on
    3 shapes). A builtin base is read by its stored value, an Enum keeps its value in its
    ``__dict__``.
    """
    mro = _CLASS_MRO.__get__(kind)
    if _builtin_base(kind) is not None or _ENUM_ROOT in mro:
        return False
    return any(k is not object and _standard(k) for k in mro)


#: What decides how an object compares with another and hashes.
_COMPARING = frozenset({"__eq__", "__ne__", "__hash__", "__getattr__", "__getattribute__"})


def _defines(kind: type, names: frozenset[str]) -> bool:
    """Whether a class of the repository in ``kind``'s MRO defines one of ``names``."""
    return any(
        not _standard(k) and any(n in names for n in _CLASS_DICT.__get__(k))
        for k in _CLASS_MRO.__get__(kind)
    )


def _standard(kind: type) -> bool:
    """Whether class ``kind`` is builtin or the standard library's (a forged name is not)."""
    name = _type_name(kind)
    module = name.partition(".")[0]
    return (module == "builtins" or module in _STDLIB_NAMES) and " " not in name


#: Methods of a builtin a subclass may define without changing what its operators decide.
_CONSTRUCTION = frozenset(
    {
        *("__init__", "__new__", "__repr__", "__str__", "__format__", "__doc__", "__module__"),
        *("__reduce__", "__reduce_ex__", "__getnewargs__", "__getnewargs_ex__", "__getstate__"),
        *("__setstate__", "__sizeof__", "__init_subclass__", "__subclasshook__", "__dir__"),
        "__class_getitem__",
        # Indexing, slicing and mutation: no operator the host runs on the stored value (`in`,
        # an order, arithmetic, a tolerance, a method with a literal) calls them (s40 att40g,
        # honest: a list subclass whose slice keeps its class withheld every correct fix).
        *("__getitem__", "__setitem__", "__delitem__", "__reversed__", "__copy__"),
        *("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "copy"),
    }
)


def _redefines(kind: type, base: type) -> bool:
    """Whether a repository class between ``kind`` and builtin ``base`` redefines its methods.

    A method of ``base`` (``__lt__``, ``__contains__``, ``startswith``, ...) or attribute
    lookup, in the class's own namespace read past any metaclass.
    """
    methods = frozenset(dir(base)) - _CONSTRUCTION | {"__getattr__", "__getattribute__"}
    mro = _CLASS_MRO.__get__(kind)
    return any(
        not _standard(k) and any(n in methods for n in _CLASS_DICT.__get__(k))
        for k in mro[: mro.index(base)]
    )


#: Types whose truth the host reads from their recorded state (probe ``_TRUTHY_KINDS``).
_TRUTH_READ = (type(None), bool, int, float, str, bytes, list, tuple, dict)


def observe(
    value: Any,
    approx: Any = None,
    unordered: bool = False,
    host: Any = None,
    op: Any = None,
    *,
    _seen: list[Any] = _OBSERVED_LIST,
) -> None:
    """``pytest.observe``: record a value a probe test computed (see above).

    ``approx``: ``(rel, abs)`` when the test compared it with ``pytest.approx`` or
    ``isclose`` (the host then compares numbers within that tolerance; otherwise exactly).
    ``unordered``: the test only asked what a ``list`` / ``tuple`` holds (``"b" in tags``):
    its elements are recorded in a canonical order (``["unordered", kind, elements]``), so
    an order that comes from hashing strings (seeded afresh in every sandbox) or a fix that
    orders differently still compares equal; every element still must.
    ``host``: the index of a check the host runs itself on a plain text (``"x" in text``,
    :attr:`rllm_envs.swe.probe.Probe.predicates`): recorded as ``["host", k, observation]``.
    ``op``: an operator of the test acts on the value (``"operated"``: an order, ``in``,
    arithmetic, a tolerance, a method; ``"truth"``: its truth alone). Where the repository's
    code decides it (:func:`_repository_code_decides`), the truth is recorded as the bool
    the value's own ``__bool__`` / ``__len__`` give, as ``assert`` takes it; any other
    operator is recorded as ``["operated", observation]``, which the host never decides on
    (the verdict is withheld: the probe cannot run the operator without handing it the
    test's literal).
    """
    if op is None:  # compared for equality: by state, unless a class's own == decides it
        operated = _compared_repository_object(value)
    else:
        operated = _repository_code_decides(value)
    if op == "truth" and (operated or type(value) not in _TRUTH_READ):
        # As `assert` takes it: the value's own truth, where the host cannot read it from
        # the recorded state (a repository object's, a `re.Match`'s: att35l, an honest fix
        # returning the match where the reference returned a bool was paid 0).
        value, operated = bool(value), False
    seen = observed(value)
    if (
        unordered  # a plain list or tuple, or a subclass observed as one (_base_operators)
        and isinstance(seen, list)
        and len(seen) == 2
        and seen[0] in ("list", "tuple")
        and isinstance(seen[1], list)
    ):
        import json

        elements = sorted(seen[1], key=lambda e: json.dumps(e, sort_keys=True))
        seen = ["unordered", seen[0], elements]
    if approx is not None:
        seen = ["approx", list(approx), seen]
    if type(host) is int:
        seen = ["host", host, seen]
    if operated:
        seen = ["operated", seen]
    _seen.append(seen)
    _walk_at_check()


class _Observing(_ExceptionInfo):
    """``pytest.observing(k)``: the block of a probe's check; records what it raised, warned.

    A raises block, a warns block and a value check are the same block (``k``: the check's
    index in the host's table, which alone says what was expected): an exception leaving
    the body is recorded (``["block", k, ["raised", MRO names, message]]``) and suppressed,
    as ``pytest.raises`` would; the warnings the body emitted are recorded (``["block", k,
    ["warned", classes, messages]]``: each class once, by the qualified names of its MRO,
    sorted) and passed on to the filters outside the block. Nothing is recorded when the
    body ends normally without a warning (a raises block that should have raised then lacks
    its record, which the host sees); the host ignores what warned in a block that did not
    check warnings.
    """

    def __init__(self, check: Any = None) -> None:
        self.check = check if type(check) is int else -1
        self.list: list[Any] = []
        self._catcher: Any = None

    def __enter__(self) -> _Observing:
        import warnings

        self._catcher = warnings.catch_warnings(record=True)
        self.list = self._catcher.__enter__()
        warnings.simplefilter("always")
        return self

    # unittest's ``assertWarns`` context: the caught warnings and the first one's details.
    @property
    def warnings(self) -> list[Any]:
        return self.list

    @property
    def warning(self) -> Any:
        return self.list[0].message if self.list else None

    @property
    def filename(self) -> Any:
        return self.list[0].filename if self.list else None

    @property
    def lineno(self) -> Any:
        return self.list[0].lineno if self.list else None

    def __len__(self) -> int:
        return len(self.list)

    def __getitem__(self, index: Any) -> Any:
        return self.list[index]

    def __iter__(self) -> Any:
        return iter(self.list)

    def match(self, pattern: Any, *, _seen: list[Any] = _OBSERVED_LIST) -> bool:
        """``ExceptionInfo.match`` in a probe: the message is observed.

        The host compares it with the reference's; the pattern decides nothing here.
        """
        try:
            text = observed(str(self.value))
        except Exception:
            text = None
        _seen.append(["message", text])
        _walk_at_check()
        return True

    def __exit__(
        self, kind: Any, value: Any, tb: Any, *, _seen: list[Any] = _OBSERVED_LIST
    ) -> bool:
        import warnings

        caught, self._catcher = self._catcher, None
        if caught is not None:
            caught.__exit__(None, None, None)
        if self.list:
            classes = sorted({tuple(_mro_names(w.category)) for w in self.list})
            try:
                texts = observed(sorted(str(w.message) for w in self.list))
            except Exception:
                texts = None
            _seen.append(["block", self.check, ["warned", [list(c) for c in classes], texts]])
            _walk_at_check()
            for w in self.list:  # on to the filters outside, as if no block had caught them
                try:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                except Exception:
                    pass
        if kind is None:
            return False
        if issubclass(kind, Skipped):
            return False  # the runner's outcome, as pytest.raises lets it through
        # SystemExit (``pytest.raises(SystemExit)`` around a CLI's ``main``), KeyboardInterrupt
        # and the like are recorded too: the expected class is not in the probe, and the host
        # compares the record with the reference's (a block that should catch nothing of it
        # never sees it on the reference). The message is always recorded: whether the test
        # matched one is the host's to know.
        self.value, self.type = value, kind
        try:
            # A SystemExit by its code, typed: `sys.exit("2")` is not `sys.exit(2)`, though
            # both print "2" (att38d F4).
            code = value.code if issubclass(kind, SystemExit) else ""
            text = observed(code if type(code) in (int, type(None)) else str(value))
        except Exception:
            text = None
        _seen.append(["block", self.check, ["raised", _mro_names(kind), text]])
        _walk_at_check()
        return True


def _pytest_module() -> Any:
    import types

    module: Any = types.ModuleType("pytest", "The sandboxed runner's subset of pytest's API.")
    module.raises = _raises
    module.warns = _warns
    module.deprecated_call = _deprecated_call
    module.PytestWarning = type("PytestWarning", (UserWarning,), {"__module__": "pytest"})
    module.approx = lambda expected, rel=None, abs=None, nan_ok=False: _Approx(
        expected, rel, abs, bool(nan_ok)
    )
    module.MonkeyPatch = MonkeyPatch
    module.mark = _MarkFactory()
    module.param = lambda *values, id=None, marks=(): _Param(values, id, marks)
    module.fixture = _fixture
    module.skip = _skip
    module.fail = _fail
    module.importorskip = _importorskip
    module.observe = observe
    module.observing = _Observing
    module.observe_isinstance = observe_isinstance
    module.fail.Exception = Failed
    module.skip.Exception = Skipped
    return module


class MonkeyPatch:
    """The ``monkeypatch`` fixture: attribute, item and environment changes undone after."""

    def __init__(self) -> None:
        self._undo: list[Any] = []

    def setattr(self, target: Any, name: Any, value: Any = None, raising: bool = True) -> None:
        """Set an attribute (or a dotted ``"module.attr"``) until the test ends."""
        if isinstance(target, str):
            import importlib

            module, _, attr = target.rpartition(".")
            target, name, value = importlib.import_module(module), attr, name
        old = getattr(target, name, _MISSING)
        if old is _MISSING and raising:
            raise AttributeError(f"{target!r} has no attribute {name!r}")
        self._undo.append((target, name, old))
        setattr(target, name, value)

    def delattr(self, target: Any, name: str, raising: bool = True) -> None:
        """Delete an attribute until the test ends."""
        old = getattr(target, name, _MISSING)
        if old is _MISSING:
            if raising:
                raise AttributeError(name)
            return
        self._undo.append((target, name, old))
        delattr(target, name)

    def setitem(self, mapping: Any, key: Any, value: Any) -> None:
        """Set a mapping item until the test ends."""
        self._undo.append((mapping, key, mapping.get(key, _MISSING), "item"))
        mapping[key] = value

    def delitem(self, mapping: Any, key: Any, raising: bool = True) -> None:
        """Delete a mapping item until the test ends."""
        if key not in mapping:
            if raising:
                raise KeyError(key)
            return
        self._undo.append((mapping, key, mapping[key], "item"))
        del mapping[key]

    def setenv(self, name: str, value: str, prepend: Any = None) -> None:
        """Set an environment variable until the test ends."""
        self.setitem(os.environ, name, str(value))

    def delenv(self, name: str, raising: bool = True) -> None:
        """Unset an environment variable until the test ends."""
        self.delitem(os.environ, name, raising)

    def chdir(self, path: Any) -> None:
        """Change the working directory until the test ends.

        Where the sandbox refuses the real change (its scratch folders can be written but
        not entered), ``os.getcwd`` answers ``path`` instead; relative paths still resolve
        from the real working directory then.
        """
        self._undo.append((os.getcwd, os.getcwd()))
        try:
            os.chdir(path)
        except OSError:
            text = os.fspath(path)
            os.getcwd = lambda: str(text)

    def syspath_prepend(self, path: Any) -> None:
        """Put ``path`` first on ``sys.path`` until the test ends."""
        self._undo.append((sys.path, list(sys.path), None, "path"))
        sys.path.insert(0, str(path))

    @classmethod
    def context(cls) -> Any:
        """``with pytest.MonkeyPatch.context() as mp:``: changes undone at the block's end."""
        import contextlib

        @contextlib.contextmanager
        def block() -> Any:
            patch = cls()
            try:
                yield patch
            finally:
                patch.undo()

        return block()

    def undo(self) -> None:
        """Undo every change, last first."""
        for entry in reversed(self._undo):
            if len(entry) == 2:
                os.getcwd = entry[0]
                try:
                    os.chdir(entry[1])
                except OSError:
                    pass
            elif len(entry) == 4 and entry[3] == "path":
                entry[0][:] = entry[1]
            elif len(entry) == 4:
                mapping, key, old, _ = entry
                if old is _MISSING:
                    mapping.pop(key, None)
                else:
                    mapping[key] = old
            else:
                target, name, old = entry
                if old is _MISSING:
                    try:
                        delattr(target, name)
                    except AttributeError:
                        pass
                else:
                    setattr(target, name, old)
        self._undo.clear()


_MISSING = object()


class CaptureFixture:
    """The ``capsys`` fixture: ``readouterr()`` returns what was printed since the last call.

    Also ``capfd`` (what Python code prints; a child process's output is not captured) and
    the ``binary`` forms (bytes).
    """

    def __init__(self, binary: bool = False) -> None:
        import io

        self._binary = binary
        self._saved = (sys.stdout, sys.stderr)
        self._out, self._err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = self._out, self._err

    def disabled(self) -> Any:
        """A block whose output is not captured."""
        import contextlib

        return contextlib.nullcontext()

    def readouterr(self) -> Any:
        """``(out, err)`` printed since the last call."""
        import collections

        out: Any = self._out.getvalue()
        err: Any = self._err.getvalue()
        if self._binary:
            out, err = out.encode(), err.encode()
        for stream in (self._out, self._err):
            stream.seek(0)
            stream.truncate()
        make: Any = collections.namedtuple
        return make("CaptureResult", "out err")(out, err)

    def close(self) -> None:
        """Restore the real streams."""
        sys.stdout, sys.stderr = self._saved


class TempPathFactory:
    """The ``tmp_path_factory`` fixture: ``mktemp(name)`` makes a fresh folder (in memory)."""

    def mktemp(self, basename: str = "tmp", numbered: bool = True) -> Any:
        """A new empty folder."""
        return _scratch_dir(basename)

    def getbasetemp(self) -> Any:
        """The folder temporary folders are made in."""
        import pathlib

        return pathlib.Path(SCRATCH_PREFIX)


class FixtureRequest:
    """The ``request`` fixture: ``addfinalizer``, ``getfixturevalue``, ``node.name``, ``function``.

    (No fixture parameters: ``request.param`` raises ``AttributeError``.)
    """

    def __init__(self, function: Any, resolve: Any, teardown: list[Any]) -> None:
        import types

        self.function = function
        self.node = types.SimpleNamespace(name=getattr(function, "__name__", ""))
        self.instance = getattr(function, "__self__", None)
        self.cls = type(self.instance) if self.instance is not None else None
        self.module = sys.modules.get(getattr(function, "__module__", ""), None)
        self.config = None
        self._resolve, self._teardown = resolve, teardown

    def addfinalizer(self, finalizer: Any) -> None:
        """Call ``finalizer`` when the test ends."""
        self._teardown.append(finalizer)

    def getfixturevalue(self, name: str) -> Any:
        """The value of fixture ``name``."""
        return self._resolve(name)


class LocalPath:
    """The ``tmpdir`` fixture's ``py.path.local``: the common part, over a ``pathlib`` path."""

    def __init__(self, path: Any) -> None:
        import pathlib

        self._path = pathlib.Path(path)

    def __fspath__(self) -> str:
        return str(self._path)

    def __str__(self) -> str:
        return str(self._path)

    def __repr__(self) -> str:
        return f"local({str(self._path)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, LocalPath)) or hasattr(other, "__fspath__"):
            return str(self._path) == str(other)
        return False

    def __hash__(self) -> int:
        return hash(str(self._path))

    def __truediv__(self, other: Any) -> LocalPath:
        return LocalPath(self._path / str(other))

    @property
    def strpath(self) -> str:
        """The path as text."""
        return str(self._path)

    @property
    def basename(self) -> str:
        """The last part of the path."""
        return self._path.name

    @property
    def dirname(self) -> str:
        """The folder above, as text."""
        return str(self._path.parent)

    @property
    def ext(self) -> str:
        """The suffix (``.txt``)."""
        return self._path.suffix

    @property
    def purebasename(self) -> str:
        """The last part without its suffix."""
        return self._path.stem

    def join(self, *parts: Any) -> LocalPath:
        """The path with ``parts`` added."""
        return LocalPath(self._path.joinpath(*(str(p) for p in parts)))

    def dirpath(self) -> LocalPath:
        """The folder above."""
        return LocalPath(self._path.parent)

    def exists(self) -> bool:
        """Whether it exists."""
        return self._path.exists()

    def isfile(self) -> bool:
        """Whether it is a file."""
        return self._path.is_file()

    def isdir(self) -> bool:
        """Whether it is a folder."""
        return self._path.is_dir()

    def check(self, file: Any = None, dir: Any = None, exists: Any = None) -> bool:
        """Whether it exists (and is a file / a folder when asked)."""
        if file is not None:
            return bool(file) == self._path.is_file()
        if dir is not None:
            return bool(dir) == self._path.is_dir()
        return (exists is None or bool(exists)) == self._path.exists()

    def mkdir(self, *parts: Any) -> LocalPath:
        """A new folder ``parts`` below (or this one)."""
        target = self.join(*parts) if parts else self
        target._path.mkdir()
        return target

    def ensure(self, *parts: Any, dir: bool = False) -> LocalPath:
        """The file (or folder) ``parts`` below, made with its folders if missing."""
        target = self.join(*parts)
        if dir:
            target._path.mkdir(parents=True, exist_ok=True)
        else:
            target._path.parent.mkdir(parents=True, exist_ok=True)
            if not target._path.exists():
                target._path.write_text("")
        return target

    def write(self, data: Any, mode: str = "w", ensure: bool = False) -> None:
        """Write ``data`` (text, or bytes with ``mode="wb"``)."""
        if ensure:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes) and "b" not in mode:
            mode += "b"
        with open(self._path, mode) as f:
            f.write(data)

    def write_text(self, data: str, encoding: str = "utf-8", ensure: bool = False) -> None:
        """Write text."""
        self.write(data, "w", ensure)

    def write_binary(self, data: bytes, ensure: bool = False) -> None:
        """Write bytes."""
        self.write(data, "wb", ensure)

    def read(self, mode: str = "r") -> Any:
        """The contents (text, or bytes with ``mode="rb"``)."""
        with open(self._path, mode) as f:
            return f.read()

    def read_text(self, encoding: str = "utf-8") -> str:
        """The contents as text."""
        return self._path.read_text(encoding=encoding)

    def read_binary(self) -> bytes:
        """The contents as bytes."""
        return self._path.read_bytes()

    def readlines(self, cr: bool = True) -> list[str]:
        """The lines (with their ends unless ``cr=False``)."""
        text = self._path.read_text()
        return text.splitlines(keepends=cr)

    def open(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        """The file, opened."""
        return open(self._path, mode, *args, **kwargs)

    def listdir(self, fil: Any = None, sort: Any = None) -> list[LocalPath]:
        """The entries of the folder, as paths, sorted."""
        found = [LocalPath(p) for p in sorted(self._path.iterdir())]
        if isinstance(fil, str):
            import fnmatch

            found = [p for p in found if fnmatch.fnmatch(p.basename, fil)]
        return found

    def remove(self, rec: int = 1, ignore_errors: bool = False) -> None:
        """Delete the file (or the empty folder)."""
        if self._path.is_dir():
            self._path.rmdir()
        else:
            self._path.unlink()

    def size(self) -> int:
        """The size in bytes."""
        return self._path.stat().st_size


class LogCaptureFixture:
    """The ``caplog`` fixture: the log records made during the test (every level)."""

    def __init__(self) -> None:
        import logging

        fixture = self

        class _Handler(logging.Handler):
            def emit(self, record: Any) -> None:
                fixture.records.append(record)

        self.records: list[Any] = []
        self.handler = _Handler(0)
        self.handler.setFormatter(logging.Formatter("%(levelname)-8s %(name)s:%(message)s"))
        self._levels: list[tuple[Any, int]] = []
        root = logging.getLogger()
        root.addHandler(self.handler)
        self._levels.append((root, root.level))
        root.setLevel(0)

    @property
    def messages(self) -> list[str]:
        """Each record's message."""
        return [r.getMessage() for r in self.records]

    @property
    def text(self) -> str:
        """The records, formatted."""
        return "".join(self.handler.format(r) + "\n" for r in self.records)

    @property
    def record_tuples(self) -> list[tuple[str, int, str]]:
        """``(logger name, level, message)`` of each record."""
        return [(r.name, r.levelno, r.getMessage()) for r in self.records]

    def clear(self) -> None:
        """Forget the records so far."""
        self.records.clear()

    def get_records(self, when: str = "call") -> list[Any]:
        """The records of the test (one phase here)."""
        return self.records

    def set_level(self, level: Any, logger: str | None = None) -> None:
        """Set a logger's level (the root's by default) until the test ends."""
        import logging

        target = logging.getLogger(logger)
        self._levels.append((target, target.level))
        target.setLevel(level)
        self.handler.setLevel(level)

    def at_level(self, level: Any, logger: str | None = None) -> Any:
        """A block with a logger at ``level``."""
        import contextlib
        import logging

        @contextlib.contextmanager
        def block() -> Any:
            target = logging.getLogger(logger)
            old, old_handler = target.level, self.handler.level
            target.setLevel(level)
            self.handler.setLevel(level)
            try:
                yield
            finally:
                target.setLevel(old)
                self.handler.setLevel(old_handler)

        return block()

    def close(self) -> None:
        """Detach from logging and restore the levels."""
        import logging

        logging.getLogger().removeHandler(self.handler)
        for target, level in reversed(self._levels):
            target.setLevel(level)


# ------------------------------------------------------------------ collection


def module_for(path: str, files: dict[str, str]) -> tuple[str, str]:
    """``(module name, import root)`` of a test file, as pytest's ``prepend`` mode names it."""
    parts = path[:-3].split("/")
    folder = parts[:-1]
    name = [parts[-1]]
    while folder and "/".join(folder) + "/__init__.py" in files:
        name.insert(0, folder.pop())
    root = "/".join(folder) + "/" if folder else ""
    return ".".join(name), root


def _idval(value: Any, argname: str, index: int) -> str:
    if isinstance(value, str):
        return value.encode("unicode_escape").decode("ascii") if not value.isascii() else value
    if value is None or isinstance(value, (bool, int, float, complex)):
        return str(value)
    import enum

    if isinstance(value, enum.Enum):
        return str(value)
    if isinstance(value, type) or callable(value) and hasattr(value, "__name__"):
        return str(getattr(value, "__name__", f"{argname}{index}"))
    return f"{argname}{index}"


def _condition_holds(mark: Any, namespace: Any) -> bool:
    """Whether a ``skipif`` / ``xfail`` mark applies, as pytest decides it.

    Its condition, positional or ``condition=``; a string is evaluated with ``os``, ``sys``,
    ``platform`` and the module's names; no condition: always (att38b: ``condition=`` always
    skipped, a string was true, and every ``xfail`` applied: the reference failed 5/5).
    """
    if mark.args:
        condition = mark.args[0]
    elif "condition" in mark.kwargs:
        condition = mark.kwargs["condition"]
    else:
        return True
    if isinstance(condition, str):
        import os
        import platform

        try:
            scope = {"os": os, "sys": sys, "platform": platform, **vars(namespace)}
            condition = eval(condition, scope)  # noqa: S307 (pytest's own rule for marks)
        except Exception:
            return True
    return bool(condition)


def _parametrize(function: Any, *owners: Any) -> list[tuple[str, dict[str, Any], bool]]:
    """``[(id suffix, arguments, xfail)]`` of a test function (``[("", {}, False)]`` if plain).

    Its own ``parametrize`` marks, then those of ``owners`` (its class, its module), the
    closest first, as pytest orders them (a class-level table failed every reference before).
    """
    cases: list[tuple[list[str], dict[str, Any], bool]] = [([], {}, False)]
    for mark in [
        m for obj in (function, *owners) for m in _mark_list(getattr(obj, "pytestmark", []))
    ]:
        if getattr(mark, "name", None) != "parametrize":
            continue
        names, values = mark.args[0], list(mark.args[1])
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        ids = mark.kwargs.get("ids")
        expanded = []
        for i, raw in enumerate(values):
            xfail = False
            given_id = None
            if isinstance(raw, _Param):
                given_id = raw.id
                marks = raw.marks if isinstance(raw.marks, (list, tuple)) else [raw.marks]
                xfail = any(getattr(m, "name", "") == "xfail" for m in marks)
                raw = raw.values if len(names) > 1 else raw.values[0]
            row = list(raw) if len(names) > 1 else [raw]
            if given_id is None and isinstance(ids, (list, tuple)) and i < len(ids):
                given_id = None if ids[i] is None else str(ids[i])
            if given_id is None and callable(ids):
                made = [ids(v) for v in row]
                given_id = "-".join(
                    str(m) if m is not None else _idval(v, n, i)
                    for m, v, n in zip(made, row, names, strict=True)
                )
            label = (
                given_id
                if given_id is not None
                else "-".join(_idval(v, n, i) for v, n in zip(row, names, strict=True))
            )
            expanded.append((label, dict(zip(names, row, strict=True)), xfail))
        cases = [
            ([*labels, label], {**args, **more}, xf or xf2)
            for labels, args, xf in cases
            for label, more, xf2 in expanded
        ]
    out = []
    for labels, args, xfail in cases:
        out.append(("[" + "-".join(labels) + "]" if labels else "", args, xfail))
    # Duplicate ids get an index suffix, as pytest does.
    seen: dict[str, int] = {}
    for label, _, _ in out:
        seen[label] = seen.get(label, 0) + 1
    counts: dict[str, int] = {}
    result = []
    for label, args, xfail in out:
        if label and seen[label] > 1:
            n = counts.get(label, 0)
            counts[label] = n + 1
            label = label[:-1] + str(n) + "]"
        result.append((label, args, xfail))
    return result


def collect(module: Any, path: str) -> list[str]:
    """Node ids of the tests in an imported test module, in definition order."""
    import inspect
    import unittest

    ids: list[str] = []
    for name, obj in list(vars(module).items()):
        if name.startswith("test") and inspect.isfunction(obj):
            ids += [f"{path}::{name}{label}" for label, _, _ in _parametrize(obj, module)]
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            if issubclass(obj, unittest.TestCase):
                loader = unittest.TestLoader()
                ids += [f"{path}::{name}::{m}" for m in loader.getTestCaseNames(obj)]
            elif name.startswith("Test") and "__init__" not in vars(obj):
                for attr in dir(obj):
                    member = getattr(obj, attr, None)
                    if attr.startswith("test") and callable(member):
                        ids += [
                            f"{path}::{name}::{attr}{label}"
                            for label, _, _ in _parametrize(member, obj, module)
                        ]
    return ids


# ------------------------------------------------------------------ the guard
#
# A test's outcome is decided in the process that runs the repository's code, so that code
# must not be able to read or rewrite the runner's state. Before any of it runs, the child
# installs an audit hook (``sys.addaudithook``: it cannot be removed from Python) that
# refuses frame, object-graph and memory introspection and tracing from repository code, and
# reports every refusal on the tamper file, which fails the whole run on the host. A pass is
# written by the hook itself, with a token made in this process after the fork and kept only
# as a default argument of a function whose defaults the hook never lets anyone read; the
# hook writes it only when the runner's own ``_child_test`` frame, directly above the
# executor's, on the main thread, asks after the test returned, and only if nothing the
# verdict depends on (the runner's module, ``builtins``, ``unittest``, ``inspect``, the
# ``pytest`` module, a test module's comparison) was rebound since.

_PASS_EVENT = "rllm.swe.pass"
#: An observing test's record, written by the guard (see :func:`_report_observed`).
_OBSERVED_EVENT = "rllm.swe.observed"
_WATCH_EVENT = "rllm.swe.watch"
#: Checks that no entry of ``builtins`` changed or was added since the guard was armed (no
#: args), or that a test module binds no builtin's name its own code does not (``namespace,
#: names the file binds``); sent after a test module ran and after the test.
_BUILTINS_EVENT = "rllm.swe.builtins"
_TAMPER_FD = 4
_TAMPER_CAP = 2000
#: Events refused whoever asks, once the guard is armed (the runner needs none of them).
_ALWAYS = frozenset(
    {
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)
#: Attribute reads (``object.__getattr__`` events) that hand out frames.
_FRAME_LINKS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: Standard-library functions that read frames without handing them on:
#: ``(file suffix, function)`` of the frame that makes the audited call.
_SAFE_READERS = frozenset(
    {
        ("collections/__init__.py", "namedtuple"),
        ("typing.py", "_caller"),
        ("enum.py", "_create_"),
        ("traceback.py", "print_stack"),
        ("traceback.py", "format_stack"),
        ("traceback.py", "extract_stack"),
        ("warnings.py", "warn"),
        ("unittest/result.py", "_is_relevant_tb_level"),
        # unittest's assertRaises context clears the frames of the traceback it caught (it
        # only calls ``frame.clear()``, which hands nothing out).
        ("traceback.py", "clear_frames"),
        ("logging/__init__.py", "findCaller"),
        ("logging/__init__.py", "_is_internal_frame"),
        # A generator's or coroutine's state, and asyncio's repr of a coroutine (a text),
        # read from its frame: the frame is not handed on.
        ("inspect.py", "getgeneratorstate"),
        ("inspect.py", "getcoroutinestate"),
        ("asyncio/coroutines.py", "_format_coroutine"),
    }
)
#: Standard-library functions that read a function's code for its shape alone (a repository
#: handed a test's callback asks for its signature, or whether it is a coroutine).
_CODE_READERS = frozenset(
    {
        ("inspect.py", "_signature_from_function"),
        ("inspect.py", "_has_code_flag"),
        ("inspect.py", "getfullargspec"),
    }
)
#: Generators of ``traceback`` that yield frames: safe only when consumed by its own
#: summary code without ``capture_locals``.
_TB_WALKERS = frozenset({"walk_tb", "_walk_tb_with_full_positions", "walk_stack"})
#: ``traceback``'s code between a walker and the function that made it.
_TB_CONSUMERS = frozenset({"extended_frame_gen", "_extract_from_extended_frame_gen", "extract"})
_PROC = ("mem", "maps", "pagemap", "fd", "fdinfo", "environ", "task", "map_files", "stack")


def _is_secret_path(path: Any) -> bool:
    """Whether opening ``path`` would reach this process's memory or descriptors."""
    if isinstance(path, int):
        return path in (_RESULT_FD, _TAMPER_FD)
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")
    if not isinstance(path, str):
        return False
    import posixpath

    parts = posixpath.normpath(path).split("/")
    if len(parts) >= 4 and parts[1] == "proc":
        return any(p in _PROC for p in parts[3:])
    return len(parts) >= 3 and parts[1] == "dev" and parts[2] in ("fd", "mem", "kmem", "port")


def _arm(keys: list[bytes]) -> None:
    """Install the guard in this test process (see the section comment); call it once.

    Takes the token's halves out of ``keys``; the token itself exists only while a pass is
    written.
    """
    import _imp
    import _signal
    import _thread
    import builtins
    import functools
    import inspect
    import signal
    import types
    import unittest
    import unittest.case
    import unittest.result
    from _blake2 import blake2b

    getframe, ident, write = sys._getframe, _thread.get_ident, os.write
    hidden, test_file, prefix = _TESTS_HIDDEN[0], is_test_file, REPO_PREFIX
    main = ident()
    base = getframe(2)  # the executor's frame that forked this process
    child_code = _child_test.__code__
    runner_file = child_code.co_filename
    stdlib = os.path.dirname(os.__file__) + "/"
    trusted = (stdlib, "<frozen ", runner_file)
    function_type = types.FunctionType

    busy: set[int] = set()
    fired: list[str] = []

    def refuse(event: str) -> None:
        if sum(map(len, fired)) < _TAMPER_CAP:
            fired.append(event)
            write(_TAMPER_FD, (event[:200] + "\n").encode("utf-8", "replace"))
        raise PermissionError(f"{event} is refused while the repository's tests run")

    # The functions that code outside the guard can reach (``_signal.signal``, signal
    # handlers, the import system) have no closures (a cell can be rebound from Python):
    # their state is in defaults, which the guard lets no one read or rebind.

    def write_pass(
        kind: bytes = b"P",
        payload: bytes = b"",
        _a: bytes = keys.pop(),
        _b: bytes = keys.pop(),
        _getframe: Any = getframe,
        _refuse: Any = refuse,
        _write: Any = write,
        _file: str = runner_file,
        _mac: Any = blake2b,
    ) -> None:
        # ``kind`` ``O``: an observing test's record (``payload``, see _report_observed),
        # keyed with the token, never the token itself: a thread of the test's code that
        # reads fd 3 back while the process ends cannot sign another payload.
        callers = [_getframe(1).f_code, _getframe(2).f_code]
        if [(c.co_name, c.co_filename) for c in callers] != [("check", _file), ("hook", _file)]:
            _refuse("a pass written from outside the guard")
        key = bytes(x ^ y for x, y in zip(_a, _b, strict=True))
        if kind == b"P":
            data = memoryview(b"P" + key.hex().encode())
        else:
            data = memoryview(kind + _mac(payload, key=key).hexdigest().encode() + payload)
        while data:
            data = data[_write(_RESULT_FD, data) :]

    def frameless(
        handler: Any, signum: int, frame: Any, _busy: set[int] = busy, _main: int = main
    ) -> Any:
        # A handler gets no frame, and is checked like any code even if it interrupted the
        # guard itself.
        held = _main in _busy
        _busy.discard(_main)
        try:
            return handler(signum, None)
        finally:
            if held:
                _busy.add(_main)

    def set_signal(
        signalnum: Any,
        handler: Any,
        _real: Any = _signal.signal,
        _partial: Any = functools.partial,
        _wrap: Any = frameless,
    ) -> Any:
        return _real(signalnum, _partial(_wrap, handler) if callable(handler) else handler)

    def create_builtin(
        spec: Any,
        _real: Any = _imp.create_builtin,
        _loaded: Any = sys.modules,
        _refuse: Any = refuse,
    ) -> Any:
        # A second copy of a loaded built-in module (``_signal``) would bypass the wrappers.
        if getattr(spec, "name", None) in _loaded:
            _refuse(f"a second copy of the module {spec.name}")
        return _real(spec)

    sealed = (
        write_pass,
        set_signal,
        frameless,
        create_builtin,
        strict_compare,
        run_node,
        _child_test,
        RepoFinder.exec_module,
        # They hold the list of observations and the serialiser (s12 F3).
        observe,
        _Observing.match,
        _Observing.__exit__,
        _report_observed,
    )
    report_code = _report_observed.__code__
    _signal.signal = set_signal
    signal.signal.__wrapped__ = set_signal  # type: ignore[attr-defined]
    _imp.create_builtin = create_builtin
    builtin_loaded = frozenset(sys.builtin_module_names) & set(sys.modules)

    watched: list[tuple[Any, dict[Any, Any]]] = []
    classes: list[type] = [
        unittest.TestCase,
        unittest.TestResult,
        unittest.case._Outcome,  # type: ignore[attr-defined]
        unittest.TestSuite,  # it runs a TestCase test with its class fixtures
        unittest.suite.BaseTestSuite,
    ]

    def watch(mapping: Any) -> None:
        watched.append((mapping, dict(mapping)))

    own = _child_test.__globals__
    for value in list(own.values()):
        if isinstance(value, type) and getattr(value, "__module__", None) == own["__name__"]:
            classes.append(value)
    pytest_module = sys.modules.get("pytest")
    for module in (
        builtins,
        unittest,
        unittest.case,
        unittest.result,
        unittest.suite,
        inspect,
        pytest_module,
    ):
        if module is not None:
            watch(vars(module))
    watch(own)
    for cls in classes:
        watch(vars(cls))
    watched.append((sys.modules, dict(sys.modules)))
    # What a comparison in a test uses, checked around each one (a rebinding undone right
    # after an assertion would escape the check at the end).
    helpers = ("strict_equal", "strict_contains", "_Approx", "_PLAIN", "_NUMBERS")
    used = ("type", "len", "all", "any", "zip", "bool", "isinstance", "abs", "max")
    compare_deps = [
        (own, {k: own[k] for k in helpers}),
        (vars(builtins), {k: vars(builtins)[k] for k in used}),
        (vars(_Approx), dict(vars(_Approx))),
    ]

    # Every entry of ``builtins`` as it was before any repository code ran: a probe's
    # observed expression looks its builtins up at run time (``callable(x)``).
    builtin_names = vars(builtins)
    builtin_snapshot = dict(builtin_names)

    def builtins_intact(namespace: Any = None, bound: Any = ()) -> None:
        for key, value in builtin_snapshot.items():
            if builtin_names.get(key, refuse) is not value:
                refuse(f"the builtin {key} was rebound")
        for key in list(builtin_names):
            if key not in builtin_snapshot:
                refuse(f"a builtin {key!r} was added")
        if type(namespace) is dict:
            for key in list(namespace):
                if (
                    type(key) is str
                    and not key.startswith("__")
                    and key in builtin_snapshot
                    and key not in bound
                    and namespace[key] is not builtin_snapshot[key]
                ):
                    refuse(f"the test module's {key} was bound from outside it")

    def from_repository(top: Any) -> bool:
        """Whether a frame from ``top`` down to the executor's is not the runner's or stdlib's."""
        if ident() != main:
            return True
        frame = top
        while frame is not None and frame is not base:
            if not frame.f_code.co_filename.startswith(trusted):
                return True
            frame = frame.f_back
        return frame is None

    def safe_reader(top: Any) -> bool:
        code = top.f_code
        if not code.co_filename.startswith(stdlib):
            return False
        where = code.co_filename[len(stdlib) :]
        if code.co_name in _TB_WALKERS and where == "traceback.py":
            # Consumed by traceback's own summary code, without locals, and made by a
            # function of traceback's (extract_stack, TracebackException): a walker the
            # repository made and handed to `StackSummary.extract(g, limit=1)` is resumed
            # by it after the one check, its frames then read with f_back (s39 att39j F1).
            frame = top.f_back
            consumed = False
            while (
                frame is not None
                and frame.f_code.co_filename == code.co_filename
                and frame.f_code.co_name in _TB_CONSUMERS
            ):
                if frame.f_locals.get("capture_locals"):
                    return False
                consumed, frame = True, frame.f_back
            return consumed and frame is not None and frame.f_code.co_filename == code.co_filename
        if code.co_name == "<lambda>" and where == "logging/__init__.py":
            caller = top.f_back
            return (
                caller is not None
                and caller.f_code.co_name == "findCaller"
                and caller.f_code.co_filename == code.co_filename
            )
        return (where, code.co_name) in _SAFE_READERS

    def code_reader(top: Any) -> bool:
        """Whether ``top`` is the standard library reading a function's code for its shape.

        A signature, whether it is a coroutine: never its constants.
        """
        code = top.f_code
        if not code.co_filename.startswith(stdlib):
            return False
        return (code.co_filename[len(stdlib) :], code.co_name) in _CODE_READERS

    def intact() -> bool:
        for mapping, snapshot in watched:
            for key, value in snapshot.items():
                if mapping.get(key, refuse) is not value:
                    return False
        return True

    def hook(event: str, args: tuple) -> None:
        me = ident()
        if me in busy:  # the guard's own reads are the only events it makes
            if event == "sys._getframe" or (
                event == "object.__getattr__"
                and args[1] in ("f_code", "__code__", "__defaults__", "__kwdefaults__")
                and not any(args[0] is f for f in sealed)
            ):
                return
        held = me in busy
        busy.add(me)
        try:
            check(event, args)
        finally:
            if not held:
                busy.discard(me)

    def check(event: str, args: tuple) -> None:
        if event in _ALWAYS or event.startswith("ctypes."):
            refuse(event)
        elif event == "object.__getattr__":
            obj, name = args[0], args[1]
            if any(obj is f for f in sealed):
                refuse(f"reading the guard's {name}")
            if name == "__code__" and hidden and type(obj) is function_type:
                # A hidden test module's functions hold what its source does (a print's
                # label, a case's name: s39 att39e F3); their code is the runner's.
                where = obj.__code__.co_filename
                if where.startswith(prefix) and test_file(where[len(prefix) :]):
                    top = getframe(2)
                    if from_repository(top) and not code_reader(top):
                        refuse(f"reading the code of {where[len(prefix) :]}")
            if name in _FRAME_LINKS or name == "f_code":
                top = getframe(2)
                if from_repository(top):
                    # A frame's code is fine for the standard library; a frame itself
                    # (a generator's, a traceback's, the stack's) only for the functions
                    # known to keep it (_SAFE_READERS), never for any other: a
                    # standard-library function that reads one may hand it back
                    # (`inspect.getmembers(gen)["gi_frame"]`, a task's `get_stack()`), and
                    # from a frame `f_back` and `f_locals` reach the running test's (s39
                    # att39i F1: its locals and constants read so, 20/21 paid).
                    lenient = name == "f_code" and top.f_code.co_filename.startswith(trusted)
                    if not lenient and not safe_reader(top):
                        refuse(f"object.__getattr__ {name}")
        elif event == "sys._getframe":
            top = getframe(2)
            if from_repository(top) and not safe_reader(top):
                refuse(event)
        elif event == "open":
            if _is_secret_path(args[0]):
                refuse(f"open {args[0]!r}")
        elif event == "import":
            if str(args[0]).partition(".")[0] in ("ctypes", "_ctypes") or args[0] in builtin_loaded:
                refuse(f"import {args[0]}")
        elif event == "os.truncate":
            if _is_secret_path(args[0]):
                refuse(f"truncating {args[0]!r}")
        elif event == "sys.addaudithook":
            if from_repository(getframe(2)):
                refuse(event)
        elif event in ("code.__new__", "marshal.loads", "marshal.load"):
            # Code objects made by hand (the import system's own reads of ``.pyc`` are fine).
            if not getframe(2).f_code.co_filename.startswith(trusted):
                refuse(event)
        elif event == "compile":
            filename = args[1] if len(args) > 1 else None
            if isinstance(filename, bytes):
                filename = filename.decode("utf-8", "replace")
            if isinstance(filename, str) and filename.startswith((REPO_PREFIX, *trusted)):
                top = getframe(2)
                if not top.f_code.co_filename.startswith(trusted):
                    refuse(f"compile as {filename!r}")
        elif event == _CHECK_EVENT:
            for mapping, snapshot in compare_deps:
                for key, value in snapshot.items():
                    if mapping.get(key, refuse) is not value:
                        refuse(f"the comparison's {key} was rebound")
        elif event == _WATCH_EVENT:
            if args and isinstance(args[0], dict):
                watch(args[0])
        elif event == _BUILTINS_EVENT:
            if len(args) == 2 and type(args[1]) is frozenset:
                builtins_intact(args[0], args[1])
            else:
                builtins_intact()
        elif event == _PASS_EVENT:
            top = getframe(2)
            if ident() != main or top.f_code is not child_code or top.f_back is not base:
                refuse("a pass claimed from outside the runner")
            if not fired:
                if not intact():
                    refuse("the runner's state was rebound during the test")
                write_pass()
        elif event == _OBSERVED_EVENT:
            # Only the runner's _report_observed, called by _child_test, called by the
            # executor (s12 F3): its payload is the runner's own list, serialised by marshal.
            top = getframe(2)
            caller = top.f_back
            if (
                ident() != main
                or top.f_code is not report_code
                or caller is None
                or caller.f_code is not child_code
                or caller.f_back is not base
                or len(args) != 1
                or type(args[0]) is not bytes
            ):
                refuse("observations reported from outside the runner")
            if not intact():
                refuse("the runner's state was rebound during the test")
            write_pass(b"O", args[0])
        elif event in ("object.__setattr__", "object.__delattr__"):
            if any(args[0] is f for f in sealed):
                refuse(f"rebinding the guard's {args[1]}")
            if (
                type(args[0]) is function_type
                and args[0].__code__.co_filename.startswith(trusted)
                and not getframe(2).f_code.co_filename.startswith(trusted)
            ):
                refuse(f"rebinding {args[1]} of the runner's or the standard library's code")
            if any(args[0] is c for c in classes) and from_repository(getframe(2)):
                refuse(f"{event} {args[1]!r} on the runner's {args[0]!r}")

    sys.addaudithook(hook)


# ------------------------------------------------------------------ running one test


def _marks(*objs: Any) -> list[Any]:
    found = []
    for obj in objs:
        found += _mark_list(getattr(obj, "pytestmark", []))
    return found


def conftests(path: str, files: dict[str, str], finder: RepoFinder) -> list[Any]:
    """The ``conftest.py`` modules from the repository root down to ``path``'s folder.

    Only their fixtures are used (pytest's hooks and plugins are not). The verdict runs the
    pristine ones: a submission's changes to any ``conftest.py`` are dropped.
    """
    import importlib.util

    parts = path.split("/")[:-1]
    found = []
    for depth in range(len(parts) + 1):
        candidate = "/".join([*parts[:depth], "conftest.py"])
        if candidate in files:
            name = "_rllm_conftest_" + candidate[:-3].replace("/", "_").replace(".", "_")
            if name not in sys.modules:
                loader: Any = finder
                spec = importlib.util.spec_from_loader(name, loader, origin=candidate)
                assert spec is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                finder.exec_module(module)
            found.append(sys.modules[name])
    return found


def _fixtures(*scopes: Any) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for scope in scopes:
        for value in vars(scope).values() if not isinstance(scope, dict) else scope.values():
            # Read off a function's own attributes: a module-level `Mock()` answers any
            # attribute, and was taken for a fixture (s44 att44c: the reference failed).
            info = (
                vars(value).get("_rllm_fixture") if isinstance(value, types.FunctionType) else None
            )
            if isinstance(info, dict):
                table[info["name"]] = value
    return table


def _call_with_fixtures(
    function: Any, given: dict[str, Any], table: dict[str, Any], teardown: list[Any], cache: dict
) -> Any:
    import inspect

    def resolve(name: str, depth: int = 0) -> Any:
        if name in given:
            return given[name]
        if name in cache:
            return cache[name]
        if name == "monkeypatch":
            value: Any = MonkeyPatch()
            teardown.append(value.undo)
        elif name in ("capsys", "capfd", "capsysbinary", "capfdbinary"):
            value = CaptureFixture(binary=name.endswith("binary"))
            teardown.append(value.close)
        elif name == "tmp_path":
            value = _scratch_dir("tmp")
        elif name == "tmpdir":
            value = LocalPath(_scratch_dir("tmpdir"))
        elif name == "tmp_path_factory":
            value = TempPathFactory()
        elif name == "caplog":
            value = LogCaptureFixture()
            teardown.append(value.close)
        elif name == "recwarn":
            value = _Warns(Warning).__enter__()
            teardown.append(lambda w=value: w._catcher.__exit__(None, None, None))
        elif name == "request":
            value = FixtureRequest(function, resolve, teardown)
        elif name in table and depth < 32:
            fixture = table[name]
            arguments = {
                p: resolve(p, depth + 1)
                for p in inspect.signature(fixture).parameters
                if p not in ("self",)
            }
            value = fixture(**arguments)
            if inspect.isgenerator(value):
                generator = value
                value = next(generator)
                teardown.append(lambda g=generator: next(g, None))
        else:
            raise LookupError(
                f"fixture {name!r} not found (the sandboxed runner offers fixtures "
                "defined in the test file and its conftest.py files, request, monkeypatch, "
                "capsys, capfd, tmp_path and tmpdir (in memory), tmp_path_factory, caplog and "
                "recwarn)"
            )
        cache[name] = value
        return value

    for name, fixture in table.items():
        if fixture._rllm_fixture["autouse"]:
            resolve(name)
    parameters = [p for p in inspect.signature(function).parameters if p != "self"]
    # A `mock.patch` decorator without `new` hands the test its mock as the next leading
    # argument, which is no fixture (pytest's `num_mock_patch_args`; s42 att42e: such a test
    # errored here, and its task was the reference's failure).
    parameters = parameters[_patched_arguments(function) :]
    return function(**{p: resolve(p) for p in parameters})


def _patched_arguments(function: Any) -> int:
    """How many leading arguments ``mock.patch`` decorators of ``function`` hand it."""
    patchings = getattr(function, "patchings", None)
    if not patchings:
        return 0
    # Imported by the test module already: importing it for every test made the reference's
    # walk read unittest.mock's values as the suite's (every embedded task was withheld).
    from unittest import mock

    return sum(
        1 for p in patchings if not getattr(p, "attribute_name", None) and p.new is mock.DEFAULT
    )


def run_node(
    node: str,
    files: dict[str, str],
    finder: RepoFinder | None = None,
    records: dict[str, Any] | None = None,
    *,
    _import: Any = __import__,
    _call: Any = _call_with_fixtures,
    _fixtures: Any = _fixtures,
    _conftests: Any = conftests,
    _marks: Any = _marks,
    _parametrize: Any = _parametrize,
    _skipped: Any = Skipped,
    _audit: Any = _audit,
    _builtins_event: str = _BUILTINS_EVENT,
    _getattr: Any = getattr,
    _isinstance: Any = isinstance,
    _issubclass: Any = issubclass,
    _type: Any = type,
    _vars: Any = vars,
    _callable: Any = callable,
    _len: Any = len,
    _reversed: Any = reversed,
    _bool: Any = bool,
    _condition: Any = _condition_holds,
    _signature: Any = None,
    _unwrap: Any = None,
    _testcase: Any = None,
    _testresult: Any = None,
    _testsuite: Any = None,
) -> str:
    """Run one test node id; return ``"P"`` (passed), ``"F…"``, ``"S…"`` or ``"E…"``.

    ``finder``: the repository's finder, when :func:`install` already ran in this process;
    ``records``: the dict given to :func:`install`, where it records the test files it ran.
    Everything called once repository code may have run is a default bound before (the
    keyword-only arguments; see :func:`_seal_runner`), never a name looked up then.
    """
    import importlib

    path, _, rest = node.partition("::")
    if path not in files or not rest:
        return f"Eno test file or test named {node!r}"
    parts = rest.split("::")
    last, bracket, label = parts[-1].partition("[")
    label = bracket + label
    module_name, root = module_for(path, files)
    if records is None:
        records = {}
        finder = install(files, [root] if root else [], records)
    try:
        importlib.import_module(module_name)
    except _skipped as e:
        return f"Sskipped at import: {e}"
    _audit(_builtins_event)  # nothing the import ran rebound a builtin
    record = records.get(path)
    if record is None:
        return f"Ethe test module {path} was not loaded from the repository"
    module, names, classes, codes = record
    owner: Any = module
    for index, name in enumerate(parts[:-1]):
        owner = names.get(name) if index == 0 else _getattr(owner, name, None)
        if owner is None:
            return f"Eno class {name!r} in {path}"
    if owner is module:
        function = names.get(last)
    else:
        function = None
        for klass in _getattr(owner, "__mro__", ()):
            if last in _vars(klass):
                known = classes.get(id(klass))
                if known is not None and known[0] is klass:
                    function = known[1].get(last)
                break
    if function is None:
        return f"Eno test {last!r} in {path}"
    raw = function  # as the class holds it: bound to the instance below
    if _isinstance(function, (staticmethod, classmethod)):
        function = function.__func__
    code = _getattr(_unwrap(function), "__code__", None)
    if code is None or code.co_filename != REPO_PREFIX + path or codes.get(id(code)) is not code:
        return f"Ethe test {last!r} is not the function defined in {path}"
    if _getattr(_unwrap(function), "__globals__", None) is not _vars(module):
        return f"Ethe test {last!r} does not run in the namespace of {path}"
    if _isinstance(owner, _type) and _issubclass(owner, _testcase):
        result = _testresult()
        # A suite runs ``setUpClass`` / ``tearDownClass`` (and ``setUpModule``) around it.
        _testsuite([owner(last)]).run(result)
        problems = result.failures + result.errors
        if problems:
            return "F" + problems[0][1][-_RESULT_CAP:]
        if result.skipped or result.expectedFailures or result.unexpectedSuccesses:
            return "Sskipped or expected to fail"
        return "P" if result.testsRun == 1 else "Enot run"
    owners = (owner, module) if owner is not module else (module,)
    cases = {lab: (args, xfail) for lab, args, xfail in _parametrize(function, *owners)}
    if label not in cases:
        return f"Eno parametrized case {label!r} of {last!r}"
    arguments, xfail = cases[label]
    marks = _marks(module, owner if owner is not module else None, function)
    for mark in marks:
        if mark.name == "skip" or (mark.name == "skipif" and _condition(mark, module)):
            return "Smarked skip"
        xfail = xfail or (mark.name == "xfail" and _condition(mark, module))
    teardown: list[Any] = []
    instance = None
    try:
        # Each with what pytest hands it: the module, the class, the method or the function
        # (s40: setup_module(module) was handed the test function).
        hooks: list[Any] = [(_getattr(module, "setup_module", None), module)]
        if _isinstance(owner, _type):
            hooks.append((_getattr(owner, "setup_class", None), owner))
            instance = owner()
            function = raw.__get__(instance, owner)
            hooks.append((_getattr(instance, "setup_method", None), function))
        else:
            hooks.append((_getattr(module, "setup_function", None), function))
        for hook, given in hooks:
            if _callable(hook):
                n = _len(_signature(hook).parameters)
                hook(*([given] if n else []))
        table = _fixtures(
            *_conftests(path, files, finder),
            module,
            *([_type(instance)] if instance is not None else []),
        )
        _call(function, arguments, table, teardown, {})
        for done in _reversed(teardown):
            done()
    except _skipped as e:
        return f"S{e}"
    if xfail:
        return "Sexpected to fail (xfail) but passed"
    return "P"


def _seal_runner() -> None:
    """Bind the ``inspect`` and ``unittest`` parts :func:`run_node` calls as its defaults."""
    import inspect
    import unittest

    defaults = dict(run_node.__kwdefaults__ or {})
    defaults.update(
        _signature=inspect.signature,
        _unwrap=inspect.unwrap,
        _testcase=unittest.TestCase,
        _testresult=unittest.TestResult,
        _testsuite=unittest.TestSuite,
    )
    run_node.__kwdefaults__ = defaults


def _format_failure(error: BaseException) -> str:
    """The traceback of a failure, with the runner's own frames left out."""
    import traceback

    info = traceback.TracebackException(type(error), error, error.__traceback__)
    frames = [f for f in info.stack if f.filename.startswith((REPO_PREFIX, "<snippet>"))]
    info.stack = traceback.StackSummary.from_list(frames)
    return "".join(info.format())[-_RESULT_CAP:]


def _child_test(
    node: str,
    files: dict[str, str],
    keys: list[bytes],
    observing: bool = False,
    walking: bool = False,
    *,
    _run: Any = run_node,
    _pass: Any = _audit,
    _event: str = _PASS_EVENT,
    _builtins_event: str = _BUILTINS_EVENT,
) -> None:
    """The body of a test's process: run ``node``; write the result on fd 3; exit.

    ``keys`` holds the two halves of this process's pass token; the guard takes them out
    before any repository code runs, and only the guard writes a pass (see :func:`_arm`).
    The pass is claimed the moment the test returns, before anything repository code could
    have replaced runs; output goes to the descriptors without flushing repository-visible
    streams first (they are line-buffered; what is left is flushed after).
    """
    try:
        path = node.partition("::")[0]
        _, root = module_for(path, files) if path in files else ("", "")
        records: dict[str, Any] = {}
        _WALKING[0] = observing and walking
        finder = install(files, [root] if root else [], records, hide_tests=observing)
        _seal_runner()
        _arm(keys)
        result = _run(node, files, finder, records)
        _pass(_builtins_event)  # nor did the test (a monkeypatch is undone by now)
        if observing:
            _report_observed(["ended", result[:1]])
        if result == "P":
            try:
                _pass(_event)
            except BaseException:
                pass
            _exit(0)
    except SystemExit as e:
        if observing:
            _report_observed(["raised", _mro_names(type(e))])
        result = f"Fthe test called sys.exit({e.code!r})"
    except BaseException as e:
        if observing:
            _report_observed(["raised", _mro_names(type(e))])
        result = "F" + _format_failure(e)
    if type(result) is not str:
        result = "Ethe runner returned no result"
    data = result.encode("utf-8", "replace")[:_RESULT_CAP]
    _write(_RESULT_FD, data)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    _exit(0)


def _report_observed(
    end: list[Any],
    *,
    _seen: list[Any] = _OBSERVED_LIST,
    _spaces: list[Any] = _MODULE_SPACES,
    _dumps: Any = marshal.dumps,
    _audit: Any = _audit,
    _event: str = _OBSERVED_EVENT,
    _put: Any = _write,
    _quit: Any = _exit,
) -> None:
    """Have the guard write what an observing test recorded, and how it ended; exit.

    On fd 3: ``O``, a MAC keyed with the process's token, and the ``marshal`` of both (see
    the section comment above :data:`_OBSERVED_LIST`).

    ``marshal.dumps`` is the C function bound before any repository code ran (``json``'s
    encoder classes are Python a test could change).
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    try:
        modules: list[Any] = []
        try:
            if _WALKING[0]:
                _module_values(list(_spaces), modules)
                modules = sorted(set(modules) | _AT_CHECKS)
        except BaseException:  # what the suite holds could not be walked: any value may be
            modules = ["unwalked"]
        data = _dumps((list(_seen), list(end), modules))
        if len(data) > _OBSERVED_CAP:
            raise ValueError("too many observations")
        _audit(_event, data)
    except BaseException:
        _put(_RESULT_FD, b"Ethe observations could not be written")
    _quit(0)


def _child_collect(path: str, files: dict[str, str]) -> None:
    import importlib
    import json

    me = os.getpid()
    try:
        module_name, root = module_for(path, files)
        install(files, [root] if root else [])
        module = importlib.import_module(module_name)
        data = "C" + json.dumps(collect(module, path))
    except BaseException as e:
        data = "E" + _format_failure(e)
    if os.getpid() != me:
        # A process the module forked at import (and that went on past its own code): its
        # report would land in the same result file as the collector's.
        _exit(0)
    _write(_RESULT_FD, data.encode("utf-8", "replace")[: 1 << 20])
    _exit(0)


def _child_python(code: str, files: dict[str, str]) -> None:
    install(files)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    status = 0
    try:
        exec(compile(code, "<snippet>", "exec", dont_inherit=True), namespace)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) and 0 <= e.code < 256 else 1
    except BaseException as e:
        sys.stderr.write(_format_failure(e) + "\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    _exit(status)


# ------------------------------------------------------------------ the executor


def _memfd(name: str) -> int:
    return os.memfd_create(name, 0)


def _lower(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _read(fd: int, cap: int, tail: bool = False) -> str:
    size = os.fstat(fd).st_size
    start = max(size - cap, 0) if tail else 0
    data = os.pread(fd, min(size, cap), start)
    return data.decode("utf-8", "replace")


#: Restricts the calling process with the bootstrap's Landlock ruleset (nonzero: refused;
#: ``rllm_envs.sandbox.runner._LANDLOCK_SOURCE``): each test process applies it before any
#: repository code runs, so it opens nothing of ``/proc`` (memory reports carry page
#: mapcounts a concurrent sandbox sets) and creates no file; it reads what the sandbox shows
#: (the repository is served from memory). ``None`` outside a sandbox's bootstrap or where
#: the kernel offers no Landlock (tests then run as before).
_LANDLOCK: Any = globals().get("__rllm_landlock__")


def _observations(data: bytes, token: str) -> str:
    """An observing test's record as the host reads it (``O`` and JSON).

    From what its process wrote: ``O``, the BLAKE2b MAC (keyed with the process's token,
    which only the guard has) of the payload, and the payload, the ``marshal`` of the
    observations and the test's end (see :func:`_report_observed`); an ``F`` failure when
    the MAC does not match (s12 F3: the test's own code wrote or changed the record).
    """
    import json
    from hashlib import blake2b

    mac, payload = data[1:129], data[129:]
    key = bytes.fromhex(token) if token else b""
    if not key or mac != blake2b(payload, key=key).hexdigest().encode():
        return "Fobservations were reported, but not by the runner"
    try:
        seen, end, modules = marshal.loads(payload)
        text = json.dumps({"observed": seen, "end": end, "module": modules}, ensure_ascii=True)
    except Exception:
        return "Ethe observations could not be read"
    return "O" + text


def _fork() -> int:
    for attempt in range(40):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.025 * (attempt + 1))
    return os.fork()


class Executor:
    """Runs child processes one at a time and reports each on the channel."""

    def __init__(self, spec: dict[str, Any], channel: int) -> None:
        self.spec, self.channel = spec, channel
        self.files: dict[str, str] = spec["files"]
        self.limit = float(spec["time_limit"])
        self.memory = int(spec["memory_mb"]) << 20
        self.output_chars = int(spec["output_chars"])

    def emit(self, record: dict[str, Any]) -> None:
        """Write one length-prefixed JSON record on the channel."""
        import json

        body = json.dumps(record, ensure_ascii=True).encode("ascii")
        data = memoryview(len(body).to_bytes(4, "big") + body)
        while data:
            data = data[os.write(self.channel, data) :]

    def child(self, body: Any, *args: Any) -> dict[str, Any]:
        """Fork ``body(*args)`` with the test limits; return what was observed.

        A test's process (``body`` is :func:`_child_test`) gets the two halves of a pass
        token made after the fork, which never leave it but through the guard; its result
        counts as a pass only if it is ``P`` and their XOR, and the tamper file (where the
        guard reports what it refused) is part of the record.
        """
        out, res, keys, tamper = _memfd("out"), _memfd("res"), _memfd("keys"), _memfd("tamper")
        # The test's output, write-only for it: read back with os.pread(1, ...), what the
        # suite printed (a computed expected value) was a patch's answer (s41 att41m F1,
        # 15/15 paid). Where /proc is not there, as before.
        try:
            writer = os.open(f"/proc/self/fd/{out}", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            writer = out
        start = time.monotonic()
        try:
            pid = _fork()
            if pid == 0:  # pragma: no cover - runs in the child
                try:
                    os.setpgid(0, 0)
                    if _LANDLOCK is not None and _LANDLOCK():
                        raise OSError("the test's file-system restriction was refused")
                    null = os.open("/dev/null", os.O_RDONLY)
                    os.dup2(null, 0)
                    os.dup2(writer, 1)
                    os.dup2(writer, 2)
                    os.dup2(res, _RESULT_FD)
                    os.dup2(tamper, _TAMPER_FD)
                    if body is _child_test:
                        pair = [os.urandom(16), os.urandom(16)]
                        os.write(keys, pair[0] + pair[1])
                        args = (*args[:2], pair, *args[3:])
                        del pair
                    os.closerange(_TAMPER_FD + 1, 1 << 20)
                    _lower(resource.RLIMIT_CPU, int(self.limit) + 2)
                    _lower(resource.RLIMIT_AS, self.memory)
                    _lower(resource.RLIMIT_FSIZE, 16 << 20)
                    import io

                    sys.stdout = io.TextIOWrapper(
                        io.FileIO(1, "wb", closefd=False), encoding="utf-8", line_buffering=True
                    )
                    sys.stderr = io.TextIOWrapper(
                        io.FileIO(2, "wb", closefd=False),
                        encoding="utf-8",
                        errors="backslashreplace",
                        line_buffering=True,
                    )
                    sys.stdin = io.TextIOWrapper(io.FileIO(0, "rb", closefd=False))
                except BaseException as e:
                    _write(2, f"cannot start: {e}\n".encode())
                    _exit(127)
                body(*args)
                _exit(0)
            try:
                os.setpgid(pid, pid)
            except OSError:
                pass
            pidfd = os.pidfd_open(pid)
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                ready = poller.poll(int(self.limit * 1000))
            finally:
                os.close(pidfd)
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status, _ = os.wait4(pid, 0)
            if self.spec.get("reap"):
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    pass
            raw = os.pread(res, _OBSERVED_CAP + 200, 0)
            output = _read(out, self.output_chars, tail=True)
            halves = os.pread(keys, 32, 0)
            refused = _read(tamper, _TAMPER_CAP)
        finally:
            for fd in {out, res, keys, tamper, writer}:
                os.close(fd)
        token = bytes(x ^ y for x, y in zip(halves[:16], halves[16:], strict=False)).hex()
        if len(halves) != 32:
            token = ""
        if raw.startswith(b"O"):
            result = _observations(raw, token)
        else:
            result = raw.decode("utf-8", "replace")
        if result.startswith("P"):
            if token and result == "P" + token:
                result = "P" + self.spec["nonce"]
            else:
                result = "Fa pass was reported, but not by the runner"
        signaled = os.WIFSIGNALED(status)
        return {
            "outcome": "timeout" if not ready else "signaled" if signaled else "exited",
            "code": None if signaled else os.WEXITSTATUS(status),
            "signal": os.WTERMSIG(status) if signaled else None,
            "result": result,
            "output": output,
            "time": round(time.monotonic() - start, 4),
            "tamper": refused,
        }

    def run(self) -> None:
        """Run the spec's mode and report every child, then ``done``."""
        mode = self.spec["mode"]
        nonce = self.spec["nonce"]
        index = 0
        if mode == "python":
            record = self.child(_child_python, self.spec["code"], self.files)
            self.emit({"index": 0, "id": "<snippet>", **record})
        elif mode == "tests":
            observing = bool(self.spec.get("observe"))
            walking = bool(self.spec.get("walk"))
            for index, node in enumerate(self.spec["tests"]):
                record = self.child(_child_test, node, self.files, nonce, observing, walking)
                if not (observing and record["result"].startswith("O")):
                    record["result"] = record["result"][:_RESULT_CAP]
                self.emit({"index": index, "id": node, **record})
        else:  # collect, then run what was collected
            import json

            budget = int(self.spec["max_tests"])
            for path in self.spec["test_files"]:
                found = self.child(_child_collect, path, self.files)
                text = found["result"]
                if not text.startswith("C"):
                    found["result"] = ("E" + text[1:] if text else "Ecollection failed")[
                        :_RESULT_CAP
                    ]
                    self.emit({"index": index, "id": path, **found})
                    index += 1
                    continue
                try:
                    nodes = [n for n in json.loads(text[1:]) if isinstance(n, str)]
                except ValueError:
                    found["result"] = (
                        "Ecollection's report was unreadable (did a process the module "
                        "started at import write to it too?)"
                    )
                    self.emit({"index": index, "id": path, **found})
                    index += 1
                    continue
                for node in nodes:
                    if index >= budget or not node.startswith(path + "::"):
                        break
                    record = self.child(_child_test, node, self.files, nonce)
                    record["result"] = record["result"][:_RESULT_CAP]
                    self.emit({"index": index, "id": node[:500], **record})
                    index += 1
        self.emit({"done": True})


def main(channel: int) -> None:
    """Run the spec read from stdin; report on ``channel``."""
    # What every test process needs, imported once here (before the spec arrives in a
    # sandbox started ahead of time) and shared by the forks: standard library only.
    import collections  # noqa: F401
    import enum  # noqa: F401
    import importlib.machinery  # noqa: F401
    import inspect  # noqa: F401
    import io  # noqa: F401
    import json  # noqa: F401
    import linecache  # noqa: F401
    import logging  # noqa: F401  (and threading: noted below with the rest)
    import marshal
    import re  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401
    import unittest  # noqa: F401

    _note_modules()  # once, ahead of the spec: the test processes' forks inherit it
    data = sys.stdin.buffer.read()
    if not data:  # a pool closed this sandbox unused
        return
    Executor(marshal.loads(data), channel).run()


if __name__ == "__main__":
    main(int(globals().get("__rllm_channel__", -1)))
