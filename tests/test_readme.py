"""README (the front door) and the docs/ pages document what exists, the quick start stays the
two-command form, and every performance figure is generated from a committed results file."""

from __future__ import annotations

import re
from pathlib import Path

import rllm_envs
from benchmarks import readme as generator

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: README and every docs page, as one text.
DOCS = generator.docs_text()


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 300
    for path in generator.pages()[1:]:
        assert f"]({path.relative_to(ROOT).as_posix()})" in README, f"README does not link {path}"


def test_readme_lists_every_registered_env():
    ids = [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()]
    missing = [env_id for env_id in ids if f"`{env_id}`" not in README]
    assert not missing, f"README's environment table lacks {missing}"
    assert generator.render_envs() in README, "run `python -m benchmarks.readme`"


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

    blocks = readme._BLOCK.findall(DOCS)
    assert blocks, "README and docs have no generated results tables"
    opened = re.findall(r"<!-- results:([\w.-]+) -->", DOCS)
    assert opened == blocks, "a `<!-- results:NAME -->` marker has no matching closing marker"
    for name in blocks:
        assert (readme.RESULTS / f"{name}.json").is_file(), f"benchmarks/results/{name}.json"
    assert readme.main(["--check"]) == 0, "run `python -m benchmarks.readme`"


def test_each_results_block_is_exactly_what_its_file_renders():
    from benchmarks import readme

    for match in readme._BLOCK.finditer(DOCS):
        name = match.group("name")
        expected = f"<!-- results:{name} -->\n{readme.render(name)}\n<!-- /results:{name} -->"
        assert match.group(0) == expected, (
            f"the `{name}` block differs from benchmarks/results/{name}.json: edited by hand? "
            "Run `python -m benchmarks.readme`."
        )


def test_the_check_catches_a_hand_edit_and_a_missing_file():
    import pytest

    from benchmarks import readme

    match = next(readme._BLOCK.finditer(DOCS))
    block = match.group(0)
    digit = re.search(r"\d", block[block.index("-->") :])
    at = block.index("-->") + digit.start()
    edited = block[:at] + str((int(block[at]) + 1) % 10) + block[at + 1 :]
    text = DOCS.replace(block, edited, 1)
    assert readme.rewrite(text) != text
    missing = "no_such_results_file"
    with pytest.raises(FileNotFoundError):
        readme.rewrite(f"<!-- results:{missing} -->\nx\n<!-- /results:{missing} -->")


#: A performance figure: a ratio (``3x``, ``0.78x``, ``3.1-4.3x``; not a ``4x4`` map) or a time
#: or rate (``41 µs``, ``1,970 steps/s``).
_FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s*[-–]\s*\d[\d,]*(?:\.\d+)?)?\s?"
    r"(?:x(?!\w)|(?:ns|µs|us|ms)\b|\w+/s\b)"
)


def _figures_outside_blocks(section: str) -> list[str]:
    from benchmarks import readme

    return [m.group(0) for m in _FIGURE.finditer(readme._BLOCK.sub("", section))]


def test_figure_rule():
    assert _figures_outside_blocks("ratio 3.1-4.3x, 10x, 0.78x and 1,970 steps/s in 41 µs") == [
        "3.1-4.3x",
        "10x",
        "0.78x",
        "1,970 steps/s",
        "41 µs",
    ]
    assert _figures_outside_blocks("a 4x4 map, `0x1f`, 2 CPUs, 16 writers, section 1.2") == []


def test_performance_page_has_no_figures_outside_generated_blocks():
    section = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    found = _figures_outside_blocks(section)
    assert not found, (
        f"figures {found} in docs/performance.md outside a `<!-- results:NAME -->` "
        "block: put them in a committed results file and generate the table"
    )
