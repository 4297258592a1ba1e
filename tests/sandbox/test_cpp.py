"""C++ through ``rllm_envs.sandbox.run``: compiled in the sandbox, then escape attempts.

Skipped with the reason when ``g++`` is not installed (``apt-get install g++``).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import pytest

import rllm_envs
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.sandbox import Limits, Status, run
from rllm_envs.sandbox.harness import COMPILE_ERROR_PREFIX, CPP_PCH_DIR, CXX, LINKER
from tests.sandbox.conftest import assert_fork_bomb_contained, sandbox_processes

PROJECT = Path(rllm_envs.__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CXX) and os.path.exists(LINKER)),
    reason=f"{CXX} or {LINKER} missing: install them with `apt-get install g++`",
)

ECHO = """
#include <bits/stdc++.h>
int main() { std::string s; long long t = 0, x;
  std::getline(std::cin, s); while (std::cin >> x) t += x;
  std::cout << "hello " << s << " " << t << std::endl; }
"""

# Wall seconds for a run that compiles: g++ alone may take over 10 s on a loaded machine.
LOADED = 60


@pytest.fixture(autouse=True)
def host_is_unaffected():
    before = os.listdir("/proc/self/fd")
    yield
    deadline = time.monotonic() + 5
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes() == []
    assert len(os.listdir("/proc/self/fd")) <= len(before)


def test_hello_world_reads_stdin(backend):
    result = run(ECHO, language="cpp", stdin="world\n1 2 3\n", backend=backend, time_limit=LOADED)
    assert result.status is Status.OK, result.stderr
    assert result.stdout == "hello world 6\n"


def test_compile_error_is_reported_in_stderr(backend):
    result = run(
        "int main() { return undefined_name; }", language="cpp", backend=backend, time_limit=LOADED
    )
    assert result.status is Status.RUNTIME_ERROR and result.exit_code == 1
    assert result.stderr.startswith(COMPILE_ERROR_PREFIX)
    assert "solution.cpp:1" in result.stderr and "undefined_name" in result.stderr


def test_garbage_and_hostile_sources_give_a_result(backend):
    for code in ["\x00\udcff garbage", "#include </dev/zero>\n", "x" * 200_000]:
        result = run(code, language="cpp", backend=backend, time_limit=20)
        assert result.status in (Status.RUNTIME_ERROR, Status.TIMEOUT), result


def test_unknown_language_raises():
    with pytest.raises(InvalidEnvConfig, match="language"):
        run("int main(){}", language="c")


def test_no_network_to_a_host_listener(backend, host_listener):
    port = host_listener.port
    code = f"""
#include <arpa/inet.h>
#include <cstdio>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
int main() {{
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) {{ std::puts("blocked socket"); return 0; }}
  sockaddr_in a{{}}; a.sin_family = AF_INET; a.sin_port = htons({port});
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (sockaddr*)&a, sizeof a) != 0) {{ std::puts("blocked connect"); return 0; }}
  write(s, "escaped", 7);
  std::puts("CONNECTED");
}}
"""
    result = run(code, language="cpp", backend=backend, time_limit=LOADED)
    assert result.status is Status.OK, result.stderr
    assert "CONNECTED" not in result.stdout and "blocked" in result.stdout
    assert host_listener.accepted == []


def test_cannot_read_host_files(backend, tmp_path):
    secret = tmp_path / "secret.txt"
    token = secrets.token_hex(8)
    secret.write_text(token)
    os.chmod(tmp_path, 0o755)
    os.chmod(secret, 0o644)
    targets = [str(secret), str(PROJECT / "pyproject.toml"), rllm_envs.__file__, "/etc/shadow"]
    opens = "\n".join(f'  try_read("{t}");' for t in targets)
    code = f"""
#include <cstdio>
void try_read(const char* path) {{
  FILE* f = std::fopen(path, "r");
  if (!f) {{ std::puts("blocked"); return; }}
  char buf[64] = {{0}}; std::fread(buf, 1, 50, f); std::printf("READ %s %s\\n", path, buf);
}}
int main() {{
{opens}
}}
"""
    result = run(code, language="cpp", backend=backend, time_limit=LOADED)
    assert result.status is Status.OK, result.stderr
    assert token not in result.stdout and "READ" not in result.stdout, result.stdout
    assert result.stdout.count("blocked") == len(targets)


def test_cannot_write_anywhere(backend, tmp_path):
    os.chmod(tmp_path, 0o777)
    marker = f"rllm-escape-{secrets.token_hex(4)}"
    targets = [
        str(tmp_path / marker),
        f"/tmp/{marker}",
        f"/dev/shm/{marker}",
        str(PROJECT / marker),
        f"/{marker}",
        marker,
    ]
    opens = "\n".join(f'  try_write("{t}");' for t in targets)
    code = f"""
#include <cstdio>
void try_write(const char* path) {{
  FILE* f = std::fopen(path, "w");
  if (!f) {{ std::puts("blocked"); return; }}
  std::fputs("x", f); std::fclose(f); std::printf("WROTE %s\\n", path);
}}
int main() {{
{opens}
}}
"""
    result = run(code, language="cpp", backend=backend, time_limit=LOADED)
    assert result.status is Status.OK, result.stderr
    assert "WROTE" not in result.stdout, result.stdout
    for target in targets[:-1]:
        assert not os.path.exists(target)


def test_fork_bomb_is_contained(backend):
    code = """
#include <cstdio>
#include <unistd.h>
int main() {
  int children = 0;
  while (true) {
    pid_t p = fork();
    if (p == 0) { sleep(60); return 0; }
    if (p < 0) break;
    ++children;
  }
  std::printf("stopped after %d\\n", children); std::fflush(stdout);
  sleep(60);
}
"""
    start = time.monotonic()
    result = run(
        code, language="cpp", backend=backend, time_limit=6, limits=Limits(max_processes=16)
    )
    assert_fork_bomb_contained(result, time.monotonic() - start, max_processes=16)


def test_the_stack_is_big_enough_for_deep_recursion(backend):
    deep = """
#include <cstdio>
int down(int n) {
  volatile char pad[64];
  pad[0] = (char)n;
  return n ? down(n - 1) + (pad[0] & 1) : 0;
}
int main() { std::printf("%d\\n", down(1000000)); }
"""
    result = run(deep, language="cpp", backend=backend, time_limit=30)
    assert result.ok and result.stdout == "500000\n", result


def test_precompiled_header_is_built_once_and_used(tmp_path):
    from rllm_envs.sandbox import cpp_pch
    from rllm_envs.sandbox.harness import CXX_FLAGS

    target = cpp_pch.build(tmp_path)
    built = target.stat().st_mtime_ns
    assert cpp_pch.build(tmp_path) == target and target.stat().st_mtime_ns == built  # up to date
    probe = subprocess.run(
        [CXX, *CXX_FLAGS, "-I", str(tmp_path), "-H", "-fsyntax-only", "-x", "c++", "-"],
        input="#include <bits/stdc++.h>\nint main() {}\n",
        capture_output=True,
        text=True,
    )
    assert f"! {target}" in probe.stderr.splitlines()  # g++ took the precompiled header


def test_compiling_uses_the_precompiled_header_only_where_it_is(monkeypatch, tmp_path):
    from rllm_envs.sandbox import harness

    monkeypatch.setattr(harness, "CPP_PCH_DIR", str(tmp_path / "missing"))
    assert "-I" not in harness.cxx_compile_argv("a.cpp", "a.o")
    monkeypatch.setattr(harness, "CPP_PCH_DIR", str(tmp_path))
    argv = harness.cxx_compile_argv("a.cpp", "a.o")
    assert argv[argv.index("-I") + 1] == str(tmp_path)


@pytest.mark.skipif(
    not os.path.isdir(CPP_PCH_DIR),
    reason=f"no precompiled header in {CPP_PCH_DIR} (run `python -m rllm_envs.sandbox.cpp_pch`)",
)
def test_the_sandbox_can_use_the_installed_precompiled_header(backend):
    from rllm_envs.sandbox.harness import cxx_compile_argv

    argv = [a for a in cxx_compile_argv("-", "/dev/null") if a not in ("-c", "-o", "/dev/null")]
    argv += ["-H", "-fsyntax-only"]
    code = (
        "import subprocess\n"
        f"done = subprocess.run({argv!r}, input='#include <bits/stdc++.h>\\n',"
        " capture_output=True, text=True)\n"
        "print(done.stderr.splitlines()[0])\n"
    )
    result = run(code, backend=backend, time_limit=30)
    assert result.stdout.strip() == f"! {CPP_PCH_DIR}/bits/stdc++.h.gch", result
