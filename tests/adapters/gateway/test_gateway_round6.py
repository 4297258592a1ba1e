"""The gateway against the blind round of session 18 (issue #29, att29h): a scored session's
sample counts as failed from the moment it opens until its episode is stored, and a run's
scored sessions keep one model.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import pytest

from .test_gateway_record import ALICE, CALL, StandInEngine, _task_prompt, _test_client

pytest.importorskip("starlette")
pytest.importorskip("httpx")

MATH = "rllm/Math-v1"


def test_sessions_left_open_count_as_failed_samples_while_the_gateway_runs(tmp_path):
    """att29h F1: score the right replies, leave every wrong session open: pass@1 read from
    the store while the gateway ran was 1.0 for a skill of 0.30 (tasks without a right reply
    were not even counted)."""
    from rllm_agents.store import EpisodeStore

    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        for seed, text in [(0, "\\boxed{455}"), (0, "\\boxed{1}"), (1, "\\boxed{1}")]:
            opened = app.post("/sessions", json={"env_id": MATH, "seed": seed}, headers=ALICE)
            assert opened.status_code == 201, opened.text
            sid = opened.json()["session_id"]
            engine.text = text
            call = {**CALL, "prompt": _task_prompt(MATH, seed)}
            assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
            if text == "\\boxed{455}":  # seed 0's answer: scored; the wrong ones stay open
                r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
                assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
        with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
            (row,) = store.pass_at_k(ks=(1,)).values()
            assert len(store.pending()) == 2
        assert (row["tasks"], row["samples"], row["pending"]) == (2, 3, 2), row
        assert row["pass@1"] == pytest.approx(0.25)  # task 0: 1 of 2, task 1: 0 of 1 (of 2)
        with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
            # att29i A1: a model filter kept only the stored (right) samples: 1.0 again.
            (by_model,) = store.pass_at_k(ks=(1,), model=CALL["model"]).values()
            assert by_model["pending"] == 2 and by_model["pass@1"] == pytest.approx(0.25)
            # A filter on an episode's outcome leaves the open samples out, and says so.
            (row,) = store.pass_at_k(ks=(1,), correct=True).values()
        assert row["pending"] == 0
    finally:
        app.__exit__(None, None, None)  # shutdown stores the open ones: nothing pending
    with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
        (row,) = store.pass_at_k(ks=(1,)).values()
        assert store.pending() == {}
    assert (row["tasks"], row["samples"], row["pending"]) == (2, 3, 0), row
    assert row["pass@1"] == pytest.approx(0.25)


def test_a_sample_lost_with_the_gateway_stays_a_failure(tmp_path):
    """A gateway killed with scored sessions open loses their episodes, not their samples."""
    from rllm_agents.store import EpisodeStore

    with EpisodeStore(tmp_path / "s.db") as store:
        store.open_pending("alice/s1/x", run="r", env_id=MATH, task_id="t0")
        row = store.pass_at_k(ks=(1,))["r|" + MATH]
        assert (row["tasks"], row["samples"], row["pending"], row["pass@1"]) == (1, 1, 1, 0.0)
        assert store.pass_at_k(ks=(1,), run="other") == {}
        with pytest.raises(Exception, match="non-empty str"):
            store.open_pending("", run="r", env_id=MATH, task_id="t0")


def test_a_runs_scored_sessions_keep_one_model(tmp_path):
    """att29h F2: one run's scored sessions on a weak and a strong model reported their
    blend (0.6 for 0.3 and 0.9); with greedy previews a client picks the model per task."""
    app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}})
    try:
        call = {**CALL, "prompt": _task_prompt(MATH, 0)}

        def scored_call(model, run=None):
            fields = {"env_id": MATH, "seed": 0, **({"run": run} if run else {})}
            sid = app.post("/sessions", json=fields, headers=ALICE).json()["session_id"]
            body = {**call, "model": model}
            return app.post(f"/sessions/{sid}/v1/completions", json=body, headers=ALICE)

        assert scored_call(CALL["model"]).is_success
        r = scored_call("another-model")
        assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed", r.text
        assert "model" in r.json()["error"]["message"]
    finally:
        app.__exit__(None, None, None)


def test_a_run_named_none_keeps_apart_from_the_unnamed_run(tmp_path):
    """att29i A2: pass@k was keyed f"{run}|{env}": a client's run "None" replaced the row of
    the operator's unnamed run (0.25 over 40 tasks hidden behind 1.0 over 1)."""
    from rllm_agents.store import EpisodeStore

    with EpisodeStore(tmp_path / "s.db") as store:
        store.open_pending("a", run=None, env_id=MATH, task_id="t0")
        store.open_pending("b", run="None", env_id=MATH, task_id="t1")
        table = store.pass_at_k(ks=(1,))
    assert set(table) == {f"None|{MATH}", f'"None"|{MATH}'}
    assert [row["run"] for row in table.values()] == [None, "None"]


def test_a_runs_token_limit_is_fixed_by_its_first_scored_call(tmp_path):
    """att29i A4: a greedy reply previewed off the record, then a scored call whose
    max_tokens ended it right after a right box that a wrong one followed: 0.31 -> 0.59."""
    app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}})
    try:
        call = {**CALL, "prompt": _task_prompt(MATH, 0), "temperature": 0}

        def scored_call(**fields):
            sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE).json()
            url = f"/sessions/{sid['session_id']}/v1/completions"
            return app.post(url, json={**call, **fields}, headers=ALICE)

        assert scored_call().is_success
        r = scored_call(max_tokens=CALL["max_tokens"] - 1)
        assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed", r.text
        assert "max_tokens" in r.json()["error"]["message"]
    finally:
        app.__exit__(None, None, None)


def test_a_runs_sampling_pin_lives_in_the_store(tmp_path):
    """att29i A3: the pin lived in memory and a side file: two gateways on one store (or a
    store restored without the file) let one run mix greedy and sampled calls (0.44 for 0.30)."""
    from rllm_adapters.gateway.sessions import SessionRegistry
    from rllm_agents.store import EpisodeStore

    with EpisodeStore(tmp_path / "e.db") as one, EpisodeStore(tmp_path / "e.db") as two:
        first = SessionRegistry(one, run=None, max_sessions=4, model=None)
        second = SessionRegistry(two, run=None, max_sessions=4, model=None)
        assert first.pin_sampling("r", "sampled") == "sampled"
        assert second.pin_sampling("r", "greedy") == "sampled"
        assert second.pin_sampling("other", "greedy") == "greedy"
        assert first.pin_sampling("other", "sampled") == "greedy"
    # An older gateway's side file moves into the store: the store's pin wins.
    side = tmp_path / "e.db.runs.json"
    side.with_suffix(".sampling").write_text('["old", "greedy"]\n["r", "greedy"]\n')
    with EpisodeStore(tmp_path / "e.db") as store:
        again = SessionRegistry(store, run=None, max_sessions=4, model=None, claims_path=side)
        assert again.pin_sampling("old", "sampled") == "greedy"
        assert again.pin_sampling("r", "greedy") == "sampled"


def test_a_run_claim_lives_in_the_store(tmp_path):
    """A claim kept in one gateway's memory and side file: a second gateway on the same store
    gave a run claimed (nothing stored yet) by alice to bob, and both recorded into it."""
    from rllm_adapters.gateway.sessions import SessionError, SessionRegistry
    from rllm_agents.store import EpisodeStore

    clients = ["alice", "bob"]
    with EpisodeStore(tmp_path / "e.db") as one, EpisodeStore(tmp_path / "e.db") as two:
        first = SessionRegistry(
            one, run=None, max_sessions=4, model=None, clients=clients,
            claims_path=tmp_path / "first.runs.json",
        )  # fmt: skip
        second = SessionRegistry(
            two, run=None, max_sessions=4, model=None, clients=clients,
            claims_path=tmp_path / "second.runs.json",
        )  # fmt: skip
        first.create("alice", fields={"run": "shared"})
        with pytest.raises(SessionError) as refused:
            second.create("bob", fields={"run": "shared"})
        assert refused.value.status == 403
        second.create("alice", fields={"run": "shared"})  # its owner, through either gateway
        second.create("bob", fields={"run": "bobs"})
        with pytest.raises(SessionError):
            first.create("alice", fields={"run": "bobs"})


def test_default_runs_and_case_lookalikes_hold_across_gateways(tmp_path):
    """s20 att29l (from the code): a client's default run `<--run>:<client>` was reserved only
    in its gateway's memory, so a gateway on the same store started with another `--run` let
    its client claim it; a look-alike by case of a run another gateway claimed after start was
    not seen."""
    from rllm_adapters.gateway.sessions import SessionError, SessionRegistry
    from rllm_agents.store import EpisodeStore

    clients = ["alice", "bob"]
    with EpisodeStore(tmp_path / "e.db") as one, EpisodeStore(tmp_path / "e.db") as two:
        first = SessionRegistry(one, run="X", max_sessions=4, model=None, clients=clients)
        second = SessionRegistry(two, run="Y", max_sessions=4, model=None, clients=clients)
        first.load_runs()
        second.load_runs()
        with pytest.raises(SessionError) as refused:
            second.create("bob", fields={"run": "X:alice"})
        assert refused.value.status == 403
        second.create("alice", fields={"run": "X:alice"})
        first.create("bob", fields={"run": "Shared"})
        with pytest.raises(SessionError):
            second.create("alice", fields={"run": "shared"})
