"""The OpenEnv server, tested with OpenEnv's own client against a real server process.

One server process (``python -m rllm_adapters.serve all``) on 127.0.0.1 serves every registered id
under its own path; the tests talk to it through ``openenv``'s ``EnvClient`` (our
:class:`RllmEnvClient` only parses the payloads) and, for malformed frames, a raw WebSocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("openenv.core.env_server", reason='needs `pip install "rllm-envs[openenv]"`')

import httpx  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect as ws_connect  # noqa: E402

import rllm_envs  # noqa: E402
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.openenv import (  # noqa: E402
    RemoteTextEnv,
    RllmEnvClient,
    ServerLimits,
    TextAction,
    create_app,
    openenv_package,
)
from rllm_adapters.openenv.environment import served_ids  # noqa: E402
from rllm_adapters.trl import SeatEnv  # noqa: E402
from rllm_envs.testing import check_text_env  # noqa: E402

ALL_IDS = list(rllm_envs.list_envs())
#: Multi-agent ids served as their one model seat against the row's scripted opponents.
GAMES = [i for i in served_ids() if i in rllm_envs.list_multiagent_envs()]
MAX_SESSIONS = 3
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        for child in map(int, text.split()):
            found |= {child} | _children(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rllm_adapters.serve", "all", "--port", str(port)]
        + ["--max-sessions", str(MAX_SESSIONS), "--session-timeout", "120"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240  # importing openenv-core (gradio, fastmcp) is slow
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            if httpx.get(f"{url}/rllm/envs", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the server did not start")
        time.sleep(0.5)
    yield proc, url
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    proc.stdout.close()


def _sessions(url: str, env_id: str) -> dict:
    return httpx.get(f"{url}/{env_id}/rllm/sessions", timeout=10).json()


def _wait_for_sessions(url: str, env_id: str, active: int) -> dict:
    deadline = time.monotonic() + 60
    while (seen := _sessions(url, env_id))["active"] != active and time.monotonic() < deadline:
        time.sleep(0.1)
    return seen


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_id_resets_steps_and_reports_state_over_openenvs_client(server, env_id):
    _, url = server
    try:
        local = rllm_envs.make(env_id)
    except rllm_envs.DependencyNotInstalled as e:
        pytest.skip(str(e))
    obs, info = local.reset(seed=0)
    oracle = local.unwrapped.oracle_action()
    _, reward, terminated, truncated, local_info = local.step(oracle)
    local.close()
    with RllmEnvClient(base_url=f"{url}/{env_id}", message_timeout_s=120).sync() as client:
        result = client.reset(seed=0)
        assert result.observation.text == obs and result.done is False
        assert result.observation.info["task_id"] == info["task_id"]
        result = client.step(TextAction(text=oracle))
        assert result.reward == reward
        assert result.done == (terminated or truncated)
        assert result.observation.info["is_correct"] == local_info["is_correct"]
        state = client.state()
        assert state.env_id == env_id and state.step_count == 1
        assert state.task_id == info["task_id"] and state.seed == 0
    assert _wait_for_sessions(url, env_id, 0)["active"] == 0


def test_a_one_seat_game_is_served_and_all_model_seat_ids_are_refused(server):
    _, url = server
    assert GAMES == ["rllm/TicTacToe-v0"]
    for env_id in GAMES:
        for seed in range(3):
            local = SeatEnv(env_id)  # the same seat, opponents and seeds, in process
            obs, info = local.reset(seed=seed, options={"index": seed})
            with RllmEnvClient(base_url=f"{url}/{env_id}", message_timeout_s=120).sync() as client:
                result = client.reset(seed=seed, options={"index": seed})
                assert result.observation.text == obs and not result.done
                steps = 0
                while True:
                    move = local.oracle_action()
                    obs, reward, terminated, truncated, info = local.step(move)
                    result = client.step(TextAction(text=move))
                    steps += 1
                    assert result.observation.text == obs and result.reward == reward
                    assert result.done == (terminated or truncated)
                    if result.done:
                        break
                assert client.state().step_count == steps
            local.close()
            assert reward >= 0.0  # the oracle never loses
        metadata = httpx.get(f"{url}/{env_id}/metadata", timeout=10).json()
        assert metadata["description"] == rllm_envs.list_multiagent_envs()[env_id]
        # Served, not packaged: OpenEnv's validation takes no multi-agent package.
        with pytest.raises(AdapterConfigError, match="multi-agent packages unsupported"):
            openenv_package(env_id)
    for env_id in ("rllm/SolverJudge-v1", "rllm/Debate-v1"):
        assert env_id not in served_ids()
        with pytest.raises(AdapterConfigError, match="model seats"):
            create_app(env_id)


def test_concurrent_sessions_are_independent_and_capacity_is_enforced(server):
    _, url = server
    env_id = "rllm/FrozenLake-v1"
    base = f"{url}/{env_id}"

    def local_episode(seed):
        env = rllm_envs.make(env_id)
        obs, _ = env.reset(seed=seed)
        moves = [env.unwrapped.oracle_action()]
        out = [obs, env.step(moves[0])[0]]
        env.close()
        return out, moves

    async def remote_episode(client, seed, moves):
        out = [(await client.reset(seed=seed)).observation.text]
        out.append((await client.step(TextAction(text=moves[0]))).observation.text)
        return out

    async def main():
        clients = [RllmEnvClient(base_url=base) for _ in range(MAX_SESSIONS)]
        for c in clients:
            await c.connect()
        try:
            expected = [local_episode(seed) for seed in range(MAX_SESSIONS)]
            got = await asyncio.gather(
                *(remote_episode(c, s, expected[s][1]) for s, c in enumerate(clients))
            )
            assert got == [e[0] for e in expected]
            assert _sessions(url, env_id)["active"] == MAX_SESSIONS
            # The refusal is the first frame of a session over capacity, then the server closes.
            with ws_connect(base.replace("http", "ws") + "/ws") as ws:
                refusal = json.loads(ws.recv())["data"]
            assert refusal["code"] == "CAPACITY_REACHED"
            assert refusal["max_sessions"] == MAX_SESSIONS
            extra = RllmEnvClient(base_url=base)
            await extra.connect()
            # OpenEnv's client sees the refusal, or the closed socket if it was gone first.
            with pytest.raises((RuntimeError, ConnectionClosed), match="CAPACITY_REACHED|1000"):
                await extra.reset(seed=0)
            await extra.close()
        finally:
            for c in clients:
                await c.close()

    asyncio.run(main())
    assert _wait_for_sessions(url, env_id, 0)["active"] == 0


def test_bad_requests_get_clear_errors_and_the_session_survives(server):
    _, url = server
    base = f"{url}/rllm/Math-v1"
    with RllmEnvClient(base_url=base).sync() as client:
        with pytest.raises(RuntimeError, match="send a reset before stepping"):
            client.step(TextAction(text="\\boxed{1}"))
        with pytest.raises(RuntimeError, match=r"Unknown reset option.*indx"):
            client.reset(seed=0, options={"indx": 3})
        assert client.reset(seed=0).observation.text  # the session still works
    with ws_connect(base.replace("http", "ws") + "/ws") as ws:
        ws.send("{not json")
        assert json.loads(ws.recv())["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"txt": "a typo'd field"}}))
        error = json.loads(ws.recv())["data"]
        assert error["code"] == "VALIDATION_ERROR"
        ws.send(json.dumps({"type": "launch_missiles"}))
        assert json.loads(ws.recv())["data"]["code"] == "UNKNOWN_TYPE"
        ws.send(json.dumps({"type": "step", "data": {"text": "\\boxed{nope}"}}))
        reply = json.loads(ws.recv())
        assert reply["type"] == "observation" and reply["data"]["done"] is True


def test_a_failed_reset_keeps_the_sessions_episode_and_custom_tasks_are_marked(server):
    _, url = server
    env_id = "rllm/Math-v1"
    local = rllm_envs.make(env_id)
    _, real = local.reset(seed=0, options={"index": 0})
    oracle = local.unwrapped.oracle_action()
    local.close()
    impostor = {"id": real["task_id"], "problem": "What is 1+1?", "answer": "2"}

    def ask(ws, kind, data=None):
        ws.send(json.dumps({"type": kind, "data": data or {}}))
        return json.loads(ws.recv())

    with ws_connect(f"{url}/{env_id}".replace("http", "ws") + "/ws") as ws:
        assert ask(ws, "reset", {"seed": 0, "options": {"index": 0}})["type"] == "observation"
        for episode_id in ({"not": "a string"}, "x" * 10_000, 7):
            bad = ask(ws, "reset", {"episode_id": episode_id, "options": {"task": impostor}})
            assert bad["data"]["code"] == "VALIDATION_ERROR" and "episode_id" in str(bad["data"])
        state = ask(ws, "state")["data"]
        assert state["task_id"] == real["task_id"] and state["custom_task"] is False
        step = ask(ws, "step", {"text": oracle})["data"]  # graded on the real task, as before
        assert step["reward"] == 1.0 and step["observation"]["info"]["task_id"] == real["task_id"]
        # A client's task record is played under its own id, never the source's.
        reply = ask(ws, "reset", {"episode_id": "e1", "options": {"task": impostor}})["data"]
        info = reply["observation"]["info"]
        assert info["task_id"].startswith("custom-") and info["custom_task"] is True
        state = ask(ws, "state")["data"]
        assert state["task_id"] == info["task_id"] and state["custom_task"] is True
        assert state["client_task_id"] == real["task_id"] and state["episode_id"] == "e1"
        step = ask(ws, "step", {"text": "\\boxed{2}"})["data"]
        assert step["reward"] == 1.0 and step["observation"]["info"]["task_id"] == info["task_id"]


def test_a_dropped_client_frees_its_session(server):
    _, url = server
    env_id = "rllm/Math-v1"
    before = _wait_for_sessions(url, env_id, 0)
    assert before["active"] == 0
    with contextlib.suppress(OSError, ConnectionClosed):
        with ws_connect(f"{url}/{env_id}".replace("http", "ws") + "/ws") as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            ws.recv()
            assert _sessions(url, env_id)["active"] == 1
            ws.socket.shutdown(socket.SHUT_RDWR)  # vanish without a close frame
            ws.socket.close()
    assert _wait_for_sessions(url, env_id, 0)["active"] == 0


def test_stateless_http_endpoints_and_the_index(server):
    _, url = server
    assert set(httpx.get(f"{url}/rllm/envs").json()["envs"]) == set(served_ids())
    reply = httpx.post(f"{url}/rllm/Math-v1/reset", json={"seed": 0}, timeout=30).json()
    local = rllm_envs.make("rllm/Math-v1")
    assert reply["observation"]["text"] == local.reset(seed=0)[0]
    assert httpx.get(f"{url}/rllm/Math-v1/health").json()["status"] == "healthy"
    schema = httpx.get(f"{url}/rllm/Math-v1/schema").json()
    assert "text" in schema["action"]["properties"]


def test_a_remote_env_is_a_gymnasium_env_that_passes_the_kit(server):
    _, url = server

    def make():
        return RemoteTextEnv(f"{url}/rllm/Math-v1")

    report = check_text_env(
        make,
        rules=["text-spaces", "garbage", "random-unicode", "vector-sync", "pickle", "info-keys"],
        fuzz_episodes=3,
    )
    assert not report.failures


def test_bad_ids_kwargs_and_limits_fail_before_serving():
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean"):
        create_app("rllm/Maths-v0")
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="has no argument"):
        create_app("rllm/Math-v1", env_kwargs={"dificulty": 2})
    with pytest.raises(AdapterConfigError, match="max_sessions"):
        create_app("rllm/Math-v1", max_sessions=0)
    with pytest.raises(AdapterConfigError, match="max_frames_per_s"):
        create_app("rllm/Math-v1", limits=ServerLimits(max_frames_per_s=0))


def test_openenvs_runtime_validation_passes_against_the_server(server):
    from openenv.cli._validation import validate_running_environment

    _, url = server
    report = validate_running_environment(f"{url}/rllm/Math-v1", timeout_s=30)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert report["passed"], failed


def test_sigterm_shuts_down_cleanly_and_leaves_nothing_running(server):
    proc, url = server
    local = rllm_envs.make("rllm/Code-v0")
    local.reset(seed=0)
    oracle = local.unwrapped.oracle_action()  # judged code: the judge's sandbox pool starts
    local.close()
    with RllmEnvClient(base_url=f"{url}/rllm/Code-v0", message_timeout_s=120).sync() as client:
        client.reset(seed=0)  # a live code session (the judge's sandbox pool) at shutdown
        client.step(TextAction(text=oracle))
        children = _children(proc.pid)
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    output = proc.stdout.read()
    assert proc.returncode == 0, output
    assert "Traceback" not in output, output
    assert children, "the code session started no sandboxes: nothing was checked"
    assert not [pid for pid in children if _alive(pid)]
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/rllm/envs", timeout=2)


def test_cli_rejects_bad_json_kwargs():
    out = subprocess.run(
        [sys.executable, "-m", "rllm_adapters.serve", "rllm/Math-v1", "--env-kwargs", "{nope"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "--env-kwargs is not JSON" in out.stderr


def test_gym_registry_is_untouched_by_the_adapter():
    assert all(env_id in gym.registry for env_id in ALL_IDS)


def test_every_id_ships_an_openenv_package_that_openenv_validates():
    import yaml
    from openenv.validation import Level, Verdict, run_validation

    folders = {p.name for p in (REPO / "deploy" / "openenv").iterdir() if p.is_dir()}
    assert folders == {i.split("/", 1)[1].lower() for i in ALL_IDS}
    for env_id in ALL_IDS:
        folder = REPO / "deploy" / "openenv" / env_id.split("/", 1)[1].lower()
        for name, text in openenv_package(env_id).items():
            assert (folder / name).read_text(encoding="utf-8") == text, (
                f"{folder / name} is stale: run rllm_adapters.openenv.write_openenv_packages"
                "('deploy/openenv')"
            )
        manifest = yaml.safe_load((folder / "openenv.yaml").read_text(encoding="utf-8"))
        # OpenEnv's discovery catalog needs a name and an authored description.
        assert manifest["name"] and manifest["description"] == rllm_envs.list_envs()[env_id]
        report = run_validation(folder, max_level=Level.STATIC, skip_build=True)
        assert report.verdict is not Verdict.FAIL, [r.evidence for r in report.results]
    folder = REPO / "deploy" / "openenv" / "math-v1"
    out = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", str(folder), "--level", "static"]
        + ["--skip-build"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS  static.manifest" in out.stdout


def test_a_package_app_serves_its_id():
    from starlette.testclient import TestClient

    folder = REPO / "deploy" / "openenv" / "frozenlake-v1"
    namespace: dict = {}
    exec(compile((folder / "server" / "app.py").read_text(), "app.py", "exec"), namespace)
    with TestClient(namespace["app"]) as http:
        assert http.get("/metadata").json()["name"] == "rllm/FrozenLake-v1"
        with http.websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {"seed": 0}})
            assert ws.receive_json()["type"] == "observation"


def test_an_env_that_fails_to_start_ends_the_sessions_episode():
    from rllm_adapters.openenv.environment import GymTextEnvironment

    env = GymTextEnvironment("rllm/FrozenLake-v1")
    try:
        env.reset(seed=0)
        with pytest.raises(ValueError, match="episode_id"):
            env.reset(seed=1, episode_id=["not", "a", "string"])
        assert env.state.done is False and env.state.seed == 0  # unchanged, still playable
        unwrapped = env.env.unwrapped

        def broken_start(task):
            raise RuntimeError("the family could not start")

        unwrapped._start = broken_start
        with pytest.raises(RuntimeError):
            env.reset(seed=2)
        assert env.state.done is True
        with pytest.raises(gym.error.ResetNeeded):
            env.step(TextAction(text="Right"))
    finally:
        env.close()


def test_a_refused_reset_keeps_a_one_seat_games_episode():
    """Issue #31 (T2): a TicTacToe session (a SeatEnv) was marked done by every refused
    reset (an index out of range, a task that is not a record), so its next step got
    ResetNeeded; it keeps its episode now, as the single-agent ids do. A client's board is
    marked custom_task on reset and step (T1)."""
    from rllm_adapters.openenv.environment import GymTextEnvironment

    env = GymTextEnvironment("rllm/TicTacToe-v0")
    try:
        first = env.reset(seed=3)
        for bad in ({"index": 2**70}, {"task": []}, {"zzz": 1}, {"options": 1}):
            with pytest.raises(Exception, match="index|task|option"):
                env.reset(seed=4, options=bad)
            assert env.state.done is False and env.state.seed == 3
        move = first.info["legal_moves"][0]
        assert env.step(TextAction(text=f"<move>{move}</move>")).info["turn"] >= 1
        board = {"board": "XX.OO....", "x_agent": "player_0"}
        obs = env.reset(options={"task": board})
        assert obs.info["custom_task"] is True and env.state.custom_task is True
        assert env.step(TextAction(text="<move>3</move>")).info["custom_task"] is True
        # The scripted X wins before the seat (O) moves: the reset says the game is over.
        lost = env.reset(options={"task": {"board": "XX.OO....", "x_agent": "player_1"}})
        assert lost.done is True and env.state.done is True and lost.info["outcome"] == "loss"
        with pytest.raises(gym.error.ResetNeeded):
            env.step(TextAction(text="<move>3</move>"))
    finally:
        env.close()


def test_a_served_math_env_withholds_its_reference_answers():
    """Issue #31 (R1): over the server a wrong answer's feedback named the reference, so a
    client could read a private dataset's answers off and replay them on the same index. A
    served Math env withholds them unless the operator passes reveal_reference=True."""
    from starlette.testclient import TestClient

    from rllm_adapters.openenv import create_app

    records = [{"problem": "What is 6 times 7?", "answer": "42"}]
    for kwargs, shown in (
        ({"dataset": records}, False),
        ({"dataset": records, "reveal_reference": True}, True),
    ):
        with TestClient(create_app("rllm/Math-v1", env_kwargs=kwargs)) as http:
            with http.websocket_connect("/ws") as ws:
                ws.send_json({"type": "reset", "data": {"options": {"index": 0}}})
                assert ws.receive_json()["type"] == "observation"
                ws.send_json({"type": "step", "data": {"text": "\\boxed{41}"}})
                data = ws.receive_json()["data"]
        assert data["done"] is True and data["reward"] == 0.0
        observation = data["observation"]
        assert ("42" in observation["text"]) is shown
        assert ("reference_answer" in observation["info"]) is shown


def test_state_shows_kwarg_names_but_never_a_dataset() -> None:
    """Issue #31 (F5): ``state`` returned the operator's env kwargs verbatim, so a Math dataset
    passed as records gave every client its answers (replayed: reward 1.0)."""
    from starlette.testclient import TestClient

    from rllm_adapters.openenv import create_app

    records = [{"problem": "Secret problem 1: what is 6 times 7?", "answer": "SECRET-4417"}]
    app = create_app("rllm/Math-v1", env_kwargs={"dataset": records, "max_turns": 2})
    with TestClient(app) as http, http.websocket_connect("/ws") as ws:
        replies = []
        for message in (
            {"type": "state"},
            {"type": "reset", "data": {"options": {"index": 0}}},
            {"type": "state"},
            {"type": "step", "data": {"text": "\\boxed{41}"}},
            {"type": "step", "data": {"text": "\\boxed{40}"}},
            {"type": "state"},
        ):
            ws.send_json(message)
            replies.append(ws.receive_json())
    assert not any("SECRET" in json.dumps(reply) for reply in replies), replies
    kwargs = replies[0]["data"]["env_kwargs"]
    assert kwargs == {"reveal_reference": False, "dataset": "<withheld>", "max_turns": 2}


def test_a_served_countdown_withholds_its_solution() -> None:
    """Issue #31 (F2): a served Countdown's wrong answer carried the reference solution, which
    replayed on the same index paid 1.0 (20/20). Served ids default to reveal_reference=False."""
    from starlette.testclient import TestClient

    from rllm_adapters.openenv import create_app
    from rllm_adapters.openenv.server import INLINE_STEP_IDS

    assert "rllm/Countdown-v1" not in INLINE_STEP_IDS  # its solver may run on a step (F3)
    with TestClient(create_app("rllm/Countdown-v1")) as http, http.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"options": {"index": 0}}})
        assert ws.receive_json()["type"] == "observation"
        ws.send_json({"type": "step", "data": {"text": "<answer>1 + 1</answer>"}})
        data = ws.receive_json()["data"]
    assert data["done"] is True and data["reward"] == 0.0
    assert "A solution" not in data["observation"]["text"]
    assert "reference_solution" not in data["observation"]["info"]


def test_no_custom_tasks_refuses_client_written_records(capsys) -> None:
    """Issue #31 (F7): an operator can refuse client-written tasks (``--no-custom-tasks``)."""
    from starlette.testclient import TestClient

    from rllm_adapters.openenv import ServerLimits, create_app
    from rllm_adapters.openenv.cli import main

    task = {"problem": "1+1?", "answer": "2"}
    limits = ServerLimits(allow_custom_tasks=False)
    with TestClient(create_app("rllm/Math-v1", limits=limits)) as http:
        with http.websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {"options": {"task": task}}})
            reply = ws.receive_json()
            assert reply["type"] == "error"
            assert reply["data"]["code"] == "VALIDATION_ERROR"
            assert "client-written" in reply["data"]["message"]
            ws.send_json({"type": "reset", "data": {"options": {"index": 0}}})
            assert ws.receive_json()["type"] == "observation"
        assert http.post("/reset", json={"options": {"task": task}}).status_code == 422
    with TestClient(create_app("rllm/Math-v1")) as http, http.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"options": {"task": task}}})
        assert ws.receive_json()["data"]["observation"]["info"]["custom_task"] is True
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--no-custom-tasks" in capsys.readouterr().out


def test_a_server_finds_balanced_tasks_in_as_many_draws_whatever_their_answer() -> None:
    """s26 att26 F1: timing a private-seed server's first reset of each index told answers of
    balanced families (a rare answer's slot took more draws). Given a private seed, a server
    turns on the search that draws until every answer slot has a draw (tests/envs cover what
    it does); with the default seeds, whose tasks anyone can make, it searches plainly."""
    from rllm_adapters.openenv import create_app
    from rllm_envs import tasks

    tasks.search_every_slot(False)
    try:
        create_app("rllm/Math-v1")
        assert not tasks._EVERY_SLOT
        create_app("rllm/Math-v1", env_kwargs={"task_seed": 2**40 + 17})
        assert tasks._EVERY_SLOT
    finally:
        tasks.search_every_slot(False)


def test_private_grading_keeps_rewards_and_verdicts_from_the_client(tmp_path) -> None:
    """s27 att27b F1: a client that saw its rewards learnt a private universe's answers (its
    questions repeat: self_reference 0.45 against the best constant's 0.22). With a score log
    a right and a wrong answer look the same to the client (reward 0, the task id alone, one
    closing text) and the log has each episode's reward under the operator's task id."""
    import json

    from starlette.testclient import TestClient

    from rllm_adapters.openenv import ServerLimits, create_app
    from rllm_adapters.openenv.environment import PRIVATE_END

    records = [
        {"problem": "What is 6 times 7?", "answer": "42"},
        {"problem": "What is 5 times 5?", "answer": "25"},
    ]
    log = tmp_path / "scores.jsonl"
    limits = ServerLimits(score_log=str(log))
    app = create_app("rllm/Math-v1", env_kwargs={"dataset": records}, limits=limits)
    replies = []
    with TestClient(app) as http, http.websocket_connect("/ws") as ws:
        for index, text in ((0, "\\boxed{42}"), (1, "\\boxed{24}"), (0, "\\boxed{42}")):
            ws.send_json({"type": "reset", "data": {"options": {"index": index}}})
            task_id = ws.receive_json()["data"]["observation"]["info"]["task_id"]
            ws.send_json({"type": "step", "data": {"text": text}})
            data = ws.receive_json()["data"]
            assert data["reward"] == 0.0 and data["done"] is True
            assert data["observation"]["text"] == PRIVATE_END
            assert data["observation"]["info"] == {"task_id": task_id, "graded_privately": True}
            replies.append(data)
    assert replies[0] == replies[2]  # the same task: nothing in a reply tells right from wrong
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["return"], r["is_correct"], r["steps"]) for r in lines] == [
        (1.0, True, 1),
        (0.0, False, 1),
        (1.0, True, 1),
    ]
    assert lines[0]["task_id"] == lines[2]["task_id"] != lines[1]["task_id"]
    assert [r["attempt"] for r in lines] == [1, 1, 2]  # the operator scores the first
    assert all(r["env_id"] == "rllm/Math-v1" and r["peer"] for r in lines)


def test_private_grading_replies_no_sooner_than_its_floor_and_plays_no_client_task(
    tmp_path,
) -> None:
    """s27 att27c: replies that all said reward 0 still told right from wrong by their time
    (self_reference: right picked 0.70 of the time against the best constant's 0.24; a right
    Math answer grades faster). An episode's last reply waits for ``score_reply_s`` from its
    step; a client-written task (its own answer in the log as a reward) is refused."""
    import time

    from starlette.testclient import TestClient

    from rllm_adapters.openenv import ServerLimits, create_app

    records = [{"problem": "What is 6 times 7?", "answer": "42"}]
    limits = ServerLimits(score_log=str(tmp_path / "scores.jsonl"), score_reply_s=0.3)
    app = create_app("rllm/Math-v1", env_kwargs={"dataset": records}, limits=limits)
    with TestClient(app) as http, http.websocket_connect("/ws") as ws:
        for text in ("\\boxed{42}", "\\boxed{41}"):
            ws.send_json({"type": "reset", "data": {"options": {"index": 0}}})
            ws.receive_json()
            started = time.monotonic()
            ws.send_json({"type": "step", "data": {"text": text}})
            assert ws.receive_json()["data"]["done"] is True
            assert time.monotonic() - started >= 0.3
        task = {"problem": "What is 1 plus 1?", "answer": "2"}
        ws.send_json({"type": "reset", "data": {"options": {"task": task}}})
        reply = ws.receive_json()
    assert reply["type"] == "error" and "client-written" in reply["data"]["message"]


def test_private_grading_of_a_multi_turn_env_keeps_its_feedback_and_logs_the_return(
    tmp_path,
) -> None:
    """Inside an episode a privately graded env still shows what the task needs (FrozenLake's
    board after a move); rewards and info are the client's only at the end, in the log."""
    import json

    from starlette.testclient import TestClient

    from rllm_adapters.openenv import ServerLimits, create_app

    log = tmp_path / "scores.jsonl"
    app = create_app("rllm/FrozenLake-v1", limits=ServerLimits(score_log=str(log)))
    with TestClient(app) as http, http.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 3}})
        ws.receive_json()
        steps, done = 0, False
        while not done and steps < 200:
            ws.send_json({"type": "step", "data": {"text": "Left"}})
            data = ws.receive_json()["data"]
            steps, done = steps + 1, data["done"]
            assert data["reward"] == 0.0
            assert set(data["observation"]["info"]) == {"task_id", "graded_privately"}
            assert data["observation"]["text"]  # the board while it plays
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert done and record["steps"] == steps and record["is_correct"] is False
    assert record["truncated"] or record["terminated"]


def test_a_score_log_that_cannot_be_written_fails_before_serving(tmp_path) -> None:
    from rllm_adapters.error import AdapterConfigError
    from rllm_adapters.openenv import ServerLimits

    with pytest.raises(AdapterConfigError, match="score log"):
        ServerLimits(score_log=str(tmp_path / "missing" / "scores.jsonl"))


def test_private_grading_pads_an_episodes_last_step_to_fixed_work_and_time() -> None:
    """s27 att27d: grading a right answer is less work than a wrong one, and while a thread
    grades the other sessions' replies wait for the GIL: a second session timing its own
    replies told right from wrong 0.78 of the time. An episode's last step keeps its thread
    working until ``score_work_s`` after it started, then waits for the reply's deadline;
    a step inside an episode is not held."""
    import time

    from rllm_adapters.openenv.server import _held

    def ends(text: str) -> dict:
        return {"done": True, "text": text}

    started = time.monotonic()
    payload, _ = _held(ends, "x", 0.02, started + 0.05)
    assert payload == {"done": True, "text": "x"} and time.monotonic() - started >= 0.05
    cpu = time.thread_time()
    _held(ends, "x", 0.03, 0.0)  # the work, then a deadline already past
    assert time.thread_time() - cpu > 0.002  # it worked (spun), it did not sleep the work off
    started = time.monotonic()
    _held(lambda text: {"done": False}, "x", 60.0, started + 60.0)
    assert time.monotonic() - started < 30.0  # not held (a held step would take 60 s)
