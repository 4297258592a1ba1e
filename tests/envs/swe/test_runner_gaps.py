"""Honest fixes the sandboxed runner used to fail or withhold (issue #30, session 10).

pytest's built-in fixtures ``tmp_path``, ``tmpdir``, ``request`` (``addfinalizer``,
``getfixturevalue``), ``caplog``, ``capfd``, ``recwarn`` and the ``pytest.warns`` block were
missing (the reference's tests did not run, so every verdict was an error), and a test that
checks only that the code does not raise observed nothing and was ``host_partial``, withheld.
Each task here: the fix earns 1 with trust ``host``, the bug and a cheat of the same shape
earn 0.
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.probe import probe_report

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

SAVE = _task(
    "store",
    "save",
    "def save(path, text):\n    path.write_text(text.upper())\n",
    "def save(path, text):\n    path.write_text(text)\n",
    "from store.save import save\n\ndef test_import():\n    assert callable(save)\n",
    "\n\ndef test_roundtrip(tmp_path):\n    target = tmp_path / 'a.txt'\n"
    "    save(target, 'hello')\n    assert target.read_text() == 'hello'\n\n"
    "def test_factory(tmp_path_factory):\n    target = tmp_path_factory.mktemp('d') / 'b.txt'\n"
    "    save(target, 'x')\n    assert target.read_text() == 'x'\n\n"
    "def test_folders(tmp_path):\n    import json, shutil\n"
    "    (tmp_path / 'a' / 'b').mkdir(parents=True)\n    save(tmp_path / 'a' / 'one.txt', 'y')\n"
    "    shutil.copy(tmp_path / 'a' / 'one.txt', tmp_path / 'a' / 'two.txt')\n"
    "    with open(tmp_path / 'a' / 'b' / 'c.json', 'w') as f:\n        json.dump([1], f)\n"
    "    assert sorted(p.name for p in tmp_path.rglob('*.txt')) == ['one.txt', 'two.txt']\n"
    "    assert (tmp_path / 'a' / 'two.txt').read_text() == 'y'\n"
    "    names = sorted(p.name for p in (tmp_path / 'a').iterdir())\n"
    "    assert names == ['b', 'one.txt', 'two.txt']\n",
)

LEGACY = _task(
    "store",
    "save",
    "def save(path, text):\n    path.write_text(text.upper())\n",
    "def save(path, text):\n    path.write_text(text)\n",
    "from store.save import save\n\ndef test_import():\n    assert callable(save)\n",
    "\n\ndef test_tmpdir(tmpdir):\n    target = tmpdir.join('sub', 'a.txt')\n"
    "    tmpdir.mkdir('sub')\n    save(target, 'hello')\n    assert target.read() == 'hello'\n"
    "    assert target.check(file=1) and [p.basename for p in tmpdir.listdir()] == ['sub']\n"
    "    tmpdir.ensure('deep', 'b.txt').write('x')\n"
    "    assert (tmpdir / 'deep' / 'b.txt').read() == 'x'\n",
)

FINAL = _task(
    "store",
    "save",
    "def save(path, text):\n    path.write_text(text.upper())\n",
    "def save(path, text):\n    path.write_text(text)\n",
    "from store.save import save\n\ndef test_import():\n    assert callable(save)\n",
    "\nimport pytest\n\nDONE = []\n\n@pytest.fixture\ndef target(request, tmp_path):\n"
    "    request.addfinalizer(lambda: DONE.append(request.node.name))\n"
    "    return request.getfixturevalue('tmp_path') / 'f.txt'\n\n"
    "def test_request(target):\n    save(target, 'ok')\n    assert target.read_text() == 'ok'\n",
)

LOGS = _task(
    "logs",
    "check",
    "import logging\n\ndef check(x):\n    return x\n",
    "import logging\n\ndef check(x):\n    if x < 0:\n"
    "        logging.getLogger('logs').warning('negative value %s', x)\n    return x\n",
    "from logs.check import check\n\ndef test_plain():\n    assert check(1) == 1\n",
    "\n\ndef test_logged(caplog):\n    check(-2)\n    assert 'negative value -2' in caplog.text\n"
    "    assert caplog.record_tuples == [('logs', 30, 'negative value -2')]\n",
)

PRINTS = _task(
    "talk",
    "say",
    "def say(x):\n    print(x, end='')\n",
    "def say(x):\n    print(x)\n",
    "from talk.say import say\n\ndef test_callable():\n    assert callable(say)\n",
    "\n\ndef test_printed(capfd):\n    say('hi')\n    out, err = capfd.readouterr()\n"
    "    assert out == 'hi\\n' and err == ''\n",
)

WARNS = _task(
    "old",
    "api",
    "def legacy():\n    return 1\n",
    "import warnings\n\ndef legacy():\n"
    "    warnings.warn('legacy() is deprecated', DeprecationWarning)\n    return 1\n",
    "from old.api import legacy\n\ndef test_value():\n    assert legacy() == 1\n",
    "\nimport pytest\n\n"
    "def test_warns():\n    with pytest.warns(DeprecationWarning, match='deprecated'):\n"
    "        assert legacy() == 1\n\n"
    "def test_recwarn(recwarn):\n    legacy()\n    assert len(recwarn) == 1\n"
    "    assert recwarn.pop(DeprecationWarning).message.args == ('legacy() is deprecated',)\n",
)

PARSE = _task(
    "csvish",
    "parse",
    "def parse(text):\n    head, *rest = text.split('\\n')\n"
    "    return [r.split(',') for r in rest if r] if head else 1 // 0\n",
    "def parse(text):\n    if not text:\n        return []\n    head, *rest = text.split('\\n')\n"
    "    return [r.split(',') for r in rest if r]\n",
    "from csvish.parse import parse\n\n"
    "def test_rows():\n    assert parse('h\\n1,2') == [['1', '2']]\n",
    "\n\ndef test_empty_does_not_raise():\n    parse('')\n",
)


@pytest.mark.parametrize(
    "task",
    [SAVE, LEGACY, FINAL, LOGS, PRINTS, WARNS, PARSE],
    ids=["tmp_path", "tmpdir", "request", "caplog", "capfd", "warns", "no-raise"],
)
def test_the_fix_earns_1_on_the_host_and_the_bug_0(task):
    # Old code: the fixtures were missing (the reference did not pass: an error, 0), and the
    # test that only calls parse('') observed nothing (host_partial, withheld: 0).
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    reward, info = _run(task)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info


def test_a_warning_of_another_class_or_none_earns_0():
    other = _call(
        "replace",
        path="old/api.py",
        old="    return 1",
        new="    __import__('warnings').warn('legacy() is deprecated', UserWarning)\n    return 1",
    )
    assert _run(WARNS, other)[0] == 0.0


def test_the_expected_warning_class_and_pattern_are_not_in_the_probe():
    hidden = WARNS["test_patch"].split("+import pytest\n", 1)[1]
    source = "import pytest\n" + "".join(
        line[1:] + "\n" for line in hidden.splitlines() if line.startswith("+")
    )
    text, notes = probe_report(source)
    assert not notes, notes
    assert "'deprecated'" not in text
    assert "warns=" not in text  # a block like any other check's (s37 att37d F3)


@pytest.mark.parametrize(
    "ending",
    [
        "raise SystemExit(0)",
        "__import__('os')._exit(0)",
        "raise KeyboardInterrupt",
        "__import__('pytest').skip('fine')",
        "__import__('pytest').xfail('fine')",
    ],
)
def test_a_must_not_raise_test_is_not_passed_by_ending_the_test_another_way(ending):
    cheat = _call(
        "replace",
        path="csvish/parse.py",
        old="def parse(text):\n",
        new=f"def parse(text):\n    if not text:\n        {ending}\n",
    )
    reward, info = _run(PARSE, cheat)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info
