"""The judge with C++ submissions: compiled once in the sandbox, verdicts per test.

Skipped with the reason when ``g++`` is not installed (``apt-get install g++``).
"""

from __future__ import annotations

import os
import time

import pytest

from rllm_envs.code.judge import TestCase, extract_code, judge, score
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.sandbox.harness import CXX, LINKER, wall_cap

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CXX) and os.path.exists(LINKER)),
    reason=f"{CXX} or {LINKER} missing: install them with `apt-get install g++`",
)

BACKENDS = ["firejail", "bubblewrap"]

SUM = """
#include <bits/stdc++.h>
int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }
"""
TESTS = [TestCase(f"{i} {i * 7}\n", f"{i * 8}\n") for i in range(20)]


def _judge(code: str, tests=TESTS[:2], **kwargs):
    return judge(code, tests, language="cpp", **kwargs)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    from rllm_envs.sandbox import SandboxUnavailable, select_backend

    try:
        select_backend(request.param)
    except SandboxUnavailable as e:
        pytest.skip(str(e))
    return request.param


def test_reference_is_accepted_and_wrong_answer_is_not(backend):
    assert _judge(SUM, TESTS, backend=backend).all_passed
    assert _judge(SUM.replace("a + b", "a - b"), backend=backend).verdicts == ["AC", "WA"]


def test_compile_error_fails_every_test_with_the_message(backend):
    result = _judge("int main() { return nope; }", backend=backend)
    assert result.verdicts == ["CE", "CE"]
    error = result.results[0].error or ""
    assert "solution.cpp:1" in error and "nope" in error


@pytest.mark.parametrize(
    "code",
    [
        # Includes itself until g++ gives up: a message of thousands of "from solution.cpp:1".
        '#include "/proc/self/fd/3"\nint main(){}\n',
        # A long message full of quotes, backslashes and non-ASCII text.
        "int main() { return " + " + ".join(f'"\\\\ é{i}"' for i in range(400)) + "; }\n",
    ],
)
def test_a_long_compile_error_is_a_compile_error(backend, code):
    result = _judge(code, backend=backend)
    assert result.verdicts == ["CE", "CE"], [r.error for r in result.results]
    assert "g++ failed" in (result.results[0].error or "")  # the message (its end) is shown


def test_infinite_loop_is_a_timeout_within_the_limit(backend):
    start = time.monotonic()
    result = _judge(
        "int main() { volatile long x = 0; for (;;) ++x; }", backend=backend, time_limit=1
    )
    assert result.verdicts == ["TLE", "TLE"]
    # Two tests, plus the compile; time waiting for a CPU (other work) extends a test up to its cap.
    assert time.monotonic() - start < 2 * wall_cap(1) + 10


@pytest.mark.parametrize(
    "code",
    [
        "int main() { int* p = nullptr; *p = 1; return *p; }",
        "#include <cstdlib>\nint main() { std::abort(); }",
        "int main() { return 3; }",
    ],
    ids=["segfault", "abort", "exit-3"],
)
def test_crashes_are_runtime_errors(backend, code):
    result = _judge(code, backend=backend)
    assert result.verdicts == ["RE", "RE"]
    assert result.results[0].error


def test_huge_allocation(backend):
    # new/vector past the address-space limit throws std::bad_alloc: MLE. A malloc that
    # returns NULL is whatever the program makes of it (here an exit code: RE).
    vector = (
        "#include <vector>\n#include <cstdio>\n"
        'int main() { std::vector<char> v(3000000000ULL, 1); std::printf("%d", v[9]); }'
    )
    assert _judge(vector, backend=backend, memory_mb=256).verdicts == ["MLE", "MLE"]
    malloc = (
        "#include <cstdlib>\nint main() { return std::malloc(3000000000ULL) == nullptr ? 4 : 0; }"
    )
    assert _judge(malloc, backend=backend, memory_mb=256).verdicts == ["RE", "RE"]


def test_deep_recursion_has_a_big_stack():
    # A million frames of ~100 bytes: far past the default 8 MiB stack.
    deep = """
#include <cstdio>
int down(int n) {
  volatile char pad[64];
  pad[0] = (char)n;
  return n ? down(n - 1) + (pad[0] & 1) : 0;
}
int main() { int n; if (std::scanf("%d", &n) != 1) return 1; std::printf("%d\\n", down(n)); }
"""
    n = 1_000_000
    assert _judge(deep, [TestCase(f"{n}\n", f"{n // 2}\n")]).verdicts == ["AC"]


def test_output_flood_is_ole(backend):
    code = '#include <cstdio>\nint main() { for (;;) std::fputs("flood flood flood\\n", stdout); }'
    result = _judge(code, backend=backend, max_output_bytes=1 << 20)
    assert result.verdicts == ["OLE", "OLE"]


def test_stop_on_failure_skips_the_rest():
    result = _judge(SUM.replace("a + b", "a * b"), TESTS[:4], stop_on_failure=True)
    assert result.verdicts == ["AC", "WA", "SKIP", "SKIP"]  # 0 * 0 == 0 + 0


def test_expected_outputs_never_enter_the_sandbox():
    # The test process cannot read the supervisor's memory (which holds only digests); its
    # own memory is a fresh image (execve), so scanning it would only find the needle.
    code = r"""
#include <bits/stdc++.h>
#include <unistd.h>
bool scan(const std::string& pid, const std::string& needle) {
  std::ifstream maps("/proc/" + pid + "/maps"), mem("/proc/" + pid + "/mem", std::ios::binary);
  std::string line; bool found = false;
  while (std::getline(maps, line) && mem) {
    unsigned long lo, hi; char perms[5];
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[0] != 'r')
      continue;
    if (line.find("[vvar") != std::string::npos) continue;
    std::string buf(hi - lo, '\0');
    mem.clear(); mem.seekg(lo); mem.read(&buf[0], hi - lo);
    if (buf.find(needle) != std::string::npos) found = true;
  }
  return found;
}
int main() {
  std::string needle = std::string("hidden") + "-answer";
  std::cout << (scan(std::to_string(getppid()), needle) ? "found" : "nothing") << std::endl;
}
"""
    result = judge(code, [TestCase("", "the-hidden-answer-42\n")], language="cpp")
    assert result.verdicts == ["WA"] and result.results[0].output == "nothing\n"


def test_twenty_tests_compile_once():
    result = _judge(SUM, TESTS)
    assert result.all_passed and result.total == 20
    assert result.extra["compilations"] == 1 and result.extra["compile_time"] > 0
    assert judge("print(1)", TESTS[:1]).extra == {}  # Python is not compiled in this sense


def test_bad_arguments_raise():
    with pytest.raises(InvalidEnvConfig, match="stdin tests only"):
        judge(SUM, TESTS[:1], language="cpp", kind="functional", func_name="f")
    with pytest.raises(InvalidEnvConfig, match="language"):
        judge(SUM, TESTS[:1], language="rust")


def test_extract_code_prefers_cpp_blocks_when_asked():
    response = "```python\nprint(1)\n```\n```cpp\nint main(){}\n```\n```py\nprint(2)\n```"
    assert extract_code(response) == "print(2)"
    assert extract_code(response, "cpp") == "int main(){}"
    assert extract_code("```c++\nA\n```\n```cc\nB\n```\ntext", "cpp") == "B"
    assert extract_code("```\nonly\n```", "cpp") == "only"


def test_score_uses_the_task_language():
    task = {
        "kind": "stdin",
        "language": "cpp",
        "public_tests": [{"input": "2 3", "output": "5"}],
        "hidden_tests": [{"input": "1 1", "output": "2"}],
    }
    assert score(f"Here:\n```cpp\n{SUM}\n```", task) == 1.0
    assert score("```cpp\nint main(){}\n```", task) == 0.0
