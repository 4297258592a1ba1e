"""Every sandbox hashes strings with the same seed, still isolated from the user's setup."""

from __future__ import annotations

from rllm_envs.sandbox import run

PROGRAM = (
    "import sys\n"
    "print(sorted({'b', 'a'}) == ['a', 'b'], list({'pear', 'fig', 'kiwi', 'plum'}))\n"
    "print(sys.flags.no_user_site, sys.flags.safe_path, sys.path[0])\n"
)


def test_set_order_is_the_same_in_every_sandbox(backend):
    """Before, each sandbox drew its own seed (-I ignores PYTHONHASHSEED), so a hidden test
    comparing a set's order could pass for the reference and fail for the same code."""
    outputs = {run(PROGRAM, backend=backend).stdout for _ in range(4)}
    assert len(outputs) == 1, outputs
    (output,) = outputs
    lines = output.splitlines()
    assert lines[1].split()[:2] == ["1", "True"]  # no user site, no script folder on sys.path
    assert lines[1].split()[2].endswith(".zip")
