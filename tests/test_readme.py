"""The README documents what exists and its quick start stays the two-command form."""

from __future__ import annotations

import re
from pathlib import Path

import rllm_envs

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_lists_every_registered_env():
    ids = [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()]
    missing = [env_id for env_id in ids if f"`{env_id}`" not in README]
    assert not missing, f"README's environment table lacks {missing}"


def test_quick_start_has_exactly_two_commands_that_exist():
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    for command in commands:
        script = command.split()[1]
        assert (ROOT / script).is_file(), script


def test_ci_runs_the_readme_test_command():
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in README


def test_readme_results_tables_come_from_committed_files():
    from benchmarks import readme

    blocks = readme._BLOCK.findall(README)
    assert blocks, "README has no generated results tables"
    for name in blocks:
        assert (readme.RESULTS / f"{name}.json").is_file(), name
    assert readme.rewrite(README) == README, "run `python -m benchmarks.readme`"
