"""Gateway, blind round of session 28 (issue #29, att28a): a client's pins hold in all its runs.

att28a F1 (medium): a run's framing and sampling pins are set by its first scored session, and
a client names its runs: previewing a greedy reply off the record under 10 wordings per task
and opening each task in a run of its own, worded as its right reply was, paid 12 of 12 tasks
(an honest client, one wording: 3 of 12; the same picks in one run: 3, the rest refused). A
keyed client's scored sessions of an env now keep one framing, and per sampling mode one set
of cuts and one model, in every run.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import pytest

from .test_gateway_record import ALICE, BOB, CALL, StandInEngine, _task_prompt, _test_client
from .test_gateway_round7 import MATH

pytest.importorskip("starlette")
pytest.importorskip("httpx")

ANSWERS = {0: "455", 1: "11", 2: None}


def _scored(app, engine, seed, prompt, run, headers=ALICE, **fields):
    """One scored completions session whose reply is the right box; the reward response."""
    r = app.post("/sessions", json={"env_id": MATH, "seed": seed, "run": run}, headers=headers)
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    engine.text = f"\\boxed{{{ANSWERS.get(seed) or 0}}}"
    call = {**CALL, "prompt": prompt, "temperature": 0, **fields}
    r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=headers)
    if not r.is_success:
        return r
    return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=headers)


def _code(response):
    return response.json()["error"]["code"] if response.status_code >= 400 else "ok"


def test_a_run_per_task_does_not_let_a_client_word_each_task_its_own_way(tmp_path):
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    prompts = {seed: _task_prompt(MATH, seed) for seed in (0, 1)}
    try:
        assert _scored(app, engine, 0, prompts[0], run="alice-0").json()["reward"] == 1.0
        # Another wording of the next task, in a run of its own: not graded, a failed sample.
        r = _scored(app, engine, 1, f"Q: {prompts[1]}\nA:", run="alice-1")
        assert (r.status_code, _code(r)) == (409, "framing_changed"), r.text
        # The client's own framing in yet another run is graded.
        assert _scored(app, engine, 1, prompts[1], run="alice-2").json()["reward"] == 1.0
        # Another client has its own harness.
        r = _scored(app, engine, 1, f"Q: {prompts[1]}\nA:", run="bob-1", headers=BOB)
        assert r.json()["reward"] == 1.0, r.text
        r = _scored(app, engine, 0, prompts[0], run="bob-2", headers=BOB)
        assert (r.status_code, _code(r)) == (409, "framing_changed"), r.text
    finally:
        app.__exit__(None, None, None)
    # The pins are kept in the store: a restarted gateway keeps each client's framing.
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        r = _scored(app, engine, 0, f"Q: {prompts[0]}\nA:", run="alice-3")
        assert (r.status_code, _code(r)) == (409, "framing_changed"), r.text
    finally:
        app.__exit__(None, None, None)


def test_a_run_per_task_does_not_let_a_client_cut_or_pick_the_model_per_task(tmp_path):
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    prompt = _task_prompt(MATH, 0)
    try:
        assert _code(_scored(app, engine, 0, prompt, run="g1", stop=["</answer>"])) == "ok"
        others = [{}, {"stop": ["\\boxed{456"]}, {"max_tokens": 8}, {"model": "other"}]
        for k, fields in enumerate(others):
            r = _scored(app, engine, 0, prompt, run=f"g-{k}", **fields)
            assert (r.status_code, _code(r)) == (400, "sampling_changed"), (fields, r.text)
        # Sampled runs (training) next to greedy ones (evaluation): each mode its own cuts.
        r = _scored(app, engine, 0, prompt, run="s1", temperature=1.0)
        assert _code(r) == "ok", r.text
        r = _scored(app, engine, 0, prompt, run="s2", temperature=1.0, stop=["</answer>"])
        assert (r.status_code, _code(r)) == (400, "sampling_changed"), r.text
        r = _scored(app, engine, 0, prompt, run="b1", headers=BOB)  # bob: no stop strings
        assert _code(r) == "ok", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_keyless_gateways_runs_may_each_try_another_harness(tmp_path):
    # One local client, the operator: its runs are its experiments (a harness, cuts or model
    # each), pinned per run as before.
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, api_keys={})
    prompts = {seed: _task_prompt(MATH, seed) for seed in (0, 1)}
    try:
        assert _scored(app, engine, 0, prompts[0], run="plain").json()["reward"] == 1.0
        r = _scored(app, engine, 1, f"Q: {prompts[1]}\nA:", run="qa")
        assert r.json()["reward"] == 1.0, r.text
        r = _scored(app, engine, 1, prompts[1], run="qa")  # within a run: its framing
        assert (r.status_code, _code(r)) == (409, "framing_changed"), r.text
        assert _code(_scored(app, engine, 0, prompts[0], run="cut", stop=["</b>"])) == "ok"
    finally:
        app.__exit__(None, None, None)
