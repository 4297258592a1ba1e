"""``pytest.raises(SystemExit)`` / ``assertRaises(SystemExit)`` in a probe (issue #30, att30 F4).

The probe's raises block let a ``BaseException`` that is not an ``Exception`` through, so the
reference's probe of a CLI test (``main([])`` must ``sys.exit(2)``) did not run to its end:
``host_partial``, and the reference patch itself earned 0 (with ``partial_verdicts="pay"``
the check after the block was never compared: exit code 1 instead of 2 earned 1.0). The block
now records ``SystemExit`` (and any other ``BaseException`` but the runner's own skip) like
any exception, and the test goes on.
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.repo import make_diff

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

BUG = "import sys\n\ndef main(argv):\n    if not argv:\n        return 0\n    return 1\n"
FIX = "import sys\n\ndef main(argv):\n    if not argv:\n        sys.exit(2)\n    return 1\n"
PUBLIC = (
    "import pytest\nfrom cli.app import main\n\ndef test_args():\n    assert main(['x']) == 1\n"
)
CODE = (
    "\n\ndef test_no_args():\n    with pytest.raises(SystemExit) as e:\n        main([])\n"
    "    assert e.value.code == 2\n"
)
PLAIN = "\n\ndef test_no_args():\n    with pytest.raises(SystemExit):\n        main([])\n"


def _cli(hidden: str) -> dict:
    return _task("cli", "app", BUG, FIX, PUBLIC, hidden)


@pytest.mark.parametrize("hidden", [CODE, PLAIN])
def test_the_reference_earns_1_and_the_bug_0(hidden):
    task = _cli(hidden)
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    reward, info = _run(task, "")
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info


def test_unittest_assert_raises_system_exit():
    hidden = (
        "\n\nimport unittest\n\nclass TestCli(unittest.TestCase):\n"
        "    def test_no_args(self):\n        with self.assertRaises(SystemExit):\n"
        "            main([])\n"
    )
    task = _cli(hidden)
    task["FAIL_TO_PASS"] = ["tests/test_app.py::TestCli::test_no_args"]
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info


@pytest.mark.parametrize("partial", ["withhold", "pay"])
def test_the_wrong_exit_code_earns_nothing(partial):
    task = _cli(CODE)
    base = task["files"]
    wrong = FIX.replace("sys.exit(2)", "sys.exit(1)")
    reply = _call("apply_patch", patch=make_diff(base, {**base, "cli/app.py": wrong}))
    reward, info = _run(task, reply, partial_verdicts=partial)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info
