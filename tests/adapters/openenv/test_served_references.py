"""No served id names a task's hidden answer after a wrong reply (issue #31, att31 F1).

Math, Countdown and ReasoningGym each showed the reference after a wrong reply, so a client
could read a dataset's answers off and replay them on the same index for reward 1. The server
withholds them (:data:`rllm_adapters.openenv.server.SERVED_DEFAULTS`); this walks every served
id through the server's own app, steps wrong replies until the episode ends (at most 12), and
asserts that no hidden task field (:data:`rllm_envs.core.HIDDEN_TASK_FIELDS`) the question did
not already show appears in any observation or info, so the next env added cannot reopen it.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openenv.core.env_server", reason='needs `pip install "rllm-envs[openenv]"`')

from fastapi.testclient import TestClient  # noqa: E402

from rllm_adapters.openenv.environment import GymTextEnvironment, served_ids  # noqa: E402
from rllm_adapters.openenv.server import SERVED_DEFAULTS, create_app  # noqa: E402
from rllm_envs.core import HIDDEN_TASK_FIELDS  # noqa: E402

#: A wrong reply in every family's format at once.
WRONG = (
    "```python\nprint(0)\n```\nI think the answer is \\boxed{987654321} <answer>987654321</answer>"
)
INDICES = range(2)


def _strings(value, out: set[str]) -> set[str]:
    if isinstance(value, str):
        if len(value.strip()) >= 2:
            out.add(value.strip())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if abs(value) >= 10:
            out.add(str(value))
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, out)
    return out


def _hidden(env_id: str, index: int) -> tuple[set[str], str]:
    """The hidden field values of task ``index`` as the server makes it, and its first text."""
    env = GymTextEnvironment(env_id, dict(SERVED_DEFAULTS.get(env_id, {})))
    try:
        observation = env.reset(options={"index": index})
        task = getattr(env.env.unwrapped, "task", None)
        values: set[str] = set()
        for key in HIDDEN_TASK_FIELDS - {"id", "client_id"}:
            if isinstance(task, dict) and key in task:
                _strings(task[key], values)
        return values, observation.text + json.dumps(observation.info)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", list(served_ids()))
def test_a_wrong_reply_through_the_server_shows_no_hidden_answer(env_id):
    with TestClient(create_app(env_id)) as client, client.websocket_connect("/ws") as ws:
        for index in INDICES:
            hidden, first = _hidden(env_id, index)
            hidden = {value for value in hidden if value not in first}
            ws.send_json({"type": "reset", "data": {"options": {"index": index}}})
            reply = ws.receive_json()
            assert reply["type"] == "observation", reply
            seen = ""
            for _ in range(12):
                ws.send_json({"type": "step", "data": {"text": WRONG}})
                reply = ws.receive_json()
                assert reply["type"] == "observation", reply
                observation = reply["data"]["observation"]
                info = observation.get("info") or {}
                assert info.get("reference_answer") is None, (env_id, index)
                seen += observation["text"] + json.dumps(info)
                if reply["data"].get("done"):
                    break
            leaked = sorted(value for value in hidden if value in seen)
            assert not leaked, (env_id, index, leaked[:3])


def test_reasoning_gym_is_served_without_references():
    assert SERVED_DEFAULTS["rllm/ReasoningGym-v0"] == {"reveal_reference": False}


#: Every served id with a procedural universe (a ``task_seed`` kwarg).
ENV_FL = "rllm/FrozenLake-v1"
SEEDED = ["rllm/Math-v1", "rllm/Countdown-v1", "rllm/Search-v1", "rllm/ToolUse-v1", ENV_FL]
PRIVATE_SEED = 8_675_309_123


@pytest.mark.parametrize("env_id", SEEDED)
def test_an_operators_seed_never_reaches_a_client(env_id):
    """att31s24 F1: the operator's private ``task_seed`` was in ``state.env_kwargs`` and in every
    task id (``math-d1-s<seed>-<i>``); a client rebuilt the env from the public package with it
    and answered with the env's own oracle: 20 of 20 paid on Math, Countdown and Search."""
    import rllm_envs

    kwargs = {"task_seed": PRIVATE_SEED}
    app = create_app(env_id, env_kwargs=kwargs)
    seen, ids = "", []
    with TestClient(app) as client:
        for _ in range(2):  # two sessions: one task, one id
            with client.websocket_connect("/ws") as ws:
                for index in (3, 4):
                    ws.send_json({"type": "reset", "data": {"options": {"index": index}}})
                    reply = ws.receive_json()
                    ids.append(reply["data"]["observation"]["info"]["task_id"])
                    ws.send_json({"type": "step", "data": {"text": WRONG}})
                    step = ws.receive_json()
                    ws.send_json({"type": "state"})
                    state = ws.receive_json()["data"]
                    assert state["env_kwargs"]["task_seed"] == "<withheld>"
                    assert state["task_id"] == ids[-1]
                    if step["type"] == "observation":
                        assert step["data"]["observation"]["info"]["task_id"] == ids[-1]
                    seen += json.dumps([reply, step, state])
    assert str(PRIVATE_SEED) not in seen
    assert ids[0] == ids[2] and ids[1] == ids[3] and ids[0] != ids[1]  # stable, one per task
    local = rllm_envs.make(env_id, **kwargs)  # what the operator's env names the task
    assert local.reset(options={"index": 3})[1]["task_id"] not in seen
    local.close()


def test_without_an_operators_seed_task_ids_are_the_envs_own():
    """The default universe is public (the package makes it): its ids stay readable."""
    with TestClient(create_app(ENV_FL)) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"options": {"index": 0}}})
        info = ws.receive_json()["data"]["observation"]["info"]
    assert info["task_id"].startswith("frozenlake-")


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("rllm/ReasoningGym-v0", {"task_seed": PRIVATE_SEED}),
        ("rllm/Search-v1", {"kb_seed": PRIVATE_SEED}),
        ("rllm/Math-v1", {"task_seed": PRIVATE_SEED}),
    ],
)
def test_an_error_message_does_not_name_the_operators_seed(env_id, kwargs):
    """att31t F1/F2: a bad index's error named the task source, and ReasoningGym's and
    Search's source names spell out their seed (``reasoning-gym-basic_arithmetic-s<seed>``,
    ``search-kb<kb_seed>x200-d2``): 24 of 24 and 12 of 12 paid from the rebuilt env."""
    with TestClient(create_app(env_id, env_kwargs=kwargs)) as client:
        with client.websocket_connect("/ws") as ws:
            for options in ({"index": -1}, {"index": 10**30}, {"nope": 1}):
                ws.send_json({"type": "reset", "data": {"options": options}})
                reply = ws.receive_json()
                assert reply["type"] == "error", reply
                assert str(PRIVATE_SEED) not in json.dumps(reply), reply
        reply = client.post("/reset", json={"options": {"index": -1}})
        assert reply.status_code == 422 and str(PRIVATE_SEED) not in reply.text
