"""Train any harness: an agent written only against the ``openai`` client, trained by our GRPO
trainer through the gateway on CPU with the tiny model. Its recorded tokens are exactly what
the engine generated, checked by an outside forward pass of the weights that served them, and
the trained run is servable by path."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from tests.adapters.gateway.conftest import completion_logprobs

pytest.importorskip("vllm")
pytest.importorskip("deepspeed")
pytest.importorskip("openai")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gateway_agent"


def load(name):
    spec = importlib.util.spec_from_file_location(f"gateway_example_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_agent_imports_nothing_of_ours():
    tree = ast.parse((EXAMPLE / "math_agent.py").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    assert roots <= {"__future__", "argparse", "openai"}, roots


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("gateway-train")
    return load("train_math").train(output_dir=out, iterations=3, num_tasks=2, group_size=4)


def test_grpo_trains_the_openai_agent_through_the_gateway(trained):
    import torch
    from transformers import AutoModelForCausalLM

    from rllm_adapters.tiny_model import tiny_model_path
    from rllm_agents.store import EpisodeStore

    history = trained["history"]
    assert len(history) == 3
    updated = [h for h in history if not h["batch/update_skipped"]]
    assert updated, "GRPO found no reward spread"
    # Every update was pushed to the gateway and hot-swapped into the engine.
    (engine,) = trained["gateway_metrics"]["engines"]
    assert engine["weights_version"] == len(trained["weights"]) == len(updated)

    store = EpisodeStore(trained["store"], read_only=True)
    episodes = list(store.episodes())
    assert len(episodes) == 3 * 2 * 4  # no trajectory lost
    folders = {0: tiny_model_path(), **{i + 1: p for i, p in enumerate(trained["weights"])}}
    models = {}
    checked = set()
    for episode in episodes:
        t = episode.trajectory
        assert t.token_exact and t.token_source == "engine"
        assert t.env_id == "rllm/Math-v1" and t.task_id is not None
        assert t.metadata["source"] == "gateway" and t.num_turns == 1
        (step,) = t.steps
        # The example's reward is a number: the client's, its grade kept as the client's.
        assert "env_reward" in step.info and "is_correct" in step.info["client_grade"]
        assert step.info["reward_source"] == "client" and not episode.is_correct
        version = step.info["weights_version"]
        if version not in models:
            model = AutoModelForCausalLM.from_pretrained(
                tiny_model_path(), torch_dtype=torch.float32
            ).eval()
            if version:
                from safetensors.torch import load_file

                model.load_state_dict(load_file(Path(folders[version]) / "model.safetensors"))
            models[version] = model
        outside, _ = completion_logprobs(models[version], step.prompt_ids, step.completion_ids)
        # The ids are the engine's and its logprobs are those of the weights it names.
        assert step.logprobs == pytest.approx(outside, abs=2e-3)
        checked.add(version)
    assert len(checked) >= 2  # episodes of the initial and of trained weights
    store.close()


def test_sft_trains_on_the_recorded_sessions_as_stored(trained, tmp_path):
    """The gateway's store is SFT data with no conversion: every recorded session passes the
    token-exact filter and an optimizer step trains on them."""
    import math

    from rllm_adapters.trainer.sft import SFTTrainer
    from rllm_adapters.trainer.sft_config import sft_config_from_dict

    config = sft_config_from_dict(
        {
            "model": "tiny",
            "data": {"store": trained["store"], "env": "rllm/Math-v1", "dedup": False},
            "sft": {"epochs": 1, "max_length": 512, "micro_batch_size": 4, "max_steps": 1},
            "optim": {"lr": 1e-4},
            "train": {"output_dir": str(tmp_path / "sft"), "seed": 0},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    with SFTTrainer(config) as trainer:
        history = trainer.train()
    assert history[0]["data/episodes_seen"] == history[0]["data/episodes_kept"] == 3 * 2 * 4
    assert math.isfinite(history[0]["sft/loss"]) and history[0]["sft/loss"] > 0


def test_the_trained_run_is_servable_by_path(trained):
    """The run folder resolves to its final model, its checkpoint exports the same weights."""
    import torch
    from safetensors.torch import load_file

    from rllm_adapters.gateway.checkpoint import export_checkpoint, resolve_served_model

    run = Path(trained["run_dir"])
    folder, name = resolve_served_model(run)
    assert Path(folder) == run / "final_model" and name == run.name
    exported = export_checkpoint(run / "checkpoint")
    final = load_file(run / "final_model" / "model.safetensors")
    again = load_file(exported / "model.safetensors")
    assert set(final) == set(again)
    assert all(torch.equal(final[k], again[k]) for k in final)
    # The last pushed weights are the final model's.
    pushed = load_file(Path(trained["weights"][-1]) / "model.safetensors")
    assert all(torch.equal(final[k], pushed[k].to(final[k].dtype)) for k in final)


def test_a_lora_run_is_servable_by_path_and_from_its_checkpoint(tmp_path):
    """A LoRA run serves as a plain folder: by path its final model (adapters merged), and a
    run stopped before that from its checkpoint, exported with the adapters merged the same."""
    import torch
    from safetensors.torch import load_file

    from rllm_adapters.gateway.checkpoint import export_checkpoint, resolve_served_model
    from rllm_adapters.trainer.trainer import PPOTrainer
    from tests.adapters.helpers import lora_grpo_config

    run = tmp_path / "lora-run"
    config = lora_grpo_config(run, max_turns=2)
    with PPOTrainer(config) as trainer:
        trainer.train()
    folder, name = resolve_served_model(run)
    assert Path(folder) == run / "final_model" and name == run.name
    final = load_file(run / "final_model" / "model.safetensors")
    assert not any("lora_" in k for k in final)  # a plain folder any engine loads
    exported = export_checkpoint(run / "checkpoint")
    again = load_file(exported / "model.safetensors")
    assert set(final) == set(again)
    assert all(torch.equal(final[k], again[k]) for k in final)


def test_one_command_serves_the_trained_run(trained, tmp_path):
    """``python -m rllm_adapters.gateway --model <run>`` serves the trained weights to any OpenAI
    client: its greedy reply is the final model's."""
    import signal
    import subprocess
    import sys
    import time

    import httpx
    import openai
    import torch
    from transformers import AutoModelForCausalLM

    from rllm_adapters.gateway.engines import free_port
    from tests.adapters.helpers import hf_greedy

    run = Path(trained["run_dir"])
    port = free_port()
    log = open(tmp_path / "gateway.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "rllm_adapters.gateway", "--model", str(run), "--port", str(port),
         "--served-model-name", "trained", "--engine-arg=--dtype=float32",
         "--engine-arg=--max-model-len=2048"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, (tmp_path / "gateway.log").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.5)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
        prompt = [3, 4, 5, 6]
        reply = client.completions.create(
            model="trained",
            prompt=prompt,
            max_tokens=8,
            temperature=0.0,
            extra_body={"ignore_eos": True, "return_token_ids": True},
        )
        final = AutoModelForCausalLM.from_pretrained(
            run / "final_model", torch_dtype=torch.float32
        ).eval()
        assert reply.choices[0].token_ids == hf_greedy(final, prompt, 8)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(timeout=120) == 0
        finally:
            if process.poll() is None:
                process.kill()
            log.close()
