"""Round 11 of the attacks on the code sandbox (issue #24, session 17, att24c), public API.

* F1: the executor read each test's stderr (and stdout, result) into bytes on its own heap,
  freed it unwiped, and forked the next test from that heap: a test scanned its heap below
  ``sbrk(0)`` (no ``/proc``) and found the previous test's stderr, 16 KiB exactly at 25 of 25
  boundaries on both backends, and a sieve that cannot pass one test pooled its work
  across tests (fraction reward 0 -> 0.625-0.75). The executor now sends a test's files from
  mappings of their own pages, unmapped before the next test is forked.
* F2: the judge's C++ compiler ran unrestricted (``#include "/proc/self/status"`` compiled);
  it now runs under the test processes' Landlock ruleset.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import landlock

pytestmark = pytest.mark.sandbox
needs_landlock = pytest.mark.skipif(landlock.abi() < 1, reason="this kernel has no Landlock")

# Each test prints the sha256 of every marked string found on its own heap (besides its own
# input), then writes its input, marked, to SINK (stderr or stdout) for the next test to find.
_HEAP_SCAN = r"""
import sys, ctypes, hashlib
data = sys.stdin.read().strip()
libc = ctypes.CDLL(None)
libc.sbrk.restype = ctypes.c_void_p
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
top = libc.sbrk(0) & ~4095
a = top - 4096
while libc.madvise(ctypes.c_void_p(a), 4096, 0) == 0:
    a -= 4096
blob = ctypes.string_at(a + 4096, top - a - 4096)
left, right = b"@@L" + b"K[", b"]K" + b"L@@"
found = set()
i = blob.find(left)
while i >= 0:
    j = blob.find(right, i)
    if j > 0:
        found.add(blob[i + len(left):j])
    i = blob.find(left, i + 1)
found.discard(data.encode())
print("\n".join(sorted(hashlib.sha256(f).hexdigest() for f in found)) or "none")
sys.SINK.write("@@LK[" + data + "]KL@@")
"""


def _carried(sink: str, size: int, tests: int, backend: str) -> list[int]:
    """Indices of tests whose input a later test found on its heap."""
    inputs = [os.urandom(size).hex() for _ in range(tests)]
    program = _HEAP_SCAN.replace("SINK", sink)
    result = judge(program, [TestCase(x + "\n", "x\n") for x in inputs], backend=backend)
    assert result.results and all(r.verdict == "WA" for r in result.results), result.verdicts
    seen = "\n".join(r.output for r in result.results)
    return [k for k, x in enumerate(inputs) if hashlib.sha256(x.encode()).hexdigest() in seen]


def test_a_test_finds_no_stderr_of_the_previous_one_in_its_memory(backend):
    assert _carried("stderr", 8192, 6, backend) == []


def test_a_wrong_answer_on_stdout_reaches_no_later_test(backend):
    assert _carried("stdout", 4096, 4, backend) == []


@needs_landlock
def test_the_judges_compiler_opens_nothing_under_proc(backend):
    source = '#include "/proc/self/status"\n#include <cstdio>\nint main(){puts("1");}\n'
    result = judge(source, [TestCase("\n", "1\n")], language="cpp", backend=backend)
    assert result.verdicts == ["CE"], result.results
    ok = judge(
        "#include <bits/stdc++.h>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b;}",
        [TestCase("1 2\n", "3\n")],
        language="cpp",
        backend=backend,
    )
    assert ok.verdicts == ["AC"], ok.results


# A test walks up the frames it was forked in and reports anything of an earlier test: a
# record (a dict with "sizes"), or the executor's resource totals of earlier tests' processes.
_FRAME_WALK = r"""
import resource, sys
found = []
f = sys._getframe()
while f is not None:
    for name, value in list(f.f_locals.items()):
        if isinstance(value, dict) and "sizes" in value:
            found.append(f"{f.f_code.co_name}.{name}")
        if isinstance(value, resource.struct_rusage):
            found.append(f"{f.f_code.co_name}.{name}")
    f = f.f_back
n = int(input())
sys.stderr.write("x" * (100 + n))
print(" ".join(found) or "none")
"""


def test_a_test_finds_nothing_of_the_previous_one_in_the_frames_it_was_forked_in(backend):
    """att24d F1: the executor's loop still held the previous test's record while forking the
    next, and its test method the totals of earlier tests' processes: a passing test sent 23
    bits a boundary (stderr length, trailing spaces), and pooled work paid fraction 0.44."""
    tests = [TestCase(f"{n}\n", "none\n") for n in (1, 2, 3, 4)]
    result = judge(_FRAME_WALK, tests, backend=backend)
    assert [r.output.strip() for r in result.results] == ["none"] * 4, result.results
