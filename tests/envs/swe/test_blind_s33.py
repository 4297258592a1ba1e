"""Findings of the s33 blind round against SWE-v0 (att33b) and the review that followed it.

H1 (found in the review of att33b's F2): a host check of a plain text ignored the ``not``
around it: ``assert not ("error" in out)``, ``if "error" in out: raise``,
``self.assertFalse("error" in out)`` became "``"error"`` is in the text", so the unchanged
code that printed ``error`` was paid 1.0 ``host`` and the fix scored 0; ``assertFalse(f())``
became a truthiness check that ``f()`` holds. F1: unittest's ``with self.assertRaises(E) as cm``
had no ``cm.exception`` in the probe (``assertWarns``: no ``cm.warning``): the probe stopped
there (withheld; in pay mode the checks after it were compared by no one, and any raise was
paid). F2 / F3 (honest): ``self.assertIn("#3", text)`` and ``text.startswith("item #")``
compared the whole text with the reference's, where pytest checks only the part.
"""

from __future__ import annotations

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import probe_module, same
from rllm_envs.swe.repo import make_diff

_HEAD = "import unittest\nfrom acme import render\n\n\n"


def _predicates(body: str) -> tuple[tuple[str, str], ...]:
    probe = probe_module(_HEAD + body)
    assert "'error'" not in probe.text and "'item #'" not in probe.text
    return probe.predicates


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("def test_a():\n    assert 'error' in render(3)\n", "in"),
        ("def test_a():\n    assert 'error' not in render(3)\n", "not in"),
        ("def test_a():\n    assert not ('error' in render(3))\n", "not in"),  # H1
        ("def test_a():\n    if 'error' in render(3):\n        raise AssertionError\n", "not in"),
        (
            "class T(unittest.TestCase):\n    def test_a(self):\n"
            "        self.assertFalse('error' in render(3))\n",
            "not in",
        ),
        (
            "class T(unittest.TestCase):\n    def test_a(self):\n"
            "        self.assertIn('error', render(3))\n",
            "in",  # F2
        ),
        (
            "class T(unittest.TestCase):\n    def test_a(self):\n"
            "        self.assertNotIn('error', render(3))\n",
            "not in",
        ),
        ("def test_a():\n    assert render(3).lower().startswith('item #')\n", "startswith"),
        ("def test_a():\n    assert not render(3).endswith('error')\n", "not endswith"),
        (
            "class T(unittest.TestCase):\n    def test_a(self):\n"
            "        self.assertFalse(render(3).startswith('error'))\n",
            "not startswith",
        ),
    ],
)
def test_a_host_check_of_a_text_is_the_one_the_test_asserts(body, kind):
    [(found, _)] = _predicates(body)
    assert found == kind


@pytest.mark.parametrize(
    "body",
    [
        # Its truth is not what the test asserts: no host check, the text is compared whole.
        "def test_a():\n    assert ('error' in render(3)) == False\n",
        "def test_a():\n    assert not ('error' in render(3) or 'bad' in render(3))\n",
    ],
)
def test_a_membership_inside_another_check_gets_no_host_check(body):
    assert _predicates(body) == ()


def test_assert_false_of_a_value_is_a_falsiness_check():
    """H1: ``assertFalse(f())`` was observed as "``f()`` is truthy"."""
    body = (
        "class T(unittest.TestCase):\n    def test_a(self):\n        self.assertFalse(render(3))\n"
    )
    assert _predicates(body) == (("falsy", ""),)


@pytest.mark.parametrize(
    ("kind", "literal", "text", "holds"),
    [
        ("startswith", "item #", "item #3 (ok)", True),
        ("startswith", "item #", "Item #3", False),
        ("endswith", ")", "item #3 (ok)", True),
        ("not startswith", "error", "ok: 3", True),
        ("not startswith", "error", "error: 3", False),
        ("not endswith", "3", "error: 3", False),
    ],
)
def test_the_host_runs_startswith_and_endswith(kind, literal, text, holds):
    predicates = ((kind, literal),)
    reference = ["host", 0, ["str", "a text the reference printed"]]
    assert same(reference, ["host", 0, ["str", text]], 0, None, predicates) is holds


def _verdict(base: str, fixed: str, submitted: str, tests: str, pay: bool = False) -> float:
    path = "tests/test_m.py"
    files = {"acme/__init__.py": base}
    reference = make_diff(files, {"acme/__init__.py": fixed})
    verdict = judge.verdict(
        files,
        make_diff(files, {"acme/__init__.py": submitted}),
        test_patch=make_diff(files, {**files, path: tests}),
        fail_to_pass=[f"{path}::T::test_a"],
        pass_to_pass=[],
        reference_patch=reference,
        warm=False,
    )
    assert verdict.reference_failing == ()
    return judge.reward_of(verdict, pay) if verdict.verdict_trust.startswith("host") else -1.0


_PARSE = "def parse(s):\n    return int(s)\n\n\ndef render(x):\n    return x\n"


def _raising(base: str, statement: str) -> str:
    """``base`` whose ``parse`` runs ``statement`` for a negative number."""
    return base.replace(
        "    return int(s)", f"    if s.startswith('-'):\n        {statement}\n    return int(s)"
    )


def _parse_test(body: str) -> str:
    """A unittest module whose ``test_a`` runs ``body`` (indented for the method)."""
    head = _HEAD.replace("import render", "import parse")
    return head + "class T(unittest.TestCase):\n    def test_a(self):\n" + body


@pytest.mark.slow
@pytest.mark.sandbox
def test_negated_text_checks_pay_the_fix_and_not_the_unchanged_code():
    """H1 end to end: the unchanged code's ``error`` text was paid 1.0 ``host``."""
    base = "def render(x):\n    return 'error: ' + str(x)\n"
    fixed = "def render(x):\n    return 'ok: ' + str(x)\n"
    honest = "def render(x):\n    return f'fine {x}'\n"
    tests = _HEAD + (
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertFalse('error' in render(3))\n"
        "        assert not render(3).startswith('error')\n"
    )
    assert _verdict(base, fixed, base, tests) == 0.0
    assert _verdict(base, fixed, honest, tests) == 1.0


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("pay", [False, True])
def test_assert_raises_context_exception_is_checked(pay):
    """F1: ``cm.exception`` stopped the probe; in pay mode any raise was paid."""
    base = _PARSE
    fixed = _raising(base, "raise ValueError('negative value')")
    honest = fixed.replace("'negative value'", "'a negative number'")
    anyraise = base.replace("    return int(s)", "    raise ValueError('x')")
    tests = _parse_test(
        "        with self.assertRaises(ValueError) as cm:\n            parse('-1')\n"
        "        self.assertIn('negative', str(cm.exception))\n"
    )
    assert _verdict(base, fixed, honest, tests, pay) == 1.0
    assert _verdict(base, fixed, anyraise, tests, pay) == 0.0
    assert _verdict(base, fixed, base, tests, pay) == 0.0


def test_a_class_that_names_itself_a_builtin_is_not_taken_for_it():
    """att33d F1: a repository's ``class ValueError(Exception)`` with ``__module__ =
    "builtins"`` was named as the real one (``pytest.raises(ValueError)``, ``assertRaises``,
    ``pytest.warns(DeprecationWarning)``, ``deprecated_call``: 1.0 ``host`` where pytest fails)."""
    import json

    from rllm_envs.swe.executor import _mro_names

    def forged(module: str, qualname: str, base: type = Exception) -> type:
        kind = type(qualname, (base,), {})
        kind.__module__, kind.__qualname__ = module, qualname
        return kind

    assert _mro_names(ValueError) == ["builtins.ValueError", "builtins.Exception"] + [
        "builtins.BaseException"
    ]
    assert _mro_names(json.JSONDecodeError)[0] == "json.decoder.JSONDecodeError"
    for kind in (
        forged("builtins", "ValueError"),
        forged("builtins", "DeprecationWarning", Warning),
        forged("json.decoder", "JSONDecodeError"),
    ):
        name = f"{kind.__module__}.{kind.__qualname__}"
        assert _mro_names(kind)[0] != name
    local = forged("acme.errors", "BadValue", ValueError)
    assert _mro_names(local)[:2] == ["acme.errors.BadValue", "builtins.ValueError"]


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_forged_builtin_exception_is_not_paid():
    base = _PARSE
    fixed = _raising(base, "raise ValueError('negative')")
    forged = (
        "class ValueError(Exception):\n    pass\n\n\nValueError.__module__ = 'builtins'\n\n\n"
        + fixed
    )
    tests = _parse_test("        with self.assertRaises(ValueError):\n            parse('-1')\n")
    assert _verdict(base, fixed, fixed.replace("'negative'", "'below zero'"), tests) == 1.0
    assert _verdict(base, fixed, forged, tests) == 0.0


def _raised(*names: str) -> list:
    return ["raised", [*names, "builtins.Exception", "builtins.BaseException"], ["str", "bad"]]


_SUB = _raised("acme.errors.BadValue", "builtins.ValueError")
_VALUE = _raised("builtins.ValueError")
_TYPE = _raised("builtins.TypeError")


_SHADOW = _raised("acme.errors.TimeoutError", "builtins.TimeoutError", "builtins.OSError")
_TIMEOUT = _raised("builtins.TimeoutError", "builtins.OSError")


@pytest.mark.parametrize(
    ("named", "reference", "raised", "paid"),
    [
        (["builtins.ValueError"], _SUB, _VALUE, True),  # att33d F2: the class the test names
        (["builtins.ValueError"], _SUB, _SUB, True),
        (["builtins.ValueError"], _VALUE, _raised("acme.Other", "builtins.ValueError"), True),
        (["builtins.ValueError"], _SUB, _TYPE, False),
        (["builtins.TypeError", "builtins.ValueError"], _TYPE, _VALUE, True),  # F3: a tuple
        (["builtins.TypeError", "builtins.ValueError"], _TYPE, _raised("builtins.KeyError"), False),
        # One class deriving from several: only its last base's chain is intact.
        (
            ["builtins.TypeError"],
            _TYPE,
            _raised("acme.Omni", "builtins.TypeError", "builtins.ValueError"),
            False,
        ),
        (
            ["builtins.ValueError"],
            _VALUE,
            _raised("builtins.ValueError (not what it names)"),
            False,
        ),
        # Under a star import (`?`): the builtin only where the reference derives from it and
        # from no other class of its name (att33h F1: a repository's TimeoutError).
        (["builtins.ValueError?"], _SUB, _VALUE, True),
        (["builtins.TimeoutError?"], _SHADOW, _TIMEOUT, False),
        (["builtins.TypeError?", "builtins.ValueError?"], _TYPE, _VALUE, False),
    ],
)
def test_a_raised_class_is_judged_by_the_classes_the_test_named(named, reference, raised, paid):
    import json

    from rllm_envs.swe.probe import same_check

    blocks = (("raises", json.dumps({"classes": named, "message": None})),)
    assert same_check(["block", 0, reference], ["block", 0, raised], (), blocks) is paid


@pytest.mark.parametrize(
    ("head", "named"),
    [
        ("", '["builtins.TypeError", "builtins.ValueError"]'),
        # att33h F1 / F2: a name the test binds is not the builtin; a dotted one is unknown.
        ("from acme.errors import ValueError\n", '["builtins.TypeError"]'),
        ("from acme import *\n", '["builtins.TypeError?", "builtins.ValueError?"]'),
    ],
)
def test_the_probe_keeps_the_builtin_classes_named_on_the_host(head, named):
    import json

    body = (
        "import pytest\n\n\ndef test_a():\n    with pytest.raises((TypeError, errors.Bad)):\n"
        "        render(-1)\n\n\ndef test_b(self):\n"
        "    self.assertRaises((TypeError, ValueError), render, -1)\n"
    )
    probe = probe_module(head + _HEAD + body)
    kinds = {
        json.dumps(json.loads(rule)["classes"]) for kind, rule in probe.blocks if kind == "raises"
    }
    first = named.replace(', "builtins.ValueError?"', "").replace(', "builtins.ValueError"', "")
    assert kinds == {first, named}  # test_a's errors.Bad is not known: only TypeError
    assert "TypeError" not in probe.text and "ValueError" not in probe.text.replace(head, "")


def test_a_class_whose_name_is_not_a_plain_text_is_marked():
    """att33h F3: ``__module__`` an object whose ``__str__`` returns a ``str`` subclass that
    answers ``==`` and ``partition`` as it likes was named ``builtins.ValueError``."""
    from rllm_envs.swe.executor import _mro_names

    class Sly(str):
        def __eq__(self, other: object) -> bool:
            return False

        __hash__ = str.__hash__

    class Module:
        def __str__(self) -> str:
            return Sly("builtins")

    kind = type("ValueError", (Exception,), {})
    kind.__module__ = Module()  # type: ignore[assignment]
    assert _mro_names(kind)[0] == "? (not a name)"
    kind.__module__ = Sly("builtins")
    assert _mro_names(kind)[0] == "? (not a name)"


@pytest.mark.slow
@pytest.mark.sandbox
def test_an_honest_fix_raising_the_named_base_class_is_paid():
    """att33d F2 end to end: the reference raises ``BadValue(ValueError)``, the test names
    ``ValueError``; an honest fix raising ``ValueError`` scored 0 with trust ``host``."""
    base = "class BadValue(ValueError):\n    pass\n\n\n" + _PARSE
    fixed = _raising(base, "raise BadValue('negative')")
    honest = fixed.replace("raise BadValue('negative')", "raise ValueError('below zero')")
    wrong = fixed.replace("raise BadValue('negative')", "raise TypeError('negative')")
    tests = _parse_test("        with self.assertRaises(ValueError):\n            parse('-1')\n")
    assert _verdict(base, fixed, honest, tests) == 1.0
    assert _verdict(base, fixed, wrong, tests) == 0.0
    assert _verdict(base, fixed, base, tests) == 0.0


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_builtin_name_the_test_rebinds_is_not_the_builtin():
    """att33h F1 end to end: the repository's ``TimeoutError`` (deriving from the builtin),
    imported by the test; the unchanged code raising the builtin was paid 1.0 ``host``."""
    base = (
        "import builtins\n\n\nclass TimeoutError(builtins.TimeoutError):\n    pass\n\n\n"
        + _raising(_PARSE, "raise builtins.TimeoutError('slow')")
    )
    fixed = base.replace("raise builtins.TimeoutError('slow')", "raise TimeoutError('slow')")
    tests = _parse_test(
        "        with self.assertRaises(TimeoutError):\n            parse('-1')\n"
    ).replace("from acme import parse", "from acme import TimeoutError, parse")
    assert _verdict(base, fixed, fixed, tests) == 1.0
    assert _verdict(base, fixed, base, tests) == 0.0


def test_a_builtin_subclass_is_observed_by_its_stored_value():
    """att33l: a repository ``class F(float)`` whose ``__float__`` said 0.5 was observed as
    0.5: ``assert clamp01(1.7) <= 1``, ``> 0`` and ``== approx(12.566)`` held on the host for
    the unchanged code (1.0 ``host``) where pytest compares the stored 1.7."""
    from rllm_envs.swe.executor import observed

    class F(float):
        def __float__(self) -> float:
            return 0.5

    class I(int):  # noqa: E742
        def __int__(self) -> int:
            return 1

        __index__ = __int__

    class S(str):
        def __str__(self) -> str:
            return "lie"

    class L(list):
        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter([9])

    class D(dict):
        def items(self):  # type: ignore[no-untyped-def]
            return [("x", 9)]

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(["x"])

    assert observed(F(1.7))[2] == ["float", "1.7"]
    assert observed(I(-1))[2] == ["int", "-1"]
    assert observed(S("true"))[2] == ["str", "true"]
    # A container whose own methods decide none of its checks is observed as its stored
    # value itself (s40): its __iter__ / items are not read either way.
    assert observed(L([1, 2])) == ["list", [["int", "1"], ["int", "2"]]]
    assert observed(D(a=1)) == ["dict", [[["str", "a"], ["int", "1"]]]]


@pytest.mark.parametrize(
    ("body", "noted"),
    [
        ("def test_a():\n    assert any(v > 5 for v in render(3))\n", True),  # att33n F3
        ("def test_a():\n    assert not all(v > 5 for v in render(3))\n", True),
        ("def test_a():\n    assert all(v > 5 for v in render(3))\n", False),
        ("def test_a():\n    assert not any(v > 5 for v in render(3))\n", False),
    ],
)
def test_an_any_is_not_checked_as_an_all(body, noted):
    """att33n F3: ``any(v > 5 for v in vals())`` became a host check of every element (an
    ``all``): the reference failed its own test with trust ``host``. Now withheld."""
    from rllm_envs.swe.probe import NOTE_ANY

    assert (NOTE_ANY in probe_module(_HEAD + body).notes) is noted


@pytest.mark.parametrize(
    ("got", "holds"),
    [
        (["list", [["float", "0.995"], ["float", "1.99"]]], True),  # pytest passes it
        (["tuple", [["float", "1.0"], ["int", "2"]]], True),
        (["list", [["float", "1.0175"], ["float", "2.035"]]], False),  # pytest fails it
        (["list", [["float", "1.0"]]], False),
        (["float", "1.0"], False),
    ],
)
def test_a_tolerance_over_a_literal_list_is_checked_against_the_literal(got, holds):
    """att33n F1: ``f() == approx([1.0, 2.0], abs=0.02)`` (and ``max(abs(a - b) for a, b in
    zip(f(), [..])) < 0.02``) compared each element with the reference's, a band twice as
    wide around another centre: a wrong fix paid 1.0, a right one 0."""
    for check in (
        "render(3) == pytest.approx([1.0, 2.0], abs=0.02)",
        "max(abs(a - b) for a, b in zip(render(3), [1.0, 2.0])) <= 0.02",
    ):
        body = f"import pytest\n\n\ndef test_a():\n    assert {check}\n"
        probe = probe_module(_HEAD + body)
        [(kind, rule)] = [p for p in probe.predicates if p[0] == "near"]
        assert "1.0, 2.0" not in probe.text and probe.notes == ()
        reference = ["host", 0, ["list", [["float", "1.009"], ["float", "2.018"]]]]
        assert same(reference, ["host", 0, got], 0, None, ((kind, rule),)) is holds
