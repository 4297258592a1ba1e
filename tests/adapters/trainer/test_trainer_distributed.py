"""Two processes under ``torchrun``: ZeRO-3 with a separate critic, one engine per rank."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("deepspeed")

ROOT = Path(__file__).resolve().parents[3]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_torchrun_two_processes_zero3(tmp_path):
    import yaml

    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        pytest.skip("torchrun not found next to the interpreter")
    out = tmp_path / "run"
    config = {
        "model": "tiny",
        "env": "rllm/FrozenLake-v1",
        "env_kwargs": {
            "map_name": "4x4",
            "max_turns": 3,
            "reward_weights": {"invalid_action": -0.1},
        },
        "rollout": {
            "backend": "transformers",
            "num_tasks": 2,
            "group_size": 2,
            "max_tokens": 1,
            "agent": "rllm_agents.agent:FrozenLakeBoardAgent",
        },
        "algorithm": {"critic": "separate", "mini_batch_size": 2, "micro_batch_size": 1},
        "deepspeed": {"zero_stage": 3},
        "optim": {"lr": 1e-3},
        "train": {"iterations": 2, "output_dir": str(out), "resume": False},
        "logging": {"progress": False, "tensorboard": False},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    result = subprocess.run(
        [
            torchrun,
            "--nproc_per_node",
            "2",
            "--master_port",
            str(_port()),
            "-m",
            "rllm_adapters.train",
            "--config",
            str(path),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2]  # rank 0 logs, once per iteration
    assert rows[-1]["episodes"] == 16  # 2 ranks x 4 episodes x 2 iterations
    assert rows[-1]["logprob_mismatch/mean_abs"] < 1e-3
    assert "loss/value" in rows[-1]
    assert (out / "final_model" / "config.json").is_file()
    assert (out / "checkpoint" / "trainer_state.json").is_file()


def test_a_child_of_a_trainer_process_starts_its_own_group():
    """A plain-python trainer gives itself a one-process group through the launcher's variables;
    a child that inherits them (a TRL script, a second trainer) must not reuse its port."""
    from rllm_adapters.trainer.distributed import child_env, setup_distributed

    assert setup_distributed() == (0, 1)
    assert "MASTER_PORT" in os.environ  # held by this process's store
    assert not {"RANK", "MASTER_PORT"} & set(child_env())
    script = (
        "from rllm_adapters.trainer.distributed import setup_distributed; "
        "print(setup_distributed())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("(0, 1)")
    # A launcher's variables (torchrun) are the child's own: kept.
    launched = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_PORT": "1234"}
    assert child_env(launched) == launched
    # torchrun started from a process with its own group: the workers' port is torchrun's, so
    # their variables are the launcher's (kept), and only the parent's marker goes.
    marked = {**launched, "RLLM_ADAPTERS_OWN_GROUP": f"{os.getpid() + 1}:4321"}
    assert child_env(marked) == launched
