"""rllm/ReasoningGym-v0 never runs model (or client) text as code (issue #31, att31 F1-F3).

Some reasoning-gym scorers ``eval`` the answer or ``sympy.parse_expr`` it; here those families
are scored by :mod:`rllm_envs.reasoning_gym.safe_scoring`. The payloads are att31's: each
would write a marker file (and the ``__code__`` swap would pay every later junk answer 1.0)
if it ran. References still earn 1, junk and copies 0, and a wrong reply shows no reference
when ``reveal_reference=False`` (the server's default).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import rllm_envs  # noqa: E402
from rllm_envs.error import InvalidEnvConfig  # noqa: E402

ENV_ID = "rllm/ReasoningGym-v0"
LITERAL = ["string_insertion", "spiral_matrix", "binary_matrix", "n_queens"]
SYMPY = [
    "polynomial_multiplication",
    "simple_integration",
    "intermediate_integration",
    "puzzle24",
    "countdown",
]
#: Families whose scorer evals the task's reference or metadata (a custom task brings them).
REFERENCE_EVAL = ["number_sorting", "bitwise_arithmetic"]
AFFECTED = LITERAL + SYMPY + REFERENCE_EVAL
#: Families whose generators take 5-15 s to draw a test's tasks: the full suite runs them.
_SLOW_FAMILIES = {"puzzle24", "intermediate_integration"}


def _families(names):
    return [pytest.param(f, marks=[pytest.mark.slow] if f in _SLOW_FAMILIES else []) for f in names]


JUNK = "<answer>" + "banana " * 120 + "</answer>"
#: att31 F3: swaps the cached scorer's code so that any answer without the probe pays 1.0.
PATCH = (
    "setattr(type(self).score_answer, '__code__', "
    "(lambda s, a, e: 0.0 if 'qz7' in str(a) else 1.0).__code__)"
)
BOMBS = ["9**9**9", "10**1000**1000", "((10**100)**100)**100", "2**(2**(2**(2**(2**5))))"]


def _payloads(marker) -> list[str]:
    shell = f"id > {marker}"
    return [
        f"__import__('os').system('{shell}')",  # att31 F3 (eval families)
        # att31 F2 (sympy.parse_expr families): an attribute chain out of sympy's namespace
        f"lambdify.__globals__['__builtins__']['__import__']('os').system('{shell}')",
        f"[__import__('os').system('{shell}')]",
        f"open('{marker}', 'w').write('x')",
        PATCH,
    ]


def _make(family, **kwargs):
    return rllm_envs.make(ENV_ID, dataset=family, size=100, **kwargs)


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "ran"
    yield path
    assert not path.exists(), "a payload ran in the test process"


# ------------------------------------------------------------------------------ the scan


def test_every_family_whose_scorer_runs_text_is_overridden_or_refused():
    from reasoning_gym.factory import DATASETS

    from rllm_envs.reasoning_gym.safe_scoring import (
        OVERRIDES,
        UnsafeScorer,
        check_family,
        evaluating_calls,
        evaluating_families,
        safe_scorer,
    )

    found = evaluating_families()
    # The scan sees every family att31 and this fix know of (it must not go blind).
    assert set(AFFECTED) <= set(found), sorted(set(AFFECTED) - set(found))
    for family in sorted(DATASETS):
        if not evaluating_calls(family):
            continue
        if family in OVERRIDES:
            check_family(family)
            assert safe_scorer(family) is not None
            continue
        with pytest.raises(InvalidEnvConfig, match="runs the answer as code"):
            check_family(family)
        with pytest.raises(UnsafeScorer):
            safe_scorer(family)("1", {"question": "", "answer": "1", "metadata": {}})


class _FakeEvaluatingDataset:  # a stand-in dataset class for the scan only
    def _read(self, text):
        return eval(text)  # noqa: S307 - the scan must find this (never called)

    def score_answer(self, answer, entry):
        return float(self._read(answer) == entry["answer"])


class _FakeSympyDataset:  # a stand-in dataset class for the scan only
    def score_answer(self, answer, entry):
        import sympy

        return float(sympy.parse_expr(answer) == 0)


class _FakeSafeDataset:  # a stand-in dataset class for the scan only
    def score_answer(self, answer, entry):
        return float(json.loads(answer) == entry["answer"])


def test_the_scan_finds_eval_in_a_helper_method_and_sympy_parsing():
    from rllm_envs.reasoning_gym.safe_scoring import scan_scorer

    assert "eval" in scan_scorer(_FakeEvaluatingDataset)
    assert "parse_expr" in scan_scorer(_FakeSympyDataset)
    assert scan_scorer(_FakeSafeDataset) == frozenset()


def test_an_unknown_evaluating_family_is_refused_when_the_env_is_made(monkeypatch):
    """A reasoning-gym upgrade whose family starts to eval, with no override: refused."""
    from rllm_envs.reasoning_gym import safe_scoring

    monkeypatch.setattr(safe_scoring, "OVERRIDES", {})
    with pytest.raises(InvalidEnvConfig, match="runs the answer as code"):
        _make("spiral_matrix")


# ------------------------------------------------------------------ rewards still right


@pytest.mark.parametrize("family", _families(AFFECTED))
def test_references_earn_one_and_junk_and_copies_earn_nothing(family):
    env = _make(family)
    paid = 0
    for index in range(100):
        observation, _ = env.reset(options={"index": index})
        # reasoning-gym leaves some integrals unevaluated (6 of 100 intermediate_integration
        # draws): the question again, which no answer may be; such draws are replaced.
        assert "Integral(" not in env.unwrapped.task["answer"]
        _, reward, *_ = env.step(env.unwrapped.oracle_action())
        paid += reward == 1.0
        if index < 10:
            env.reset(options={"index": index})
            assert env.step(JUNK)[1] == 0.0
            question = env.unwrapped.task["question"]
            env.reset(options={"index": index})
            assert env.step(f"<answer>{question}</answer>")[1] == 0.0
    env.close()
    assert paid >= 99, (family, paid)


@pytest.mark.parametrize("family", _families(SYMPY))
def test_power_towers_and_huge_numbers_are_refused_at_once(family):
    env = _make(family)
    for bomb in BOMBS + ["1" * 5000, "x**" + "(" * 200 + "2" + ")" * 200]:
        env.reset(options={"index": 0})
        _, reward, _, _, info = env.step(f"<answer>{bomb}</answer>")
        assert reward == 0.0, (bomb, info["verdict"])
    env.close()


def test_parse_math_refuses_what_is_not_math():
    from rllm_envs.reasoning_gym.safe_scoring import UnsafeExpression, parse_math

    assert str(parse_math("3*x**2 + 2*x - 1/2")) == "3*x**2 + 2*x - 1/2"
    for text in [
        "x.__class__",
        "lambdify(x)",
        "sin.__globals__",
        "(lambda: 1)()",
        "[1, 2]",
        "'text'",
        "x[0]",
        "__import__('os')",
        "sin(x, y=1)",
        "x if x else 1",
        *BOMBS,
    ]:
        with pytest.raises(UnsafeExpression):
            parse_math(text)


# ----------------------------------------------------------------------- the payloads


@pytest.mark.parametrize("family", _families(AFFECTED))
def test_no_payload_runs_or_changes_the_scorer_in_process(family, marker):
    env = _make(family)
    for index, payload in enumerate(_payloads(marker)):
        env.reset(options={"index": index})
        _, reward, *_ = env.step(f"<answer>{payload}</answer>")
        assert reward == 0.0 and not marker.exists(), payload
    for index in range(5, 10):  # att31 F3: after the patch, junk still earns nothing
        env.reset(options={"index": index})
        assert env.step(JUNK)[1] == 0.0
    env.close()


def _custom_tasks(family, marker) -> list[dict]:
    """Client-written tasks whose reference or metadata is a payload (att31 F2b)."""
    payloads = _payloads(marker)
    env = _make(family)
    env.reset(options={"index": 0})
    task = {k: v for k, v in env.unwrapped.task.items() if k in ("question", "answer", "metadata")}
    env.close()
    task["dataset"] = family
    out = []
    for payload in payloads:
        out.append({**task, "answer": payload})
        metadata = json.loads(json.dumps(task["metadata"]))
        for key in ("problem", "integrand", "valid_answers"):
            if key in metadata:
                metadata[key] = [payload] if key == "valid_answers" else payload
        out.append({**task, "metadata": metadata})
    return out


@pytest.mark.parametrize("family", _families(AFFECTED))
def test_custom_tasks_whose_reference_is_code_run_nothing(family, marker):
    env = _make(family)
    for task in _custom_tasks(family, marker):
        env.reset(options={"task": task})
        for answer in ["<answer>[1, 2]</answer>", f"<answer>{_payloads(marker)[0]}</answer>"]:
            env.reset(options={"task": task})
            _, reward, *_ = env.step(answer)
            assert not marker.exists(), (task, answer)
    env.close()


def test_a_custom_task_must_name_the_envs_family(marker):
    """att31 F2b: the default env (basic_arithmetic) ran spiral_matrix's eval for a client."""
    env = rllm_envs.make(ENV_ID)
    task = {
        "dataset": "spiral_matrix",
        "question": "Write anything.",
        "answer": "1 2",
        "metadata": {},
    }
    with pytest.raises(InvalidEnvConfig, match="must be of its family"):
        env.reset(options={"task": task})
    named = {**task, "dataset": "basic_arithmetic", "metadata": {"source_dataset": "spiral_matrix"}}
    with pytest.raises(InvalidEnvConfig, match="must be of its family"):
        env.reset(options={"task": named})
    env.close()


def test_a_swapped_scorer_is_refused_not_trusted():
    """Defence in depth: a scorer whose code changed in the process is never called."""
    from reasoning_gym.factory import DATASETS

    cls = DATASETS["basic_arithmetic"][0]
    env = rllm_envs.make(ENV_ID)
    env.reset(options={"index": 0})
    original = cls.score_answer.__code__
    cls.score_answer.__code__ = (lambda s, a, e: 1.0).__code__
    try:
        _, reward, _, _, info = env.step(JUNK)
    finally:
        cls.score_answer.__code__ = original
    assert reward == 0.0 and info["verdict"] == "scorer_refused"
    env.close()


# ---------------------------------------------------------------------- att31 F1


def test_reveal_reference_false_withholds_the_reference():
    shown, hidden = rllm_envs.make(ENV_ID), rllm_envs.make(ENV_ID, reveal_reference=False)
    for env in (shown, hidden):
        env.reset(options={"index": 0})
    reference = shown.unwrapped.task["answer"]
    text, _, _, _, info = shown.step("<answer>I do not know 12345</answer>")
    assert reference in text and info["reference_answer"] == reference
    text, _, _, _, info = hidden.step("<answer>I do not know 12345</answer>")
    assert reference not in text and info["reference_answer"] is None
    with pytest.raises(InvalidEnvConfig, match="reveal_reference"):
        rllm_envs.make(ENV_ID, reveal_reference="no")


@pytest.mark.slow  # 7 s of sudoku generation: the full suite runs it
def test_reveal_reference_false_withholds_the_partial_score():
    """att31c H1: with the reference hidden, a served sudoku still reported its partial score
    (the share of right cells): replaying one task index and changing one cell at a time read
    the whole solution off it (reward 1.0 in 335 episodes). Hidden and unpaid, it reads 1 or 0."""

    def play(env, grid):
        env.reset(options={"index": 3})
        text = "\n".join(" ".join(str(v) for v in row) for row in grid)
        _, reward, _, _, info = env.step(f"<answer>{text}</answer>")
        return reward, info

    shown = rllm_envs.make(ENV_ID, dataset="sudoku")
    hidden = rllm_envs.make(ENV_ID, dataset="sudoku", reveal_reference=False)
    paid = rllm_envs.make(
        ENV_ID, dataset="sudoku", reveal_reference=False, reward_weights={"score": 1.0}
    )
    shown.reset(options={"index": 3})
    solution = [[int(v) for v in row.split()] for row in shown.unwrapped.task["answer"].split("\n")]
    near = [row[:] for row in solution]
    near[0][0] = near[0][0] % 9 + 1  # one cell wrong
    _, info = play(shown, near)
    assert 0.5 < info["reasoning_gym_score"] < 1.0 and 0.5 < info["reward_components"]["score"]
    reward, info = play(hidden, near)
    assert reward == 0.0 and info["reasoning_gym_score"] == 0.0
    assert info["reward_components"]["score"] == 0.0
    reward, info = play(hidden, solution)
    assert reward == 1.0 and info["reasoning_gym_score"] == 1.0
    # A score the reward pays is the reward itself: shown as the env pays it.
    reward, info = play(paid, near)
    assert 0.5 < reward < 1.0 and info["reasoning_gym_score"] == reward


def test_with_the_reference_hidden_a_wrong_replys_verdict_and_text_say_only_wrong():
    """att31d: with the partial score hidden, ``info["verdict"]`` still said ``partial`` (and
    the text "earns no more than nonsense" or "not the right one" where the scorer paid
    something): lcm's answers read off sets of candidates in 11-20 replays of one index, a
    mini_sudoku cell at a time. Hidden, every verdict decided against the reference is
    ``wrong``."""
    shown = rllm_envs.make(ENV_ID, dataset="lcm")
    hidden = rllm_envs.make(ENV_ID, dataset="lcm", reveal_reference=False)
    shown.reset(options={"index": 0})
    reference = shown.unwrapped.task["answer"]
    candidates = "|".join([reference, "17", "23"]) + "|"
    seen: dict[str, set[str]] = {"shown": set(), "hidden": set()}
    texts: set[str] = set()
    for reply in (candidates, "17|23|", f"{reference}.5", "nan", "0", reference[:-1]):
        for name, env in (("shown", shown), ("hidden", hidden)):
            env.reset(options={"index": 0})
            text, reward, _, _, info = env.step(f"<answer>{reply}</answer>")
            assert reward == 0.0
            seen[name].add(info["verdict"])
            if name == "hidden":
                texts.add(text)
                assert info["reasoning_gym_score"] == 0.0
    assert seen["shown"] - {"wrong"}  # shown: the verdicts tell these replies apart
    assert seen["hidden"] == {"wrong"} and len(texts) == 1
    hidden.reset(options={"index": 0})
    assert hidden.step("no tags")[4]["verdict"] == "no_answer"  # the reply's own fault


@pytest.mark.slow  # 5 s
def test_a_clients_propositional_logic_record_is_bounded():
    """att31d: a client's record of 24 variables made the scorer list 2^24 assignments (2.5
    GB); statements 60 and complexity 8 cost 170 s a step."""
    from rllm_envs.error import InvalidEnvConfig

    env = rllm_envs.make(ENV_ID, dataset="propositional_logic")
    env.reset(options={"index": 0})
    task = dict(env.unwrapped.task)
    task.pop("id", None)
    env.reset(options={"task": task})  # a record like the source's plays
    atoms = [f"V{i}" for i in range(24)]
    wide = {**task, "metadata": {**task["metadata"], "premises": [" ∨ ".join(atoms)]}}
    with pytest.raises(InvalidEnvConfig, match="at most"):
        env.reset(options={"task": wide})
    deep = {
        **task,
        "metadata": {**task["metadata"], "difficulty": {"statements": [2, 60], "complexity": 8}},
    }
    with pytest.raises(InvalidEnvConfig, match="at most"):
        env.reset(options={"task": deep})


# ------------------------------------------------------------------- through the server


def _server(**env_kwargs):
    pytest.importorskip("openenv.core.env_server", reason='needs "rllm-envs[openenv]"')
    from fastapi.testclient import TestClient

    from rllm_adapters.openenv.server import create_app

    return TestClient(create_app(ENV_ID, env_kwargs=env_kwargs or None))


def _call(ws, kind, data=None) -> dict:
    ws.send_json({"type": kind, "data": data or {}})
    return ws.receive_json()


@pytest.mark.parametrize(
    "family",
    # 5-6 s each: the full suite runs them.
    [
        pytest.param("spiral_matrix", marks=pytest.mark.slow),
        pytest.param("polynomial_multiplication", marks=pytest.mark.slow),
        "bitwise_arithmetic",
    ],
)
def test_through_the_server_no_payload_runs_and_no_other_client_is_paid(family, marker):
    with _server(dataset=family) as client:
        with client.websocket_connect("/ws") as victim, client.websocket_connect("/ws") as attacker:
            for task in _custom_tasks(family, marker)[:4]:
                assert (
                    _call(attacker, "reset", {"options": {"task": task}})["type"] == "observation"
                )
                for payload in _payloads(marker):
                    _call(attacker, "reset", {"options": {"task": task}})
                    reply = _call(attacker, "step", {"text": f"<answer>{payload}</answer>"})
                    assert not marker.exists(), payload
                    if payload not in json.dumps(task):  # a task's own answer may pay, as text
                        assert reply["data"]["reward"] == 0.0, payload
            for index in range(3):
                _call(victim, "reset", {"options": {"index": index}})
                assert _call(victim, "step", {"text": JUNK})["data"]["reward"] == 0.0


def test_the_default_server_refuses_a_custom_task_of_another_family(marker):
    task = {
        "dataset": "spiral_matrix",
        "question": "Write anything.",
        "answer": "1 2 3 4",
        "metadata": {},
    }
    with _server() as client, client.websocket_connect("/ws") as ws:
        reply = _call(ws, "reset", {"options": {"task": task}})
        assert reply["type"] == "error" and "family" in json.dumps(reply)
        _call(ws, "reset", {"options": {"index": 0}})
        _call(ws, "step", {"text": f"<answer>{_payloads(marker)[0]}</answer>"})


def test_the_checks_after_the_scorer_run_whatever_it_paid(monkeypatch):
    """att31f: the nonsense probe and the numeric and truncation checks ran only when the
    scorer paid something, so a served mini_sudoku's step took ~90 us longer for a partly
    right grid: replaying one index, a client solved it cell by cell from step times (reward
    1.0, every probe 'wrong' and 0.0). They now run for every reply that is not the reference
    (the probe's score cached per task), so a partly right reply does the same work."""
    from rllm_envs.reasoning_gym import scoring

    calls: list[str] = []
    for name in ("_nonsense_score", "_numeric_mismatch", "_truncated", "_normal"):
        real = getattr(scoring, name)
        monkeypatch.setattr(
            scoring, name, lambda *a, _n=name, _f=real: (calls.append(_n), _f(*a))[1]
        )
    monkeypatch.setattr(scoring, "_NONSENSE", {})
    env = rllm_envs.make(ENV_ID, dataset="mini_sudoku", reveal_reference=False)
    env.reset(options={"index": 3})
    solution = env.unwrapped.task["answer"]
    rows = [row.split() for row in solution.split("\n")]
    wrong = "\n".join(" ".join(str(int(v) % 4 + 1) for v in row) for row in rows)
    partly = "\n".join([" ".join(rows[0]), *wrong.split("\n")[1:]])
    seen = []
    for reply in (wrong, partly):
        calls.clear()
        env.reset(options={"index": 3})
        _, reward, _, _, info = env.step(f"<answer>{reply}</answer>")
        assert reward == 0.0 and info["verdict"] == "wrong"
        seen.append(calls[:])
    # The wrong reply does every check (the probe's score, then cached for the task); the
    # partly right one the same checks (att31g: the question-copy check, whose `_normal`
    # of a long reply took 170 us, ran only for it), the probe read from the cache.
    first, second = seen
    assert first.count("_nonsense_score") == 1 and "_nonsense_score" not in second
    assert [c for c in first if c != "_nonsense_score"] == second, seen
