"""The gateway against the third blind attack (issue #29, session 16, att29c F1-F5): a
session opened on a scorer's task is stored under that task however it ends, calls in flight
count against the byte bounds, a reward cut by shutdown leaves its session to be stored,
bodies are UTF-8 only, and client metadata cannot fill the store's own columns.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from .test_gateway_record import (
    ALICE,
    BOB,
    CALL,
    StandInEngine,
    _episodes,
    _Served,
    _server,
    _task_prompt,
    _test_client,
)

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

MATH = "rllm/Math-v1"


def test_a_session_on_a_scorers_task_is_stored_under_it_however_it_ends(tmp_path):
    """att29c F1: only a scored reward wrote the task id, so a client scored its right
    replies and ended its wrong ones with a number (or left them to idle/shutdown): those
    were filed under ``group-<n>``, and pass@1 of the task read 1.0 for a true 0.25. Now the
    task id is fixed when the session opens, and every sample counts."""
    from rllm_agents.store import EpisodeStore

    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    call = {**CALL, "prompt": _task_prompt(MATH, 0)}  # seed 0's answer is 455
    try:
        for i, (text, reward) in enumerate(
            [
                ("\\boxed{455}", {"env": MATH}),
                ("\\boxed{451}", {"reward": 0.0}),
                ("\\boxed{452}", {"reward": 1.0}),
                ("\\boxed{453}", None),  # left open: stored at shutdown
            ]
        ):
            opened = app.post(
                "/sessions", json={"env_id": MATH, "seed": 0, "sample": i}, headers=ALICE
            )
            assert opened.status_code == 201, opened.text
            sid = opened.json()["session_id"]
            info = app.get(f"/sessions/{sid}", headers=ALICE).json()
            assert info["task_id"] is not None  # known before any call
            engine.text = text
            assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
            if reward is not None:
                r = app.post(f"/sessions/{sid}/reward", json=reward, headers=ALICE)
                assert r.status_code == 200, r.text
        # A task id the client names must be the task's.
        r = app.post(
            "/sessions", json={"env_id": MATH, "seed": 0, "task_id": "other"}, headers=ALICE
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "task_mismatch", r.text
    finally:
        app.__exit__(None, None, None)
    episodes = _episodes(tmp_path / "e.db")
    assert len(episodes) == 4
    assert len({e.trajectory.task_id for e in episodes}) == 1
    assert None not in {e.trajectory.task_id for e in episodes}
    with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
        (row,) = store.pass_at_k(ks=(1,)).values()
    assert row["tasks"] == 1 and row["samples"] == 4
    assert row["pass@1"] == pytest.approx(0.25)


def test_calls_in_flight_count_against_the_byte_bounds(tmp_path):
    """att29c F3: ``max_session_bytes`` was checked against what was already recorded, so 20
    calls of 300 kB sent at once all passed a 1 MB bound (6 MB recorded). Calls in flight
    now hold their bytes from the moment they are sent."""
    engine = _Served(StandInEngine(text="ab", hold_after=1).app)
    server = _server(tmp_path, engine.url, max_session_bytes=1_000_000)
    base = f"http://127.0.0.1:{server.port}"
    sid = httpx.post(f"{base}/sessions", json={}, headers=ALICE).json()["session_id"]
    body = {**CALL, "prompt": "x" * 300_000, "stream": True}
    held: list[int] = []
    stop = threading.Event()

    def hold() -> None:  # a stream read to its first chunk, then held open
        with httpx.stream(
            "POST", f"{base}/sessions/{sid}/v1/completions", json=body, headers=ALICE, timeout=30
        ) as r:
            held.append(r.status_code)
            stop.wait(30)

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(3)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while len(held) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held == [200, 200, 200]
        # 3 x 300 kB in flight: a fourth does not fit in 1 MB, before any was recorded.
        r = httpx.post(
            f"{base}/sessions/{sid}/v1/completions", json=body, headers=ALICE, timeout=30
        )
        assert r.status_code == 409 and r.json()["error"]["code"] == "session_full", r.text
        session = next(iter(server.gateway.sessions.sessions.values()))
        assert session.record_bytes < 1000 and session.reserved_bytes > 900_000
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        server.stop()
        engine.stop()
    # The held streams were recorded (aborted) and gave their reservations back.
    assert session.reserved_bytes == 0
    assert server.gateway.sessions._reserved_by_owner == {}


@pytest.mark.parametrize("reward", [{"reward": 1.0}, {"env": MATH}])
def test_a_reward_waiting_on_a_stream_at_shutdown_leaves_the_session_to_be_stored(tmp_path, reward):
    """att29c F4: a reward sent while the session's stream ran claimed the session and
    waited; shutdown skipped it as ended, the grace period cut the reward, and nothing was
    stored (0 episodes, for number and scored rewards alike)."""
    engine = _Served(StandInEngine(text="\\boxed{455} done", hold_after=3).app)
    server = _server(tmp_path, engine.url, scorers={MATH: {}}, shutdown_grace_s=1)
    base = f"http://127.0.0.1:{server.port}"
    prompt = _task_prompt(MATH, 0)
    sid = httpx.post(f"{base}/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE).json()[
        "session_id"
    ]
    call = {**CALL, "prompt": prompt}
    assert httpx.post(
        f"{base}/sessions/{sid}/v1/completions", json=call, headers=ALICE, timeout=30
    ).is_success

    def stream() -> None:
        try:
            with httpx.stream(
                "POST",
                f"{base}/sessions/{sid}/v1/completions",
                json={**call, "stream": True},
                headers=ALICE,
                timeout=30,
            ) as r:
                for _ in r.iter_lines():
                    pass
        except httpx.HTTPError:
            pass  # cut at shutdown

    def send_reward() -> None:
        try:
            httpx.post(f"{base}/sessions/{sid}/reward", json=reward, headers=ALICE, timeout=30)
        except httpx.HTTPError:
            pass

    threads = [threading.Thread(target=stream), threading.Thread(target=send_reward)]
    try:
        threads[0].start()
        time.sleep(1.0)
        threads[1].start()
        time.sleep(1.0)
    finally:
        server.stop()
        for t in threads:
            t.join(10)
        engine.stop()
    (episode,) = _episodes(tmp_path / "e.db")
    assert len(episode.trajectory.steps) == 2  # both calls, the cut stream marked aborted
    assert episode.trajectory.metadata["aborted_calls"] == 1
    assert episode.trajectory.task_id is not None


def test_a_body_is_utf8_json_only(tmp_path):
    """att29c F2: ``json.loads`` took UTF-16/32 bodies, whose lone surrogates no escape check
    saw: such a session could never be stored (500 on every reward, each with a traceback)."""
    app = _test_client(tmp_path, StandInEngine())
    try:
        text = '{"metadata": {"k": "\ud800"}}'
        for encoding in ("utf-16", "utf-32", "utf-16-le"):
            r = app.post(
                "/sessions",
                content=text.encode(encoding, "surrogatepass"),
                headers={**ALICE, "content-type": "application/json"},
            )
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", r.text
        r = app.post(
            "/sessions",
            content=json.dumps({"metadata": {"k": "é"}}, ensure_ascii=False).encode(),
            headers={**ALICE, "content-type": "application/json"},
        )
        assert r.status_code == 201, r.text
    finally:
        app.__exit__(None, None, None)


def test_client_metadata_cannot_fill_the_stores_columns_nor_take_a_future_clients_run(
    tmp_path,
):
    """att29c F5: ``metadata.env_kwargs`` and ``*_s`` keys became the store's ``env_kwargs``
    and ``timings`` columns; and ``GATEWAY:carol`` (a client not configured yet) was free to
    take, the reservation being case-sensitive."""
    app = _test_client(tmp_path, StandInEngine())
    try:
        for metadata in ({"env_kwargs": {"difficulty": 5}}, {"generation_s": 1e9}):
            r = app.post("/sessions", json={"metadata": metadata}, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session", r.text
        for run in ("GATEWAY:carol", "Gateway:alice", "gateway:carol"):
            r = app.post("/sessions", json={"run": run}, headers=BOB)
            assert r.status_code == 403, (run, r.text)
        assert app.post("/sessions", json={"metadata": {"note": 1}}, headers=ALICE).is_success
    finally:
        app.__exit__(None, None, None)


def test_a_repeated_internal_error_logs_one_traceback_a_minute(tmp_path, caplog):
    """att29c F2: each 500 logged a full traceback, so a client repeating one flooded the log."""
    app = _test_client(tmp_path, StandInEngine())
    try:

        def broken(*args, **kwargs):
            raise RuntimeError("a bug")

        app.gateway.sessions.get = broken
        with caplog.at_level("ERROR", logger="rllm_adapters.gateway.app"):
            for _ in range(5):
                r = app.get("/sessions/s1", headers=ALICE)
                assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
        assert sum(record.exc_info is not None for record in caplog.records) == 1
    finally:
        app.__exit__(None, None, None)


# ------------------------------------------------------------------ att29d (round 4)


def test_what_parsed_metadata_and_bodies_hold_counts_against_the_bounds(tmp_path):
    """att29d M1: 60 kB of ``[{}, {}, ...]`` metadata holds about 1 MB in Python, and a 4 MiB
    chat body of ``{}`` objects about 72 MB; only their lengths counted, so a client's 1 GiB
    allowance held about 18 GB."""
    app = _test_client(tmp_path, StandInEngine(), max_bytes_per_client=3_000_000)
    try:
        metadata = {"notes": [{} for _ in range(10_000)]}  # 30 kB as JSON
        codes = [
            app.post("/sessions", json={"metadata": metadata}, headers=ALICE).status_code
            for _ in range(6)
        ]
        # By their JSON length a hundred would fit in 3 MB; as held (about 0.7 MB each), four.
        assert codes[0] == 201 and codes[-1] == 429, codes
        assert app.post("/sessions", json={}, headers=BOB).status_code == 201
    finally:
        app.__exit__(None, None, None)
    app = _test_client(tmp_path / "b", StandInEngine(), max_session_bytes=1_000_000)
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        body = {**CALL, "stop": None, "logit_bias": None, "user": [{} for _ in range(20_000)]}
        r = app.post(f"/sessions/{sid}/v1/completions", json=body, headers=ALICE)
        assert r.status_code in (400, 409), r.text  # never recorded as 60 kB
        session = app.gateway.sessions.sessions["alice", sid]
        assert session.calls == []
    finally:
        app.__exit__(None, None, None)


def test_shutdown_stores_small_sessions_before_large_ones(tmp_path):
    """att29d M2: shutdown stored sessions in opening order, so one client's large records
    (11.5 s of stores) pushed a later client's small session past a supervisor's kill."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine)
    try:
        big = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        ids = {**CALL, "prompt": list(range(1000, 3000))}
        for _ in range(3):
            assert app.post(f"/sessions/{big}/v1/completions", json=ids, headers=ALICE).is_success
        small = app.post("/sessions", json={}, headers=BOB).json()["session_id"]
        assert app.post(f"/sessions/{small}/v1/completions", json=CALL, headers=BOB).is_success
    finally:
        app.__exit__(None, None, None)  # shutdown stores both
    order = [e.trajectory.metadata["session_id"] for e in _episodes(tmp_path / "e.db")]
    assert order == [small, big]


def test_a_runs_sampling_is_fixed_by_its_first_call(tmp_path):
    """att29d M3: a client previewed the greedy reply off the record and recorded greedy calls
    only where it was right, sampling elsewhere: pass@1 1.0 for a chosen mix of samples."""
    app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}})
    try:
        task = {"env_id": MATH, "seed": 0}
        call = {**CALL, "prompt": _task_prompt(MATH, 0)}
        greedy = {**call, "temperature": 0}

        def open_session(**fields):
            r = app.post("/sessions", json={**task, **fields}, headers=ALICE)
            return f"/sessions/{r.json()['session_id']}/v1/completions"

        assert app.post(open_session(), json=call, headers=ALICE).is_success
        r = app.post(open_session(), json=greedy, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed", r.text
        # Another run takes greedy scored calls, and only those.
        url = open_session(run="eval-greedy")
        assert app.post(url, json=greedy, headers=ALICE).is_success
        r = app.post(open_session(run="eval-greedy"), json=call, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed", r.text
        # A session the client rewards itself (no scorer task) may sample either way.
        plain = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        for body in (CALL, {**CALL, "temperature": 0}):
            r = app.post(f"/sessions/{plain}/v1/completions", json=body, headers=ALICE)
            assert r.is_success, r.text
    finally:
        app.__exit__(None, None, None)


def test_malformed_stop_ids_session_ids_and_lookups_beyond_the_scoring_cap_answer_4xx(tmp_path):
    """att29d L1-L3: ``stop_token_ids: 5`` was a 500; ``s1\n`` was a session id apart from
    ``s1``; a client's task lookups at open ran beyond its scoring cap."""
    app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}}, max_scoring_per_client=1)
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        for stops in (5, [[1]], "ab", {"a": 1}, [-1], [True]):
            body = {**CALL, "stop_token_ids": stops}
            r = app.post(f"/sessions/{sid}/v1/completions", json=body, headers=ALICE)
            assert r.status_code == 400, (stops, r.text)
        for bad in ("s1\n", "s1\n\n"):
            r = app.post("/sessions", json={"session_id": bad}, headers=ALICE)
            assert r.status_code == 400, r.text
        r = app.get("/sessions/s1%0A", headers=ALICE)
        assert r.status_code == 400, r.text
        app.gateway._scoring["alice"] = 1  # one scoring of alice's running
        r = app.post("/sessions", json={"env_id": MATH, "seed": 5}, headers=ALICE)
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_scorings"
        assert app.post("/sessions", json={"env_id": MATH, "seed": 5}, headers=BOB).is_success
    finally:
        app.__exit__(None, None, None)


def test_a_runs_sampling_mode_survives_a_restart(tmp_path):
    """att29e F3: the greedy/sampled pin was in memory only: after a restart on the same
    store, greedy scored calls joined a sampled run again."""
    call = {**CALL, "prompt": _task_prompt(MATH, 0)}
    for attempt in range(2):
        app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}})
        try:
            sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE).json()
            url = f"/sessions/{sid['session_id']}/v1/completions"
            body = call if attempt == 0 else {**call, "temperature": 0}
            r = app.post(url, json=body, headers=ALICE)
            if attempt == 0:
                assert r.is_success, r.text
            else:
                assert r.status_code == 400, r.text
                assert r.json()["error"]["code"] == "sampling_changed"
        finally:
            app.__exit__(None, None, None)


def test_a_reply_that_could_not_be_recorded_leaves_its_session_unscorable(tmp_path, monkeypatch):
    """att29f F1: a streamed reply that broke the recording (a tool-call bracket bomb made the
    parser raise) reached the client but not the record: the client called again until a
    reply was right and had that scored as the first try (pass@1 0.81 against 0.32)."""
    from rllm_adapters.gateway import sessions as sessions_module
    from rllm_adapters.gateway.chat import parse_tool_calls

    # The parser itself no longer raises on any reply.
    bomb = "<tool_call>" + "[" * 5000 + "</tool_call>"
    assert parse_tool_calls(bomb)[1] == []
    assert parse_tool_calls("<tool_call>" + "9" * 5000 + "</tool_call>")[1] == []

    engine = StandInEngine(text="\\boxed{450}")
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    call = {**CALL, "prompt": _task_prompt(MATH, 0), "stream": True}  # seed 0: 455
    real = sessions_module.SessionRegistry.record
    fail = {"left": 1}

    def flaky(self, session, call, size=0):
        if fail["left"]:
            fail["left"] -= 1
            raise RuntimeError("a recording failure of any kind")
        return real(self, session, call, size)

    monkeypatch.setattr(sessions_module.SessionRegistry, "record", flaky)
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE).json()[
            "session_id"
        ]
        r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE)
        assert r.status_code == 200 and "[DONE]" in r.text  # the client saw the whole reply
        engine.text = "\\boxed{455}"
        r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE)
        assert r.status_code == 200
        r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "unrecorded_call", r.text
    finally:
        app.__exit__(None, None, None)
    (episode,) = _episodes(tmp_path / "e.db")
    assert not episode.is_correct and episode.trajectory.metadata["unrecorded_calls"] == 1


def test_a_runs_stop_strings_are_fixed_by_its_first_scored_call(tmp_path):
    """att29g: a client that knows a task's answer sent stop strings cutting every wrong box
    out of the policy's reply (keeping the right one): pass@1 0.33 -> 0.49. Stop strings and
    stop token ids are now the run's, pinned with its sampling; and bounded."""
    engine = StandInEngine(text="\\boxed{455}")
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    call = {**CALL, "prompt": _task_prompt(MATH, 0)}

    def scored_call(run, headers=ALICE, **fields):
        sid = app.post(
            "/sessions", json={"env_id": MATH, "seed": 0, "run": run}, headers=headers
        ).json()["session_id"]
        return app.post(f"/sessions/{sid}/v1/completions", json={**call, **fields}, headers=headers)

    try:
        assert scored_call("r1", stop=["</answer>"]).status_code == 200
        assert scored_call("r1", stop="</answer>").status_code == 200  # the same cut
        for fields in ({"stop": ["\\boxed{4550", "\\boxed{456"]}, {}, {"stop_token_ids": [7]}):
            r = scored_call("r1", **fields)
            assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed"
        # Another run of the same client has the same cuts (s28 att28a: a run per task let a
        # client cut each task its own way); another client has its own.
        r = scored_call("r2")
        assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed"
        assert scored_call("r2", stop=["</answer>"]).status_code == 200
        assert scored_call("r4", BOB).status_code == 200  # bob's run: no stop strings
        for bad in ({"stop": ["x"] * 17}, {"stop": "y" * 65}, {"stop_token_ids": list(range(17))}):
            r = scored_call("r3", **bad)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", bad
    finally:
        app.__exit__(None, None, None)
