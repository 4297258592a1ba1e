"""Log records and caught warnings observed whole (issue #30, att30 F3).

``assert caplog.records``, ``with pytest.warns(...) as rec: ...; assert rec`` and
``assert recwarn.pop(DeprecationWarning)`` observed the records' ``__dict__``: a timestamp,
a thread id, a line number. The reference patch itself scored 0 (its two runs differ), and
the same fix one line lower scored 0 on ``recwarn.pop``. A record is now observed by its
stable fields (logger, level, message, exception type; a warning's class and message).
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.repo import make_diff

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

BUG = "import logging, warnings\n\ndef check(x):\n    return x\n"
FIX = (
    "import logging, warnings\n\ndef check(x):\n    if x < 0:\n"
    "        logging.getLogger('logs').warning('negative value %s', x)\n"
    "        warnings.warn('negative', DeprecationWarning)\n    return x\n"
)
PUBLIC = (
    "import pytest\nfrom logs.check import check\n\ndef test_plain():\n    assert check(1) == 1\n"
)
HIDDEN = [
    "\n\ndef test_logged(caplog):\n    check(-2)\n    assert caplog.records\n",
    "\n\ndef test_warned(recwarn):\n    check(-2)\n    assert recwarn.pop(DeprecationWarning)\n",
    "\n\ndef test_warned():\n    with pytest.warns(DeprecationWarning) as rec:\n"
    "        check(-2)\n    assert rec\n",
]


@pytest.mark.parametrize("hidden", HIDDEN)
def test_the_reference_and_the_same_fix_one_line_lower_earn_1(hidden):
    task = _task("logs", "check", BUG, FIX, PUBLIC, hidden)
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    base = task["files"]
    lower = FIX.replace("def check", "\n\ndef check")
    reply = _call("apply_patch", patch=make_diff(base, {**base, "logs/check.py": lower}))
    reward, info = _run(task, reply)
    assert reward == 1.0 and info["verdict_trust"] == "host", info


def test_another_message_is_judged_by_what_the_check_asks():
    # ``assert caplog.records`` asks only for a record: its truth is decided on the host
    # (s11 N1), so another message passes, as under pytest; no record still fails.
    task = _task("logs", "check", BUG, FIX, PUBLIC, HIDDEN[0])
    base = task["files"]
    other = FIX.replace("'negative value %s'", "'bad value %s'")
    reply = _call("apply_patch", patch=make_diff(base, {**base, "logs/check.py": other}))
    reward, info = _run(task, reply)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    reward, info = _run(task)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info
    # A check of the message itself still compares it.
    task = _task(
        "logs",
        "check",
        BUG,
        FIX,
        PUBLIC,
        "\n\ndef test_logged(caplog):\n    check(-2)\n"
        "    assert caplog.records[0].getMessage() == 'negative value -2'\n",
    )
    reward, info = _run(task, reply)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info
