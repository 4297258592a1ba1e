"""SWE-v0 (att31h): an expected value written elsewhere in the hidden tests as an input.

The probe drops each check's expected side, but the same value may be another check's input
(an encode/decode round trip): the sandbox reads it in the probe's source or code objects, and
a patch that returns it passes without the fix (trust ``host``, 1.0). Such a module is now
incomplete (``NOTE_ECHO``), so its verdicts are ``host_partial`` and withheld by default. A
value the test gives the code under test before the check is not readable "elsewhere": it is
an input of this check, and stays complete.
"""

from __future__ import annotations

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import NOTE_ECHO, probe_module
from rllm_envs.swe.repo import make_diff

_HEAD = "import pytest\nfrom acme.codec import encode, decode, Cart, clamp\n\n"

#: Modules where an expected value is readable elsewhere in the probe.
ECHOED = {
    "two tests": (
        "def test_encode():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n\n"
        "def test_decode():\n    assert decode('aGVsbG8gd29ybGQ=') == 'hello world'\n"
    ),
    "later in the same test": (
        "def test_both():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n"
        "    assert decode('aGVsbG8gd29ybGQ=') == 'hello world'\n"
    ),
    "one assert": (
        "def test_both():\n"
        "    assert encode('hello') == 'aGVsbG8=' and decode('aGVsbG8=') == 'hello'\n"
    ),
    "a unittest method": (
        "import unittest\n\nclass T(unittest.TestCase):\n"
        "    def test_encode(self):\n"
        "        self.assertEqual(encode('hi there'), 'aGkgdGhlcmU=')\n\n"
        "    def test_decode(self):\n        self.assertEqual(decode('aGkgdGhlcmU='), 'hi there')\n"
    ),
    "a parametrize table": (
        "@pytest.mark.parametrize('text, want', [('hello', 'aGVsbG8='), ('abc', 'YWJj')])\n"
        "def test_encode(text, want):\n    assert encode(text) == want\n\n"
        "def test_decode():\n    assert decode('YWJj') == 'abc'\n"
    ),
    "a literal table": (
        "CASES = [('hello', 'aGVsbG8='), ('abc', 'YWJj')]\n\n"
        "def test_encode():\n    for text, want in CASES:\n        assert encode(text) == want\n\n"
        "def test_decode():\n    assert decode('aGVsbG8=') == 'hello'\n"
    ),
    "a match= pattern": (
        "def test_error():\n    with pytest.raises(ValueError, match='bad padding'):\n"
        "        decode('x')\n\n"
        "def test_other():\n    assert encode('bad padding') != ''\n"
    ),
    "a number": (
        "def test_to_f():\n    assert clamp(9000, 0, 4242) == 4242.5\n\n"
        "def test_from_f():\n    assert clamp(4242.5, 0, 10) == 10\n"
    ),
    "inside an expected list": (
        "def test_split():\n    assert encode('a b') == ['YQ==', 'Yg==']\n\n"
        "def test_join():\n    assert decode('Yg==') == 'b'\n"
    ),
}

#: Modules whose expected values the tests give the code under test themselves.
GIVEN = {
    "an argument of the same call": (
        "def test_fits():\n    assert encode('hello', keep=True) == 'hello'\n\n"
        "def test_other():\n    assert decode('hello') is not None\n"
    ),
    "an earlier call in the same test": (
        "def test_cart():\n    cart = Cart()\n    cart.add('apple')\n    cart.add('apple')\n"
        "    assert cart.items == {'apple': 2}\n\n"
        "def test_pear():\n    cart = Cart()\n    cart.add('pear', 3)\n    cart.remove('pear')\n"
        "    assert cart.items == {'pear': 2}\n"
    ),
    "a fixture": (
        "@pytest.fixture\ndef cart():\n    c = Cart()\n    c.add('apple')\n    return c\n\n"
        "def test_cart(cart):\n    assert cart.items == {'apple': 1}\n"
    ),
    "a setUp method": (
        "import unittest\n\nclass T(unittest.TestCase):\n"
        "    def setUp(self):\n        self.cart = Cart()\n        self.cart.add('apple')\n\n"
        "    def test_items(self):\n        self.assertEqual(self.cart.items, {'apple': 1})\n"
    ),
    "a small number": (
        "def test_len():\n    assert len(encode('abc')) == 4\n\n"
        "def test_clamp():\n    assert clamp(4, 0, 3) == 3\n"
    ),
    "a one-letter text": (
        "def test_first():\n    assert encode('abc')[0] == 'Y'\n\n"
        "def test_other():\n    assert decode('Y') is None\n"
    ),
    "a row's own input": (
        "@pytest.mark.parametrize('text, want', [('same', 'same'), ('abc', 'YWJj')])\n"
        "def test_encode(text, want):\n    assert encode(text, True) == want\n"
    ),
}


@pytest.mark.parametrize("body", ECHOED.values(), ids=ECHOED.keys())
def test_an_expected_value_written_elsewhere_makes_the_probe_incomplete(body):
    assert NOTE_ECHO in probe_module(_HEAD + body).notes


@pytest.mark.parametrize("body", GIVEN.values(), ids=GIVEN.keys())
def test_a_value_given_to_the_code_under_test_stays_complete(body):
    assert probe_module(_HEAD + body).notes == ()


def test_a_value_written_in_another_test_module_is_readable_too():
    """Every module the judged tests load is in the sandbox's memory: the check spans them.
    A conftest fixture gives the values it passes to the code under test only to the tests
    that request it (att32a F3); a value it merely returns is readable (att32c F1)."""
    first = _HEAD + "def test_encode():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n"
    second = _HEAD + "def test_decode():\n    assert decode('aGVsbG8gd29ybGQ=') is not None\n"
    assert probe_module(first).notes == () and probe_module(second).notes == ()
    files = {"tests/test_a.py": first, "tests/test_b.py": second}
    assert judge.probe_notes(files) == (NOTE_ECHO,)
    fixture = (
        "import pytest\nfrom acme.codec import Cart\n\n\n@pytest.fixture\ndef text():\n"
        "    cart = Cart()\n    cart.add('aGVsbG8gd29ybGQ=')\n    return cart\n"
    )
    assert judge.probe_notes({"tests/test_a.py": first, "tests/conftest.py": fixture}) == (
        NOTE_ECHO,
    )
    requesting = first.replace("def test_encode():", "def test_encode(text):")
    assert judge.probe_notes({"tests/test_a.py": requesting, "tests/conftest.py": fixture}) == ()
    chained = fixture + "\n\n@pytest.fixture\ndef wrapped(text):\n    return text\n"
    through = first.replace("def test_encode():", "def test_encode(wrapped):")
    assert judge.probe_notes({"tests/test_a.py": through, "tests/conftest.py": chained}) == ()
    autouse = fixture.replace("@pytest.fixture", "@pytest.fixture(autouse=True)")
    assert judge.probe_notes({"tests/test_a.py": first, "tests/conftest.py": autouse}) == ()
    returned = "import pytest\n\n\n@pytest.fixture\ndef text():\n    return 'aGVsbG8gd29ybGQ='\n"
    assert judge.probe_notes({"tests/test_a.py": requesting, "tests/conftest.py": returned}) == (
        NOTE_ECHO,
    )


#: att32a: the value written another way, or given to another test only.
ECHOED_TOO = {
    "bytes for text (F1)": (
        "def test_encode():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n\n"
        "def test_decode():\n    assert decode(b'aGVsbG8gd29ybGQ=') == b'hello world'\n"
    ),
    "a number as text": (
        "def test_to_c():\n    assert clamp(9000, 0, 4242) == 1050\n\n"
        "def test_parse():\n    assert decode('1050') is not None\n"
    ),
    "another test's fixture (F2)": (
        "@pytest.fixture\ndef token():\n    return 'aGVsbG8gd29ybGQ='\n\n"
        "def test_decode(token):\n    assert len(decode(token)) == 11\n\n"
        "def test_encode():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n"
    ),
    "a fixture's unpassed value (att32c F1)": (
        "@pytest.fixture\ndef words():\n"
        "    return {'raw': 'hello world', 'shown': 'Hello World'}\n\n"
        "def test_title(words):\n    assert encode(words['raw']) == 'Hello World'\n"
    ),
    "an autouse fixture's attribute": (
        "@pytest.fixture(autouse=True)\ndef banner():\n    Cart.text = 'Hello World'\n\n"
        "def test_title():\n    assert encode('hello world') == 'Hello World'\n"
    ),
    "a setUp attribute never passed": (
        "import unittest\n\nclass T(unittest.TestCase):\n"
        "    def setUp(self):\n        self.label = 'Hello World'\n\n"
        "    def test_title(self):\n        assert encode('hello world') == 'Hello World'\n"
    ),
    "an unused local earlier in the test": (
        "def test_title():\n    label = 'Hello World'\n"
        "    assert encode('hello world') == 'Hello World'\n"
    ),
    "a whole number as a float (att32c F2)": (
        "def test_parse():\n    assert decode('1,050') == 1050\n\n"
        "def test_text():\n    assert encode(1050.0) == '1,050'\n"
    ),
    "another class's setUp": (
        "import unittest\n\nclass A(unittest.TestCase):\n"
        "    def setUp(self):\n        self.token = 'aGVsbG8gd29ybGQ='\n\n"
        "    def test_decode(self):\n        assert decode(self.token) is not None\n\n"
        "class B(unittest.TestCase):\n"
        "    def test_encode(self):\n        assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n"
    ),
}


@pytest.mark.parametrize("body", ECHOED_TOO.values(), ids=ECHOED_TOO.keys())
def test_a_value_written_another_way_or_given_elsewhere_is_readable(body):
    assert NOTE_ECHO in probe_module(_HEAD + body).notes


def test_only_the_fail_to_pass_tests_expected_values_are_secret():
    """A pass-to-pass test passes on the unchanged code: reading its expected values gains a
    submission nothing, so an echo of one does not withhold the verdict; an echo of a
    fail-to-pass test's does, in any module the judged tests load."""
    module = _HEAD + (
        "def test_norm():\n    assert encode('  Hello ') == 'hello there'\n\n"
        "def test_slug():\n    assert decode('hello there') == 'hello-there'\n"
    )
    files = {"tests/test_a.py": module}
    assert judge.probe_notes(files) == (NOTE_ECHO,)  # every test secret
    assert judge.probe_notes(files, ["tests/test_a.py::test_slug"]) == ()
    assert judge.probe_notes(files, ["tests/test_a.py::test_norm"]) == (NOTE_ECHO,)
    parametrized = ["tests/test_a.py::test_norm[a-b]"]
    assert judge.probe_notes(files, parametrized) == (NOTE_ECHO,)


_BUGGY = (
    "import base64\n\n\n"
    "def encode(s):\n    return base64.b64encode(s[::-1].encode()).decode()\n\n\n"
    "def decode(t):\n    return base64.b64decode(t.encode()).decode()\n"
)
_FIXED = _BUGGY.replace("s[::-1].encode()", "s.encode()")
#: Reads the round trip's other literal in the probe's code objects (att31h F1).
_GAME = _BUGGY.replace(
    "def encode(s):\n",
    "def encode(s):\n"
    "    import sys\n"
    "    for name, mod in list(sys.modules.items()):\n"
    "        if name.rpartition('.')[2].startswith('test'):\n"
    "            for key, fn in list(vars(mod).items()):\n"
    "                code = getattr(fn, '__code__', None) if key.startswith('test') else None\n"
    "                for c in getattr(code, 'co_consts', ()):\n"
    "                    try:\n"
    "                        if isinstance(c, str) and decode(c) == s:\n"
    "                            return c\n"
    "                    except Exception:\n"
    "                        pass\n",
)


def _codec_verdict(code: str, tests: str, pass_to_pass: bool = True) -> judge.Verdict:
    path = "tests/test_codec.py"
    base = {"acme/__init__.py": "", "acme/codec.py": _BUGGY}
    return judge.verdict(
        base,
        make_diff(base, {**base, "acme/codec.py": code}),
        test_patch=make_diff(base, {**base, path: tests}),
        fail_to_pass=[f"{path}::test_encode"],
        pass_to_pass=[f"{path}::test_decode"] if pass_to_pass else [],
        reference_patch=make_diff(base, {**base, "acme/codec.py": _FIXED}),
        warm=False,
    )


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_round_trip_patch_reads_nothing_when_the_tests_run_apart():
    """att31h F1 end to end: the round trip's other literal is in a pass-to-pass test, so
    the fail-to-pass test runs alone in a sandbox of its own (its module holds no other
    test): the patch finds nothing to read and fails, trust stays ``host``, the fix pays."""
    tests = (
        "from acme.codec import encode, decode\n\n\n"
        "def test_encode():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n\n\n"
        "def test_decode():\n    assert decode('aGVsbG8gd29ybGQ=') == 'hello world'\n"
    )
    gamed = _codec_verdict(_GAME, tests)
    assert gamed.verdict_trust == "host" and gamed.fail_to_pass == 0.0
    # (Since s39 a hidden test's code is refused to the patch: its read is tampering.)
    assert gamed.tampering and judge.reward_of(gamed, False) == 0.0
    fixed = _codec_verdict(_FIXED, tests)
    assert fixed.verdict_trust == "host" and judge.reward_of(fixed, False) == 1.0


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_round_trip_inside_the_fail_to_pass_test_is_not_paid():
    """Where running apart cannot help (the other literal is in the same test), the patch
    reads it and passes, and the verdict says so: host_partial, nothing paid."""
    tests = (
        "from acme.codec import encode, decode\n\n\n"
        "def test_encode():\n    assert encode('hello world') == 'aGVsbG8gd29ybGQ='\n"
        "    assert decode('aGVsbG8gd29ybGQ=') == 'hello world'\n"
    )
    gamed = _codec_verdict(_GAME, tests, pass_to_pass=False)
    # Its read of the test's code is refused (s39: a hidden test's code is the runner's) ...
    assert gamed.tampering and gamed.fail_to_pass == 0.0
    assert gamed.verdict_trust == "host_partial" and NOTE_ECHO in gamed.weakened
    assert judge.reward_of(gamed, False) == 0.0  # ... and it would not be paid anyway


def test_only_tests_keeps_the_named_tests_and_what_they_use():
    module = (
        "import pytest\n\n\n@pytest.fixture\ndef token():\n    return 'x'\n\n\n"
        "def helper():\n    return 1\n\n\n"
        "@pytest.mark.parametrize('a', [1, 2])\ndef test_one(a):\n    assert a\n\n\n"
        "def test_two():\n    assert decode('aGk=') == 'hi'\n\n\n"
        "def test_three():\n    assert 1\n\n\ntest_alias = test_three\n\n\n"
        "class TestC:\n    def test_m(self):\n        assert 'secret-input'\n\n"
        "    def test_n(self):\n        assert 2\n"
    )
    files = {"tests/test_m.py": module, "tests/test_other.py": "def test_z():\n    pass\n"}
    out = judge.only_tests(
        files, ["tests/test_m.py::test_one[1]", "tests/test_m.py::TestC::test_n"]
    )
    text = out["tests/test_m.py"]
    compile(text, "m", "exec")
    for kept in ("def token", "def helper", "def test_one", "def test_three", "def test_n"):
        assert kept in text, kept
    assert "aGk=" not in text and "secret-input" not in text and "def test_two" not in text
    assert out["tests/test_other.py"] == files["tests/test_other.py"]
