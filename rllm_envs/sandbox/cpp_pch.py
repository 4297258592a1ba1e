"""Build the precompiled ``bits/stdc++.h`` the C++ judge uses when it is there.

Most competitive C++ starts with ``#include <bits/stdc++.h>``, which takes g++ about 1.2 s
to parse; with a precompiled header for the judge's exact flags it takes about 0.25 s. The
header goes to :data:`~rllm_envs.sandbox.harness.CPP_PCH_DIR`, a system path (so visible,
read-only, inside the sandbox; writing it needs root). ``scripts/setup.sh`` runs::

    python -m rllm_envs.sandbox.cpp_pch [DIRECTORY]

It is rebuilt only when g++ or the flags changed (a stamp file records both). A stale or
missing header is never an error: g++ then reads the real one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rllm_envs.sandbox.harness import CPP_PCH_DIR, CXX, CXX_FLAGS

__all__ = ["build"]

_PROBE = "#include <bits/stdc++.h>\nint main() {}\n"


def _stamp() -> str:
    version = subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True)
    return version.stdout.splitlines()[0] + "\n" + " ".join(CXX_FLAGS) + "\n"


def _header() -> str:
    """The path of ``bits/stdc++.h`` that g++ includes with the judge's flags."""
    probe = subprocess.run(
        [CXX, *CXX_FLAGS, "-H", "-fsyntax-only", "-x", "c++", "-"],
        input=_PROBE,
        capture_output=True,
        text=True,
        check=True,
    )
    for line in probe.stderr.splitlines():
        path = line.lstrip(". ").strip()
        if path.endswith("bits/stdc++.h"):
            return path
    raise RuntimeError(f"{CXX} did not report where bits/stdc++.h is:\n{probe.stderr[-500:]}")


def build(directory: str | Path = CPP_PCH_DIR) -> Path:
    """Build ``<directory>/bits/stdc++.h.gch`` for the judge's flags (if not up to date).

    Returns:
        The path of the precompiled header.

    Raises:
        OSError, subprocess.CalledProcessError: If g++ is missing or the build fails.
    """
    root = Path(directory)
    target = root / "bits" / "stdc++.h.gch"
    stamp_path = root / "stamp"
    stamp = _stamp()
    if target.exists() and stamp_path.exists() and stamp_path.read_text() == stamp:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    for folder in (root, target.parent):
        folder.chmod(0o755)  # the sandbox user reads it
    handle, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
    os.close(handle)
    try:
        subprocess.run(
            [CXX, *CXX_FLAGS, "-x", "c++-header", _header(), "-o", partial],
            check=True,
            capture_output=True,
        )
        os.chmod(partial, 0o644)
        os.replace(partial, target)  # atomic: a concurrent compile sees the old or the new
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    stamp_path.write_text(stamp)
    stamp_path.chmod(0o644)
    return target


if __name__ == "__main__":
    print(f"[cpp-pch] {build(sys.argv[1] if len(sys.argv) > 1 else CPP_PCH_DIR)}")
