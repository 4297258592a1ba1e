"""One provenance writer: what every results file records, and README renders it either way."""

from __future__ import annotations

import json
import time

import pytest

from benchmarks import readme
from benchmarks.provenance import LoadSampler, provenance

#: Keys older results files wrote in their own shapes; a file written now has ``provenance()``.
OLD_KEYS = ("time", "command", "commit", "git_commit", "git_dirty", "machine", "versions")


def test_provenance_says_when_how_where_and_with_what():
    prov = provenance("benchmarks.main", ["--n-tasks", "3"])
    assert prov["command"] == "python -m benchmarks.main --n-tasks 3"
    assert time.strptime(prov["time"], "%Y-%m-%dT%H:%M:%SZ")
    assert len(prov["commit"]) in (0, 40) and prov["git_dirty"] in (True, False, None)
    machine = prov["machine"]
    assert machine["cpu_count"] >= 1 and machine["load_average_1m"] >= 0
    assert {"numpy", "gymnasium"} <= set(machine["versions"])
    assert provenance()["command"] is None


def test_a_copy_without_git_is_told_its_commit_and_names_its_gpus(monkeypatch, tmp_path):
    from benchmarks import provenance as module

    # A tree copied to a GPU machine may have no .git, or a stale one: RLLM_COMMIT names the
    # commit that ran.
    monkeypatch.setenv("RLLM_COMMIT", "a" * 40)
    assert module.git_commit() == "a" * 40
    monkeypatch.setattr(module, "_git", lambda *args: None)
    assert module.git_commit() == "a" * 40
    monkeypatch.delenv("RLLM_COMMIT")
    assert module.git_commit() == ""
    # No nvidia-smi: no GPU key; one that lists a GPU: its name is in the machine record.
    monkeypatch.setenv("PATH", str(tmp_path))
    assert module.gpu_names() == [] and "gpus" not in module.machine()
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3'\n")
    smi.chmod(0o755)
    assert module.machine()["gpus"] == ["NVIDIA H100 80GB HBM3"]


def test_load_sampler_records_the_load_while_it_runs():
    with LoadSampler(every_s=0.01) as load:
        time.sleep(0.05)
    summary = load.summary()
    assert summary["samples"] >= 2 and summary["min"] <= summary["mean"] <= summary["max"]
    during = provenance(load=load)["machine"]["load_average_1m_during"]
    assert during == summary


def _rendered() -> list[str]:
    names = []
    for path in sorted(readme.RESULTS.glob("*.json")):
        try:
            readme.render(path.stem)
        except KeyError:  # a results file no page shows (no renderer for its shape)
            continue
        names.append(path.stem)
    return names


@pytest.mark.parametrize("name", _rendered())
def test_a_results_file_written_now_renders_its_provenance(name, tmp_path, monkeypatch):
    """Each committed file, its provenance replaced by today's shape, renders the new values."""
    old = json.loads((readme.RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    old_block = readme.render(name)
    with LoadSampler(every_s=0.01) as load:
        pass
    prov = provenance("benchmarks.x", ["--flag"], load=load)
    new = {**{k: v for k, v in old.items() if k not in OLD_KEYS}, **prov}
    (tmp_path / f"{name}.json").write_text(json.dumps(new), encoding="utf-8")
    monkeypatch.setattr(readme, "RESULTS", tmp_path)
    block = readme.render(name)
    machine = prov["machine"]
    assert f"{machine['cpu_count']} CPUs" in block
    if "commit `" in old_block:
        assert f"commit `{prov['commit'][:10]}`" in block
    if "load" in old_block:
        assert str(machine["load_average_1m"]) in block or "during the run" in block
    old_versions = old.get("versions") or old.get("machine", {}).get("versions", {})
    if any(f"{k} {v}" in old_block for k, v in old_versions.items()):
        assert f"numpy {machine['versions']['numpy']}" in block
