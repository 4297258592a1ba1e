"""The judge: LiveCodeBench comparison rules, verdicts, one sandbox per submission."""

from __future__ import annotations

import time

import pytest

from rllm_envs.code.judge import (
    POOL_SIZE_ENV,
    JudgeResult,
    TestCase,
    close_pools,
    extract_code,
    judge,
    score,
    warm_up,
)
from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.sandbox.harness import canonical_stdout, canonical_value, stdout_matches, wall_cap

# ------------------------------------------------------------------ comparison rules


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        ("6\n", "6"),
        ("  6  \n\n", "6"),
        ("1 2 3\r\n", "1 2 3\n"),
        ("1  2\t3", "1 2 3"),  # token-wise numbers
        ("1.50 2", "1.5 2.000"),
        ("1e3", "1000"),
        ("-0", "0"),
        ("0.1", "0.10"),
        ("YES\nNO", "YES\nNO\n"),
        ("a b \n c", "a b\nc"),  # lines are stripped
        ("00000101\n", "00000101"),  # zero-padded: itself
        ("0012  0034 1.50", "0012 0034 1.5"),
    ],
)
def test_outputs_that_match(got, expected):
    assert canonical_stdout(got) == canonical_stdout(expected)
    assert stdout_matches(got, expected)


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        ("6", "7"),
        ("yes", "YES"),
        ("a  b", "a b"),  # not numbers: exact after strip
        ("1 2", "1\n2"),  # line structure matters
        ("0.333333", "0.3333333"),  # decimals compare exactly, no tolerance
        ("12345678901234567890123456789012345", "12345678901234567890123456789012346"),
        ("nan", "NaN"),
        ("", "0"),
        ("6\n6", "6"),
        # Judges read ASCII: Decimal's "1_0" and other scripts' digits are not numbers, and
        # str.split()'s Unicode separators (U+001F, U+00A0) do not split tokens (s20 att24f).
        ("1_0", "10"),
        ("\u0661\u0660", "10"),
        ("1\x1f2", "1 2"),
        ("1\xa02", "1 2"),
        ("\x1c6\x1d", "6"),
        # att33c: a whole number with leading zeros is a fixed-width text (a binary string,
        # a zero-padded code): `101` passed for `00000101`, `12 34` for `0012 0034`.
        ("101", "00000101"),
        ("12 34", "0012 0034"),
        ("5 7.5", "05 7.5"),
        ("07", "7"),
        ("-7", "-007"),
        ("0", "00"),
    ],
)
def test_outputs_that_differ(got, expected):
    assert canonical_stdout(got) != canonical_stdout(expected)
    assert not stdout_matches(got, expected)


def test_functional_values_compare_as_json():
    assert canonical_value((1, [2, (3,)])) == canonical_value([1, [2, [3]]])
    assert canonical_value(1.0) == canonical_value(1) == canonical_value(True) != canonical_value(3)
    assert canonical_value({"b": 1, "a": [1.5]}) == canonical_value({"a": [1.5], "b": 1})
    assert canonical_value(0.1 + 0.2) != canonical_value(0.3)
    with pytest.raises(TypeError):
        canonical_value({1, 2})
    with pytest.raises(TypeError):
        canonical_value({1: 2})


# ------------------------------------------------------------------------- extraction


def test_extract_code_takes_the_last_python_block():
    text = "```python\nprint(1)\n```\nbetter:\n```py\nprint(2)\n```\n```text\n3\n```"
    assert extract_code(text) == "print(2)"
    assert extract_code("```\nprint(3)\n```") == "print(3)"
    assert extract_code("```cpp\nint main(){}\n```") == "int main(){}"
    assert extract_code("Cut off:\n```python\nprint(4)\nprint(5)") == "print(4)\nprint(5)"
    assert extract_code("<think>```python\nprint(0)\n```</think>none") is None
    assert extract_code("no code here") is None
    assert extract_code("```python\n\n```") is None


# -------------------------------------------------------------------------- verdicts


MODES = {
    "warm": {},
    "cold": {"warm": False},
    "isolated": {"isolate_tests": True},
}


@pytest.mark.parametrize("mode", MODES)
def test_one_sandbox_gives_a_verdict_per_test(mode):
    code = (
        "import sys, time\n"
        "n = int(input())\n"
        "if n == 1: print(2)\n"
        "elif n == 2: print(5)\n"
        "elif n == 3: time.sleep(30)\n"
        "elif n == 4: raise ValueError('boom')\n"
        "elif n == 5: x = bytearray(1 << 33)\n"
        "elif n == 6: print('z' * (1 << 22))\n"
    )
    tests = [TestCase(f"{n}\n", f"{2 * n}\n") for n in range(1, 7)]
    start = time.monotonic()
    result = judge(
        code, tests, time_limit=1.0, memory_mb=256, max_output_bytes=1 << 20, **MODES[mode]
    )
    # Time waiting for a CPU (other work on the machine) extends the TLE test up to its cap.
    assert time.monotonic() - start < wall_cap(1.0) + 10
    assert isinstance(result, JudgeResult)
    assert result.verdicts == ["AC", "WA", "TLE", "RE", "MLE", "OLE"]
    assert "ValueError: boom" in result.results[3].error
    assert result.passed == 1 and result.total == 6 and not result.all_passed
    assert result.fraction == pytest.approx(1 / 6)


def test_a_background_process_does_not_stall_the_test():
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\nprint(int(input()) + 1)\n"
    start = time.monotonic()
    result = judge(code, [TestCase("1", "2"), TestCase("5", "6")], time_limit=5)
    assert result.verdicts == ["AC", "AC"]
    assert time.monotonic() - start < 5


def test_stop_on_failure_skips_the_rest():
    tests = [TestCase("1", "1"), TestCase("2", "3"), TestCase("3", "3")]
    result = judge("print(input())", tests, stop_on_failure=True)
    assert result.verdicts == ["AC", "WA", "SKIP"]


def test_compile_error_fails_every_test():
    result = judge("def f(:\n", [TestCase("1", "1"), TestCase("2", "2")])
    assert result.verdicts == ["CE", "CE"] and "SyntaxError" in result.results[0].error


def test_functional_tests_call_the_solution():
    code = (
        "class Solution:\n"
        "    def add(self, a: int, b: List[int]) -> Tuple[int, int]:\n"
        "        return (a, sum(b))\n"
    )
    tests = [TestCase("1\n[2, 3]", "[1, 5]"), TestCase("2\n[]", "[2, 1]")]
    assert judge(code, tests, kind="functional", func_name="add").verdicts == ["AC", "WA"]
    plain = "def add(a, b):\n    return [a, sum(b)]\n"
    assert judge(plain, tests, kind="functional", func_name="add").verdicts == ["AC", "WA"]
    nothing = judge("x = 1", tests[:1], kind="functional", func_name="add")
    assert nothing.verdicts == ["RE"] and "defines no" in nothing.results[0].error


def test_lenient_functional_accepts_apps_wrapping():
    tests = [TestCase("3", "[9]")]
    code = "def sq(x):\n    return x * x\n"
    assert judge(code, tests, kind="functional", func_name="sq").verdicts == ["WA"]
    lenient = judge(code, tests, kind="functional", func_name="sq", lenient_functional=True)
    assert lenient.verdicts == ["AC"]


def test_assert_tests():
    code = "def inc(x):\n    return x + 1\n"
    tests = [TestCase("assert inc(1) == 2"), TestCase("assert inc(1) == 3"), TestCase("inc()")]
    assert judge(code, tests, kind="assert").verdicts == ["AC", "WA", "RE"]


def test_expected_outputs_never_enter_the_sandbox():
    # A submission that searches its whole memory for the answer cannot find it.
    code = (
        "import gc\n"
        "found = [o for o in gc.get_objects() if isinstance(o, dict)\n"
        "         for v in o.values() if isinstance(v, str) and 'hidden' + '-answer' in v]\n"
        "print(found[0] if found else 'nothing')\n"
    )
    result = judge(code, [TestCase("", "the-hidden-answer-42\n")])
    assert result.verdicts == ["WA"] and result.results[0].output == "nothing\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_test_cannot_change_the_next_one(mode):
    code = (
        "import builtins, sys\n"
        "print(int(input()) + getattr(builtins, 'counter', 0))\n"
        "builtins.counter = 100\n"
    )
    tests = [TestCase("1", "1"), TestCase("2", "2")]
    # Test 2 fails where test 1 ran, so it is run again in a fresh test process.
    assert judge(code, tests, **MODES[mode]).verdicts == ["AC", "AC"]


def test_failures_are_not_caused_by_earlier_tests():
    # Leftovers of earlier tests (memory held in a module, a closed stdout, a changed
    # module) would fail later tests in a shared process; the rerun judges them alone.
    code = (
        "import os, sys, builtins\n"
        "hoard = getattr(builtins, 'hoard', [])\n"
        "builtins.hoard = hoard\n"
        "import math\n"
        "print(math.gcd(int(input()), 6))\n"
        "sys.stdout.flush()\n"
        "hoard.append(bytearray(100 << 20))\n"
        "math.gcd = None\n"
        "os.close(1)\n"
    )
    tests = [TestCase(f"{n}\n", f"{__import__('math').gcd(n, 6)}\n") for n in range(1, 6)]
    assert judge(code, tests, memory_mb=256).verdicts == ["AC"] * 5


def test_programs_that_work_in_a_thread_or_fork():
    # Competitive programmers raise the recursion limit and run main() in a big-stack thread.
    threaded = (
        "import sys, threading\n"
        "sys.setrecursionlimit(1 << 16)\n"
        "threading.stack_size(1 << 26)\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "def main():\n    n = int(input())\n"
        "    __import__('time').sleep(0.2)\n    print(depth(n))\n"
        "threading.Thread(target=main).start()\n"
    )
    tests = [TestCase(f"{n}\n", f"{n}\n") for n in (10, 5000, 20000)]
    assert judge(threaded, tests).verdicts == ["AC"] * 3
    # A forked child that runs off the end of the program must not take the next test.
    forking = (
        "import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n    print(int(input()) * 2)\n"
    )
    tests = [TestCase(f"{n}\n", f"{2 * n}\n") for n in range(4)]
    assert judge(forking, tests).verdicts == ["AC"] * 4
    exits = "import os, sys\nprint(int(input()) + 1)\nsys.stdout.flush()\nos._exit(0)\n"
    assert judge(exits, [TestCase("1", "2"), TestCase("2", "3")]).verdicts == ["AC", "AC"]


def test_pools_can_be_warmed_switched_off_and_closed(monkeypatch):
    assert warm_up(timeout=60)
    tests = [TestCase("1", "2"), TestCase("2", "3")]
    assert judge("print(int(input()) + 1)", tests).verdicts == ["AC", "AC"]
    close_pools()
    monkeypatch.setenv(POOL_SIZE_ENV, "0")
    assert not warm_up()
    assert judge("print(int(input()) + 1)", tests).verdicts == ["AC", "AC"]
    monkeypatch.setenv(POOL_SIZE_ENV, "many")
    with pytest.raises(InvalidEnvConfig, match=POOL_SIZE_ENV):
        judge("print(1)", tests)


def test_bad_arguments_raise():
    with pytest.raises(InvalidEnvConfig):
        judge("", [TestCase("1", "1")], kind="interactive")
    with pytest.raises(InvalidEnvConfig):
        judge("", [TestCase("1", "1")], kind="functional")
    with pytest.raises(InvalidDataset):
        judge("", [TestCase("1", "not json")], kind="functional", func_name="f")
    assert judge("print(1)", []).verdicts == []


def test_score_is_one_for_the_reference_and_zero_for_garbage():
    task = {
        "kind": "stdin",
        "public_tests": [{"input": "2\n", "output": "4\n"}],
        "hidden_tests": [{"input": "5\n", "output": "25\n"}],
    }
    assert score("```python\nn = int(input())\nprint(n * n)\n```", task) == 1.0
    assert score("```python\nprint(4)\n```", task) == 0.0
    # fraction: the hidden tests only (print(4) passes the shown example alone).
    assert score("```python\nprint(4)\n```", task, reward_mode="fraction") == 0.0
    assert score("```python\nprint(25)\n```", task, reward_mode="fraction") == 1.0
    assert score("no code", task) == 0.0
    assert score(None, task) == 0.0


def test_a_submission_cannot_forge_verdicts():
    # Forged report lines written to every descriptor the test process has, and to the
    # supervisor's stdout through /proc, then the supervisor killed: no test is accepted.
    fake = (
        "".join(
            repr({"index": i, "verdict": "AC", "time": 0.0, "output": "", "error": None}) + "\n"
            for i in range(3)
        )
        + repr({"done": True})
        + "\n"
    )
    code = (
        "import os, signal\n"
        f"fake = {fake!r}.encode()\n"
        "for fd in range(3, 256):\n"
        "    try:\n        os.write(fd, fake)\n    except OSError:\n        pass\n"
        "for path in (f'/proc/{os.getppid()}/fd/1', '/proc/1/fd/1'):\n"
        "    try:\n"
        "        with open(path, 'w') as f:\n            f.write(fake.decode())\n"
        "    except OSError:\n        pass\n"
        "try:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\n"
    )
    tests = [TestCase(str(i), "x") for i in range(3)]
    for mode in MODES.values():
        result = judge(code, tests, **mode)
        assert "AC" not in result.verdicts, (mode, result.verdicts)


def test_standard_streams_of_a_test_behave_like_files():
    # A test's stdin is its own in-memory file: seekable, read from the start each test.
    code = (
        "import sys\n"
        "data = sys.stdin.read()\n"
        "sys.stdin.seek(0)\n"
        "print(sys.stdin.read() == data, data.split()[0], file=sys.__stdout__)\n"
        "print('to stderr', file=sys.stderr)\n"
    )
    tests = [TestCase(f"{i}\n", f"True {i}\n") for i in range(3)]
    assert judge(code, tests).verdicts == ["AC"] * 3
