"""Suite-wide markers, so a contributor can pick a lane without knowing every file.

Markers are given by where a test lives (and by what it imports), so a new test file gets the
right lane without remembering to mark it:

* ``sandbox``: runs model-written code in firejail/bubblewrap (needs the OS packages);
* ``model``: builds a torch model or a vLLM engine (imports or ``importorskip``s one);
* ``integration``: drives an adapter, a server or a benchmark end to end;
* ``slow``: marked by hand on tests that take more than about 20 s.

The fast lane (``bash scripts/test.sh --fast``) runs everything that carries none of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).parent
_SANDBOX = ("sandbox", "envs/code", "envs/swe", "tools")
_INTEGRATION = ("adapters", "benchmarks")
# A process group's launcher variables (and the marker of a group a process gave itself).
_GROUP_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "RLLM_ADAPTERS_OWN_GROUP",
)
# Module-level imports that mean a test builds a model or an engine.
_MODEL_MODULES = ("torch", "transformers", "vllm", "deepspeed", "trl", "peft")


def _lane_markers(path: Path) -> set[str]:
    rel = path.relative_to(_ROOT).as_posix()
    marks: set[str] = set()
    if any(rel.startswith(prefix + "/") for prefix in _SANDBOX):
        marks.add("sandbox")
    if any(rel.startswith(prefix + "/") for prefix in _INTEGRATION):
        marks.add("integration")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return marks
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("import ", "from ")) and any(
            stripped.split()[1].split(".")[0] == module for module in _MODEL_MODULES
        ):
            marks.add("model")
            break
        # `transformers = pytest.importorskip("transformers")` at module level imports it too.
        if not line.startswith(" ") and any(
            f'importorskip("{module}' in stripped for module in _MODEL_MODULES
        ):
            marks.add("model")
            break
    return marks


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cache: dict[Path, set[str]] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path not in cache:
            cache[path] = _lane_markers(path) if path.is_relative_to(_ROOT) else set()
        for name in sorted(cache[path]):
            item.add_marker(getattr(pytest.mark, name))
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.sandbox)


# The launcher variables the session started with (none, outside torchrun).
_SESSION_GROUP = {n: os.environ[n] for n in _GROUP_VARS if n in os.environ}


@pytest.fixture(autouse=True)
def _own_process_group_stays_in_its_test() -> Iterator[None]:
    """An in-process trainer gives pytest's process a one-process group through the launcher's
    variables; a later test's child (a TRL script, ``python -m rllm_adapters.train``) that inherited
    them would start its store on the port that group holds. After each test the variables are
    those the session started with: a module-scoped trainer fixture sets them before any test of
    its module starts, so restoring a test's own start would keep them for the rest of the run."""
    yield
    for name in _GROUP_VARS:
        if name in _SESSION_GROUP:
            os.environ[name] = _SESSION_GROUP[name]
        else:
            os.environ.pop(name, None)
