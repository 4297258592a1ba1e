"""Layers point down only: envs <- agents <- adapters <- benchmarks.

An env module never imports (or names in a ``"module:name"`` string) the agent, adapter or
benchmark layers; agents never reach adapters or benchmarks; adapters never reach benchmarks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("rllm_envs", "rllm_agents", "rllm_adapters", "benchmarks")
# A string that is a dotted module path, optionally with ":name" (an entry point).
_PATH = re.compile(r"^([A-Za-z_]\w*)(\.\w+)*(:\w+)?$")


def _references(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _PATH.match(node.value)
            and ("." in node.value or ":" in node.value)
        ):
            found.append((node.lineno, node.value))
    return found


def _violations(layer: str) -> list[str]:
    above = LAYERS[LAYERS.index(layer) + 1 :]
    bad = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for lineno, ref in _references(path):
            top = ref.partition(":")[0].split(".")[0]
            if top in above:
                bad.append(f"{path.relative_to(ROOT)}:{lineno} -> {ref}")
    return bad


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_layer_points_down_only(layer: str) -> None:
    assert _violations(layer) == []


def test_the_check_sees_an_upward_reference(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        'import rllm_adapters.x\nAGENT = "rllm_agents.agent:MathAgent"\nDOC = "a b"\n'
    )
    refs = [ref for _, ref in _references(module)]
    assert refs == ["rllm_adapters.x", "rllm_agents.agent:MathAgent"]
