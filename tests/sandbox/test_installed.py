"""A system-wide install of this package (hidden task data) stays unreadable from the sandbox."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from importlib import resources
from pathlib import Path

import pytest

import rllm_envs
from rllm_envs.sandbox import installed, run

PACKAGE = Path(rllm_envs.__file__).resolve().parent
# Where `pip install .` puts the package in a python:3.X image: shown read-only in a sandbox.
SYSTEM_LIB = Path("/usr/local/lib")


def test_the_hidden_set_covers_the_package_and_every_data_file():
    paths = [Path(p) for p in installed.installed_paths()]
    loaded = resources.files("rllm_envs.code.data") / "problems.jsonl"  # as code_env reads it
    data = [
        Path(str(loaded)),
        PACKAGE / "code" / "data" / "problems.jsonl",
        PACKAGE / "swe" / "projects.py",
        *(PACKAGE / "code" / "data" / "cpp").iterdir(),
    ]
    assert PACKAGE in paths
    for file in data:
        assert file.exists(), file
        assert any(file.resolve().is_relative_to(p) for p in paths), file


def test_only_what_a_sandbox_shows_is_listed():
    assert installed.visible_in_sandbox("/usr/local/lib/python3.11/site-packages/rllm_envs")
    assert installed.visible_in_sandbox("/etc/rllm_envs")
    assert not installed.visible_in_sandbox("/work/main/rllm_envs")
    assert not installed.visible_in_sandbox("/home/u/.local/lib/python3.11/site-packages/x")
    assert set(installed.package_paths()) <= set(installed.installed_paths())


@pytest.fixture(params=["on sys.path", "another interpreter's"])
def system_install(request, monkeypatch):
    """A copy of the package's task data installed under /usr/local/lib, on ``sys.path`` or
    in what looks like another interpreter's package directory."""
    if not os.access(SYSTEM_LIB, os.W_OK):
        pytest.skip(f"{SYSTEM_LIB} is not writable here (a system install needs root)")
    token = secrets.token_hex(8)
    # The token only in contents: names of hidden entries may show.
    root = SYSTEM_LIB / f"python3-rllm-escape-{secrets.token_hex(4)}"
    site = root / "site-packages"
    data = site / "rllm_envs" / "code" / "data"
    data.mkdir(parents=True)
    shutil.copy(PACKAGE / "code" / "data" / "problems.jsonl", data / "problems.jsonl")
    (site / "rllm_envs" / "swe").mkdir()
    (site / "rllm_envs" / "swe" / "projects.py").write_text(f"SECRET = {token!r}\n")
    (site / "rllm_envs" / "__init__.py").write_text(f"# {token}\n")
    meta = site / "rllm_envs-0.1.0.dist-info"
    meta.mkdir()
    (meta / "RECORD").write_text(f"rllm_envs/swe/projects.py,{token}\n")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # world-readable, as pip leaves it
    if request.param == "on sys.path":
        monkeypatch.syspath_prepend(str(site))
    try:
        yield site, token
    finally:
        shutil.rmtree(root)


def _reader(site: Path) -> str:
    # What a program can compute: the known install layout, a scan of its interpreter's
    # path, find_spec, and a walk of the system library directories.
    return (
        "import glob, importlib.util, os, sys\n"
        f"paths = [{str(site / 'rllm_envs' / 'code' / 'data' / 'problems.jsonl')!r},\n"
        f"         {str(site / 'rllm_envs' / 'swe' / 'projects.py')!r},\n"
        f"         {str(site / 'rllm_envs-0.1.0.dist-info' / 'RECORD')!r}]\n"
        "for entry in sys.path + glob.glob('/usr/local/lib/*/*/site-packages') + "
        "glob.glob('/usr/lib/python3*/*-packages'):\n"
        "    paths += [os.path.join(entry, 'rllm_envs', 'code', 'data', 'problems.jsonl'),\n"
        "              os.path.join(entry, 'rllm_envs', 'swe', 'projects.py')]\n"
        "try:\n"
        "    spec = importlib.util.find_spec('rllm_envs')\n"
        "    paths += list(spec.submodule_search_locations or []) if spec else []\n"
        "except Exception as e: print('find_spec', type(e).__name__)\n"
        "for path in paths:\n"
        "    try:\n"
        "        print('READ', path, open(path).read(200))\n"
        "    except OSError: pass\n"
        # The names in site-packages may show (hidden entries exist); the package's may not.
        f"for d in [{str(site / 'rllm_envs')!r}, {str(site / 'rllm_envs' / 'code')!r}]:\n"
        "    try:\n"
        "        names = os.listdir(d)\n"
        "        if names: print('LISTED', d, names)\n"
        "    except OSError: pass\n"
        "print('done')\n"
    )


def test_a_system_install_is_hidden(backend, system_install, monkeypatch):
    site, token = system_install
    assert str(site / "rllm_envs") in installed.package_paths()
    result = run(_reader(site), backend=backend)
    assert result.stdout.strip().endswith("done"), (result.status, result.stderr[-500:])
    assert token not in result.stdout and "READ" not in result.stdout, result.stdout
    assert "LISTED" not in result.stdout, result.stdout


def test_the_minimal_root_hides_a_system_install_not_found(backend, system_install, monkeypatch):
    # Before issue #24's minimal root the same files, not found on sys.path, were readable
    # (the premise of the test above); now nothing outside the root's allow-list is shown.
    site, token = system_install
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(site)])
    monkeypatch.setattr(installed, "_distribution_entries", set)
    monkeypatch.setattr(installed, "_system_site_dirs", list)
    monkeypatch.setattr(rllm_envs, "__file__", "/nonexistent/rllm_envs/__init__.py")
    assert installed.package_paths() == ()
    result = run(_reader(site), backend=backend)
    assert result.stdout.strip().endswith("done"), (result.status, result.stderr[-500:])
    assert token not in result.stdout and "READ" not in result.stdout, result.stdout
