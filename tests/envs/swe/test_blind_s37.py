"""Findings of the s36 blind round against SWE-v0 left open then, fixed in s37.

att36d F2 (high): a ``pytest.raises`` block stayed visible in the probe
(``with __rllm_observing__(kinds=k): window([1, 0], 0)``, the call's value dropped), unlike
any value check (``__rllm_observe__(window([1, 2], 1))``): a patch that raised the issue's
exception for exactly the calls whose value nothing observed, and kept the bug, paid 1.0 on
3/3 ``window`` tasks. Every check is now the same block around an observed call
(``with __rllm_observing__(k): __rllm_observe__(call)``); only the host's table says whether
``k`` expects a raise.
"""

from __future__ import annotations

import ast
import json

import pytest

from rllm_envs.swe.probe import probe_module, same_check

from .test_blind_s33 import _verdict

_TESTS = (
    "import unittest\n\nimport pytest\n\nfrom acme import window\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_a(self):\n"
    "        assert window([1, 2], 1) == [[1], [2]]\n"
    "        with pytest.raises(ValueError):\n            window([1, 0], 0)\n"
    "        self.assertRaises(ValueError, window, [4], -1)\n"
    "        self.assertEqual(window([3, 4, 5], 2), [[3, 4], [4, 5]])\n"
)
_BASE = (
    "def window(xs, size):\n"
    "    if size <= 0:\n        return []\n"
    "    return [xs[i:i + size] for i in range(len(xs) - size + 1)]\n"
)
_FIXED = _BASE.replace("return []", "raise ValueError('size must be positive')")
# The attacker's patch (att36d F2): reads the loaded test module's bytecode for the calls of
# ``window`` whose value the test drops (a ``POP_TOP`` after the call, as in a raises block),
# raises at those calls (counted in the order the test makes them) and keeps the bug elsewhere.
_WATCH = (
    "import dis\nimport sys\n\n_SITES = []\n_CALLS = [0]\n\n\n"
    "def _dropped_sites():\n"
    "    for m in list(sys.modules.values()):\n"
    "        path = getattr(m, '__file__', None)\n"
    "        if not (isinstance(path, str) and '/tests/' in path):\n"
    "            continue\n"
    "        for v in list(vars(m).values()):\n"
    "            if not (isinstance(v, type) and v.__module__ == m.__name__):\n"
    "                continue\n"
    "            for f in list(vars(v).values()):\n"
    "                code = getattr(f, '__code__', None)\n"
    "                if code is None or not code.co_name.startswith('test'):\n"
    "                    continue\n"
    "                ins = [i for i in dis.get_instructions(code)\n"
    "                       if i.opname not in ('PRECALL', 'CACHE', 'KW_NAMES', 'PUSH_NULL')]\n"
    "                for n, i in enumerate(ins):\n"
    "                    if i.opname == 'LOAD_GLOBAL' and i.argval == 'window':\n"
    "                        call = next(k for k in range(n, len(ins))\n"
    "                                    if ins[k].opname == 'CALL')\n"
    "                        _SITES.append(ins[call + 1].opname == 'POP_TOP')\n"
    "    return _SITES\n\n\n"
    + _BASE.replace(
        "    if size <= 0:\n",
        "    sites = _SITES or _dropped_sites()\n"
        "    _CALLS[0] += 1\n"
        "    if len(sites) >= _CALLS[0] and sites[_CALLS[0] - 1]:\n"
        "        raise ValueError('size')\n"
        "    if size <= 0:\n",
    )
)


def _blocks(text: str) -> list[str]:
    """Each check's block of a probe, with its index and the call it observes blanked."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.With) and ast.unparse(node).startswith("with __rllm_observing__("):
            shape = ast.parse(ast.unparse(node)).body[0]
            for inner in ast.walk(shape):
                if isinstance(inner, ast.Call) and ast.unparse(inner.func) == "__rllm_observe__":
                    inner.args = [ast.Name("CALL", ast.Load())]
                if isinstance(inner, ast.Constant) and type(inner.value) is int:
                    inner.value = 0
            found.append(ast.unparse(shape))
    return found


def test_a_raises_block_looks_like_a_value_check():
    probe = probe_module(_TESTS)
    assert probe.notes == ()
    shapes = _blocks(probe.text)
    assert len(shapes) == 4 and len(set(shapes)) == 1, shapes
    assert [kind for kind, _ in probe.blocks] == ["value", "raises", "raises", "value"]
    assert "ValueError" not in probe.text and "kinds" not in probe.text


def test_a_raise_in_a_value_checks_block_or_none_in_a_raises_block_is_not_the_reference():
    blocks = (("value", ""), ("raises", '{"classes": ["builtins.ValueError"], "message": null}'))
    raised = ["raised", ["builtins.ValueError", "builtins.Exception", "builtins.BaseException"]]
    key = raised + [["str", "size"]]
    other = ["raised", ["builtins.KeyError", "builtins.LookupError", *raised[1][1:]], None]
    assert same_check(["block", 1, key], ["block", 1, raised + [["str", "x"]]], (), blocks)
    assert not same_check(["block", 1, key], ["block", 1, other], (), blocks)
    assert not same_check(["block", 1, key], ["int", "0"], (), blocks)  # returned a value
    assert not same_check(["block", 1, key], ["block", 0, key], (), blocks)  # another block
    assert not same_check(["list", []], ["block", 0, key], (), blocks)  # raised, not a value


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_patch_raising_where_the_value_is_dropped_keeps_the_bug_and_earns_nothing():
    assert _verdict(_BASE, _FIXED, _BASE, _TESTS) == 0.0
    assert _verdict(_BASE, _FIXED, _FIXED, _TESTS) == 1.0
    honest = _BASE.replace(
        "if size <= 0:\n        return []", "if size < 1:\n        raise ValueError"
    )
    assert _verdict(_BASE, _FIXED, honest, _TESTS) == 1.0  # another message: not matched
    assert _verdict(_BASE, _FIXED, _WATCH, _TESTS) == 0.0
    assert _verdict(_BASE, _FIXED, _WATCH, _TESTS, pay=True) == 0.0


_HEAD37 = "import unittest\n\nimport pytest\n\nfrom acme import f\n\n\n"


def test_pytest_under_another_name_is_rewritten_as_pytest_is():
    """att37c F1: ``import pytest as pt`` left ``with pt.raises(ValueError): f(-3)`` in the
    probe, decided in the sandbox with trust ``host``: a patch raising for exactly the
    literal inputs of such blocks paid 1.0 on 10/10 functions, keeping the bug."""
    source = _HEAD37.replace("import pytest\n", "import pytest as pt\n") + (
        "def test_a():\n    with pt.raises(ValueError, match='neg'):\n        f(-3)\n"
        "    with pt.warns(UserWarning):\n        f(-4)\n"
    )
    probe = probe_module(source)
    assert probe.notes == () and "ValueError" not in probe.text and "neg" not in probe.text
    assert [kind for kind, _ in probe.blocks] == ["raises", "warns"]
    assert len(set(_blocks(probe.text))) == 1


@pytest.mark.parametrize(
    "body",
    [
        # att37c F1: a raises helper bound to another name.
        "raises = pytest.raises\n\n\ndef test_a():\n    with raises(ValueError):\n        f(-3)\n",
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        check = self.assertRaises\n        with check(ValueError):\n            f(-3)\n",
        # att37c F2: try / except idioms that check a raise (40/40 records paid 1.0 `host`).
        "def test_a():\n    try:\n        f(-3)\n        assert False, 'no'\n"
        "    except ValueError:\n        pass\n",
        "class T(unittest.TestCase):\n    def test_a(self):\n        try:\n            f(-3)\n"
        "        except ValueError:\n            pass\n"
        "        else:\n            self.fail('no')\n",
        "def test_a():\n    raised = False\n    try:\n        f(-3)\n    except ValueError:\n"
        "        raised = True\n    assert raised\n",
    ],
)
def test_a_raise_checked_where_the_probe_cannot_rewrite_it_is_noted(body):
    notes = probe_module(_HEAD37 + body).notes
    assert notes, body  # the verdict is `host_partial`: withheld by default


def test_a_handler_that_only_skips_decides_nothing():
    body = (
        "def test_a():\n    try:\n        import numpy\n    except ImportError:\n"
        "        pytest.skip('no numpy')\n    assert f(1) == 2\n"
    )
    assert probe_module(_HEAD37 + body).notes == ()


_SPLIT_BASE = (
    "def encode(s):\n    return s[::-1]\n\n\ndef decode(s):\n    return s\n\n\n"
    "def parse(s):\n    return int(s)\n\n\ndef describe(n):\n    return 'value ' + str(n)\n"
)
_SPLIT_FIXED = _SPLIT_BASE.replace(
    "def decode(s):\n    return s", "def decode(s):\n    return s[::-1]"
).replace(
    "    return int(s)",
    "    if s.startswith('-'):\n        raise ValueError('neg')\n    return int(s)",
)


def _split_tests(check: str) -> str:
    """The fail-to-pass test's expected value is the other test's input: it runs alone."""
    return (
        "import unittest\n\nimport pytest\n\nfrom acme import decode, describe, encode, parse\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_encode(self):\n        assert encode('good day') == 'yad doog'\n"
        f"        {check.replace('X', '1')}\n\n"
        "    def test_a(self):\n        assert decode('yad doog') == 'good day'\n"
        f"        {check.replace('X', '2')}\n"
    )


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize(
    "check",
    [
        "self.assertRaises(ValueError, parse, '-X')",
        "assert 'value' in describe(X)",
    ],
)
def test_a_fail_to_pass_test_run_alone_is_judged_by_its_own_checks(check):
    """att37c F3: run alone (on its module cut to it), a fail-to-pass test's host checks were
    numbered without the cut test's, so they named other entries of the reference's tables:
    the reference patch scored 0 on 20/20 records. The host maps the cut probe's indices."""
    tests = _split_tests(check)
    assert _verdict(_SPLIT_BASE, _SPLIT_FIXED, _SPLIT_FIXED, tests) == 1.0
    assert _verdict(_SPLIT_BASE, _SPLIT_FIXED, _SPLIT_BASE, tests) == 0.0


def test_an_index_maps_only_where_its_functions_checks_are_the_same():
    from rllm_envs.swe.probe import index_map, remap_indices

    head = "import pytest\n\nfrom acme import f\n\n\n"
    whole = probe_module(
        head + "def test_a():\n    assert 'x' in f(1)\n\n\n"
        "def test_b():\n    assert 'y' in f(2)\n    with pytest.raises(KeyError):\n        f(3)\n"
    )
    cut = probe_module(
        head + "pass\n\n\ndef test_b():\n    assert 'y' in f(2)\n"
        "    with pytest.raises(KeyError):\n        f(3)\n"
    )
    predicates, blocks = index_map(whole, cut)
    assert predicates == {0: 1} and blocks == {0: 1, 1: 2}
    record = [["block", 0, ["host", 0, ["str", "y"]]], ["block", 1, ["raised", [], None]]]
    assert remap_indices(record, predicates, blocks) == [
        ["block", 1, ["host", 1, ["str", "y"]]],
        ["block", 2, ["raised", [], None]],
    ]
    other = probe_module(head + "pass\n\n\ndef test_b():\n    assert 'z' in f(2)\n")
    assert index_map(whole, other)[0] == {0: -1}  # test_b's checks differ: no map


@pytest.mark.parametrize(
    "body",
    [
        # att37d F1: aliases of pytest, suppress, handlers that read what they caught,
        # except*, try in a helper or a nested function, a context manager of the module,
        # catch_warnings, a TestCase made in the test.
        "pt = pytest\n\n\ndef test_a():\n    with pt.raises(ValueError):\n        f(-3)\n",
        "def test_a():\n    with getattr(pytest, 'raises')(ValueError):\n        f(-3)\n",
        "import sys\n\n\ndef test_a():\n    with sys.modules['pytest'].raises(ValueError):\n"
        "        f(-3)\n",
        "def test_a():\n    with unittest.TestCase().assertRaises(ValueError):\n        f(-3)\n",
        "import contextlib\n\n\ndef test_a():\n    with contextlib.suppress(ValueError):\n"
        "        f(-3)\n        assert False\n",
        "def test_a():\n    try:\n        f(-3)\n    except ValueError as e:\n        print(e)\n"
        "    else:\n        assert False\n",
        "def test_a():\n    try:\n        f(-3)\n    except* ValueError:\n        pass\n"
        "    else:\n        assert False\n",
        "def check_raises(g, x):\n    try:\n        g(x)\n    except ValueError:\n"
        "        return True\n    return False\n\n\n"
        "def test_a():\n    assert check_raises(f, -3)\n",
        "class Raises:\n    def __enter__(self):\n        return self\n\n"
        "    def __exit__(self, kind, value, tb):\n        return kind is ValueError\n\n\n"
        "def test_a():\n    with Raises():\n        f(-3)\n        assert False\n",
        "import warnings\n\n\ndef test_a():\n    with warnings.catch_warnings(record=True) as w:\n"
        "        f(-3)\n    assert len(w) == 1\n",
    ],
)
def test_raise_checks_the_sandbox_would_decide_are_noted(body):
    assert probe_module(_HEAD37 + body).notes, body


def test_a_raises_body_assigning_its_call_looks_like_a_value_check():
    """att37d F2: ``y = f(-3)`` in a raises block was left as it was, unlike any value check."""
    probe = probe_module(
        _HEAD37 + "def test_a():\n    with pytest.raises(ValueError):\n        y = f(-3)\n"
        "    assert f(3) == 1\n"
    )
    assert probe.notes == ()
    assert len(set(_blocks(probe.text))) == 1


def test_every_embedded_case_test_imports_pytest_alike():
    """att37d F4: only the raise cases of the generated ``test_reported_*`` tests imported
    pytest inside the test: the probe marked them (48/48 ``window`` raise tasks paid)."""
    from rllm_envs.swe.tasks import _case_test

    raise_case = _case_test("test_r", "w = Window()\nw.shift(0)", "raises ValueError")
    value_case = _case_test("test_v", "w = Window()\nw.shift(1)", "[1]")
    assert raise_case.split("\n")[1:3] == value_case.split("\n")[1:3] == ["    import pytest", ""]
    head = "import pytest\n\nfrom acme import Window\n\n\n"
    shapes = {
        s for case in (raise_case, value_case) for s in _blocks(probe_module(head + case).text)
    }
    assert len(shapes) == 1


_WARN_BASE = "def old(x):\n    return x + 1\n"
_WARN_FIXED = (
    "import warnings\n\n\ndef old(x):\n"
    "    warnings.warn('old() is deprecated', DeprecationWarning)\n    return x + 1\n"
)


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize(
    "check",
    [
        "with pytest.warns(DeprecationWarning, match='deprecated'):\n            old(3)",
        "with self.assertWarns(DeprecationWarning):\n            old(3)",
        "with pytest.deprecated_call():\n            old(3)",
    ],
)
def test_a_warns_block_is_judged_on_the_host_and_looks_like_any_check(check):
    """att37d F3: a warns block was ``__rllm_observing__(warns=True)`` around an unobserved
    call; a patch warning at exactly those calls, the bug kept, paid 1.0 on 4/4 shapes."""
    tests = (
        "import unittest\n\nimport pytest\n\nfrom acme import old\n\n\n"
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        f"        assert old(1) == 2\n        {check}\n"
    )
    probe = probe_module(tests)
    assert probe.notes == () and len(set(_blocks(probe.text))) == 1
    assert _verdict(_WARN_BASE, _WARN_FIXED, _WARN_BASE, tests) == 0.0
    assert _verdict(_WARN_BASE, _WARN_FIXED, _WARN_FIXED, tests) == 1.0
    honest = _WARN_FIXED.replace("old() is deprecated", "deprecated: use new()")
    assert _verdict(_WARN_BASE, _WARN_FIXED, honest, tests) == 1.0
    wrong = _WARN_FIXED.replace("DeprecationWarning", "UserWarning")
    assert _verdict(_WARN_BASE, _WARN_FIXED, wrong, tests) == 0.0


@pytest.mark.parametrize(
    "check",
    ["assert g('8080') == 8080", "assert g('2.75') == 2.75", "assert g(1050) == '1050'"],
)
def test_a_value_given_as_its_other_spelling_in_the_same_check_is_not_secret(check):
    """att37d FN-1: an expected number whose text is the call's own input (or the reverse)
    was taken for a secret written elsewhere as an input: the reference fix withheld."""
    assert probe_module(f"from acme import g\n\n\ndef test_a():\n    {check}\n").notes == ()
    # Written in another test, it still tells (the echo note stays).
    other = "from acme import g\n\n\ndef test_a():\n    assert g('x') == 8080\n\n\n"
    assert probe_module(other + "def test_b():\n    assert g('8080') == 1\n").notes


def test_a_message_check_after_a_raises_block_goes_with_the_block():
    """att37d F2: ``as info`` then ``assert "neg" in str(info.value)``: only a raises block
    bound a name a later line read. Such checks now go with the block's rule on the host,
    and so does the name; other reads of it keep it (open: the block is told apart)."""
    body = (
        "def test_a():\n    with pytest.raises(ValueError) as info:\n        f(-3)\n"
        "    assert 'neg' in str(info.value)\n    assert f(3) == 1\n\n\n"
        "class T(unittest.TestCase):\n    def test_b(self):\n"
        "        with self.assertRaises(ValueError) as cm:\n            f(-4)\n"
        "        self.assertIn('neg', str(cm.exception))\n"
        "        self.assertEqual(str(cm.exception), 'neg value')\n"
    )
    probe = probe_module(_HEAD37 + body)
    text = probe.text.split("\n", 1)[1]  # past the header importing the observers
    assert probe.notes == () and "neg" not in text and " as " not in text
    assert len(set(_blocks(probe.text))) == 1
    rules = [json.loads(rule)["checks"] for kind, rule in probe.blocks if kind == "raises"]
    assert rules == [[["in", "neg"]], [["in", "neg"], ["eq", "neg value"]]]
    kept = probe_module(
        _HEAD37 + "def test_a():\n    with pytest.raises(KeyError) as e:\n        f(-3)\n"
        "    assert e.value.args == ('k',)\n"
    )
    assert " as e:" in kept.text and kept.notes  # told apart: noted (s38, att38a F2)


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_folded_message_check_pays_an_honest_message_and_not_a_wrong_one():
    base = "def parse(s):\n    return int(s)\n"
    fixed = base.replace(
        "    return",
        "    if s.startswith('-'):\n        raise ValueError('negative value')\n    return",
    )
    tests = (
        "import unittest\n\nfrom acme import parse\n\n\nclass T(unittest.TestCase):\n"
        "    def test_a(self):\n        with self.assertRaises(ValueError) as cm:\n"
        "            parse('-1')\n        self.assertIn('negative', str(cm.exception))\n"
    )
    assert _verdict(base, fixed, fixed, tests) == 1.0
    assert _verdict(base, fixed, base, tests) == 0.0
    assert _verdict(base, fixed, fixed.replace("negative value", "a negative number"), tests) == 1.0
    assert _verdict(base, fixed, fixed.replace("negative value", "below zero"), tests) == 0.0


@pytest.mark.parametrize(
    "body",
    [
        # att37f F1: a raises or warns block holding more than one call.
        "def test_a():\n    with pytest.raises(ValueError):\n        args = (-3,)\n"
        "        f(*args)\n",
        "def test_a():\n    with pytest.warns(UserWarning):\n        f(1)\n        f(2)\n",
        "def test_a():\n    with pytest.raises(ValueError):\n        if True:\n            f(-3)\n",
        # att37f F3: a bare `except:` checking a raise.
        "def test_a():\n    try:\n        f(-3)\n    except:\n        pass\n    else:\n"
        "        assert False\n",
    ],
)
def test_raise_checks_told_apart_by_their_shape_are_noted(body):
    assert probe_module(_HEAD37 + body).notes, body


def test_a_lambda_given_to_a_raises_call_is_its_call():
    """att37f F2: ``assertRaises(E, lambda: f(x))`` ran a ``<lambda>`` frame on the test's line:
    a patch raised there only. The lambda's body is the observed call now."""
    probe = probe_module(
        _HEAD37 + "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertRaises(ValueError, lambda: f(-3))\n"
        "        pytest.raises(ValueError, lambda: f(-4))\n        assert f(3) == 1\n"
    )
    assert probe.notes == () and "lambda" not in probe.text
    assert len(set(_blocks(probe.text))) == 1


@pytest.mark.parametrize(
    "statement",
    ["o.size = -1", "o['k'] = -1", "o.size: int = -1", "o += -10", "del o['k']", "a, b = f(-3)"],
)
def test_a_raises_body_that_is_not_a_call_keeps_its_statement_and_is_noted(statement):
    """att37h F1: an assignment to an attribute or a key was turned into its value, so the
    setter never ran and the unchanged code was paid (35/35 records); F2: `c += -10`,
    `del r[k]` stayed bare statements, told apart from every value check (10/10)."""
    probe = probe_module(
        _HEAD37 + f"def test_a():\n    o = f(0)\n    with pytest.raises(ValueError):\n"
        f"        {statement}\n"
    )
    assert probe.notes and statement.split(" ")[0].rstrip(",") in probe.text
