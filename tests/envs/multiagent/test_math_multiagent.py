from __future__ import annotations

import json

import numpy as np
import pytest

import rllm_envs
from rllm_envs.math import is_equivalent
from rllm_envs.multiagent.mathtasks import (
    boxed,
    clip_middle,
    grade,
    majority_answer,
    parse_choice,
    wrong_answer,
)
from tests.envs.multiagent.conformance import final_infos, returns, run_parallel, scripted

TASK = {"task": {"problem": "What is 6 times 7?", "answer": "42"}}

# ----------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    "reply, choice",
    [
        ("\\boxed{2}", 2),
        ("<answer>1</answer>", 1),
        ("Answer: Solution 3", 3),
        ("Selection: #2", 2),
        ("Solution 1 is wrong, solution 3 checks out.", 3),
        ("Both get 42 but I pick 2", 2),
        ("<think>solution 1</think> I choose solution 2.", 2),
        ("  3  ", 3),
    ],
)
def test_parse_choice_accepts_many_formats(reply, choice):
    assert parse_choice(reply, 3) == (choice, None)


@pytest.mark.parametrize(
    # A number is whole: "Solution 2.5" or "21" names no solution 2.
    "reply",
    ["", "none of them", "\\boxed{4}", "Solution 0", "\\boxed{}", "Solution 2.5", "\\boxed{21}"],
)
def test_parse_choice_rejects_invalid_choices(reply):
    choice, reason = parse_choice(reply, 3)
    assert choice is None and reason


def test_grade_reference_scores_one_and_garbage_zero():
    assert grade(boxed("42"), "42") == (1.0, "42", None)
    assert grade("The answer is \\boxed{41}", "42")[:2] == (0.0, "41")
    score, answer, reason = grade("qwzx ☃ \\boxed{", "42")
    assert score == 0.0 and answer is None and "boxed" in reason


def test_wrong_answer_is_never_equivalent():
    rng = np.random.default_rng(0)
    for gold in ["42", "-3", "\\frac{1}{2}", "(1, 2)", "x = 5", "0"]:
        for _ in range(5):
            assert not is_equivalent(wrong_answer(gold, rng), gold)


def test_majority_answer_groups_equivalent_answers():
    assert majority_answer(["1/2", "3", "0.5", None]) == 0
    assert majority_answer(["3", "1/2", "0.5"]) == 1
    assert majority_answer([None, None]) is None
    assert majority_answer(["7", "8"]) == 0  # ties keep the earliest


def test_clip_middle_keeps_the_start_and_the_answer():
    text = "start " + "x" * 10_000 + " \\boxed{42}"
    clipped = clip_middle(text, 500)
    assert len(clipped) <= 500 and clipped.startswith("start") and clipped.endswith("\\boxed{42}")
    assert clip_middle("short", 500) == "short"


# ------------------------------------------------------------------------ solver-judge


def test_solver_judge_oracle_gets_one_for_every_agent():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=3)
    for seed in range(5):
        steps = run_parallel(env, scripted("oracle"), seed=seed)
        assert returns(steps) == dict.fromkeys(env.possible_agents, 1.0)
        assert all(info["is_correct"] for info in final_infos(steps).values())


def test_solver_judge_phases_and_rewards():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=2)
    obs, infos = env.reset(options=TASK)
    assert [a for a in env.agents if infos[a]["acting"]] == ["solver_0", "solver_1"]
    assert infos["judge_0"]["role"] == "judge" and infos["solver_0"]["role"] == "solver"
    assert "What is 6 times 7?" in obs["solver_0"] and "Wait" in obs["judge_0"]
    obs, rewards, terms, _, infos = env.step(
        {"solver_0": "6*7 = 41, so \\boxed{41}", "solver_1": "\\boxed{42}", "judge_0": "ignored"}
    )
    # Nothing graded reaches any seat before the judge acts: the solvers wait, unpaid.
    assert rewards == {"solver_0": 0.0, "solver_1": 0.0, "judge_0": 0.0}
    assert terms == {"solver_0": False, "solver_1": False, "judge_0": False}
    assert env.agents == ["solver_0", "solver_1", "judge_0"]
    assert [a for a in env.agents if infos[a]["acting"]] == ["judge_0"]
    assert "answers" not in infos["judge_0"] and "score" not in infos["solver_1"]
    assert not any(info["is_correct"] for info in infos.values())
    assert "=== Solution 1 ===" in obs["judge_0"] and "\\boxed{42}" in obs["judge_0"]
    assert "judge" in obs["solver_0"] and "42" not in obs["solver_0"] + obs["solver_1"]
    right = _shown_as(env, 1)
    obs, rewards, terms, _, infos = env.step(
        {"judge_0": f"Solution {right} is right: \\boxed{{{right}}}", "solver_0": "ignored"}
    )
    assert rewards == {"solver_0": 0.0, "solver_1": 1.0, "judge_0": 1.0}
    assert all(terms.values()) and env.agents == []
    assert infos["judge_0"]["choice"] == right and infos["judge_0"]["is_correct"]
    assert infos["judge_0"]["answers"] == ["41", "42"]
    assert infos["solver_1"]["is_correct"] and infos["solver_1"]["score"] == 1.0
    assert not infos["solver_0"]["is_correct"] and infos["solver_0"]["answer"] == "41"
    assert "is not correct" in obs["solver_0"] and "is correct" in obs["solver_1"]
    assert "reference answer is 42" in obs["solver_0"]


def _shown_as(env, solver: int) -> int:
    """The solution number under which the judge sees ``solver`` (its order is random)."""
    return env.unwrapped.order.index(solver) + 1


@pytest.mark.parametrize(
    "judge_reply, reward, invalid",
    [("wrong", 0.0, False), ("\\boxed{3}", 0.0, True), ("I cannot decide", 0.0, True)],
)
def test_judge_selecting_a_wrong_or_no_solution_scores_zero(judge_reply, reward, invalid):
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=2)
    env.reset(options=TASK)
    *_, infos = env.step({"solver_0": "\\boxed{41}", "solver_1": "\\boxed{42}"})
    if judge_reply == "wrong":
        judge_reply = f"\\boxed{{{_shown_as(env, 0)}}}"
    _, rewards, _, _, infos = env.step({"judge_0": judge_reply})
    assert rewards["judge_0"] == reward
    assert infos["judge_0"]["invalid_action"] is invalid
    assert infos["judge_0"]["reward_components"]["invalid_action"] == float(invalid)


def test_judge_sees_clipped_solutions_and_the_heuristic_votes():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=3, max_solution_chars=300)
    env.reset(options=TASK)
    huge = "reasoning " * 20_000 + "\\boxed{42}"
    obs, _, _, _, infos = env.step(
        {"solver_0": "\\boxed{7}", "solver_1": huge, "solver_2": "\\boxed{42.0}"}
    )
    assert len(obs["judge_0"]) < 2_000 and "middle cut" in obs["judge_0"]
    assert "\\boxed{42}" in obs["judge_0"]
    policy = rllm_envs.multiagent.ScriptedPolicy("heuristic")
    # 42 and 42.0 form the majority: the first of them as the judge sees the solutions.
    first = min(_shown_as(env, 1), _shown_as(env, 2))
    assert policy(env, "judge_0") == f"\\boxed{{{first}}}"


def test_solver_judge_arguments_are_validated():
    for kwargs in [{"n_solvers": 0}, {"n_solvers": 9}, {"max_solution_chars": 10}]:
        with pytest.raises(rllm_envs.InvalidEnvConfig):
            rllm_envs.make_parallel("rllm/SolverJudge-v1", **kwargs)
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="difficulty"):
        rllm_envs.make_parallel("rllm/SolverJudge-v1", difficulty=99)
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1")
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="answer"):
        env.reset(options={"task": {"problem": "1+1?"}})


def test_math_envs_read_a_local_dataset(tmp_path):
    path = tmp_path / "problems.jsonl"
    rows = [
        {"question": "What is 2+2?", "solution": 4},
        {"question": "What is 3^2?", "solution": 9},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    field_map = {"problem": "question", "answer": "solution"}
    for env_id in ["rllm/SolverJudge-v1", "rllm/Debate-v1"]:
        env = rllm_envs.make_parallel(env_id, dataset=str(path), field_map=field_map)
        obs, infos = env.reset(options={"index": 1})
        assert "What is 3^2?" in obs[env.possible_agents[0]]
        assert len(env.tasks) == 2
        steps = run_parallel(env, scripted("oracle"), seed=0)
        assert all(r == 1.0 for r in returns(steps).values())


def test_math_envs_restrict_families():
    env = rllm_envs.make_parallel("rllm/Debate-v1", families=["arithmetic"])
    env.reset(seed=0)
    assert env.task["family"] == "arithmetic"


# ------------------------------------------------------------------------------ debate


def test_debate_oracle_gets_one_for_every_agent():
    env = rllm_envs.make_parallel("rllm/Debate-v1")
    for seed in range(5):
        steps = run_parallel(env, scripted("oracle"), seed=seed)
        assert len(steps) == 1 + env.n_rounds
        assert returns(steps) == dict.fromkeys(env.possible_agents, 1.0)
        assert all(info["is_correct"] for info in final_infos(steps).values())


def test_debate_scores_only_the_final_round():
    env = rllm_envs.make_parallel("rllm/Debate-v1", n_debaters=2, n_rounds=2)
    obs, infos = env.reset(options=TASK)
    assert all(info["acting"] and info["role"] == "debater" for info in infos.values())
    obs, rewards, terms, _, infos = env.step(
        {"debater_0": "\\boxed{42}", "debater_1": "I think \\boxed{40}"}
    )
    assert rewards == {"debater_0": 0.0, "debater_1": 0.0} and not any(terms.values())
    # No grade before the debate ends, though debater_0 is right.
    assert infos["debater_0"]["reward_components"]["round_correct"] == 0.0
    assert not infos["debater_0"]["is_correct"] and "score" not in infos["debater_0"]
    assert infos["debater_0"]["answers"] == ["42", "40"] and infos["debater_0"]["round"] == 1
    assert "=== You ===" in obs["debater_0"] and "=== Debater 2 ===" in obs["debater_0"]
    assert "I think \\boxed{40}" in obs["debater_0"] and "last round" in obs["debater_0"]
    # debater_0 is talked out of the right answer; debater_1 is convinced.
    obs, rewards, terms, _, infos = env.step(
        {"debater_0": "\\boxed{40}", "debater_1": "You are right: \\boxed{42}"}
    )
    assert rewards == {"debater_0": 0.0, "debater_1": 1.0} and all(terms.values())
    assert env.agents == [] and "The debate is over" in obs["debater_0"]
    assert infos["debater_1"]["is_correct"] and not infos["debater_0"]["is_correct"]
    assert infos["debater_0"]["round_scores"] == [1.0, 0.0]
    assert infos["debater_0"]["reward_components"]["round_correct"] == 0.5


def test_debate_heuristic_follows_the_majority():
    env = rllm_envs.make_parallel("rllm/Debate-v1", n_debaters=3, n_rounds=2)
    env.reset(options=TASK)
    env.step({"debater_0": "\\boxed{7}", "debater_1": "\\boxed{42}", "debater_2": "\\boxed{42}"})
    policy = rllm_envs.multiagent.ScriptedPolicy("heuristic")
    assert all("\\boxed{42}" in policy(env, a) for a in env.agents)


def test_debate_single_round_and_argument_checks():
    env = rllm_envs.make_parallel("rllm/Debate-v1", n_rounds=1)
    steps = run_parallel(env, scripted("oracle"), seed=0)
    assert len(steps) == 2 and all(r == 1.0 for r in returns(steps).values())
    for kwargs in [{"n_debaters": 1}, {"n_rounds": 0}, {"n_rounds": 11}, {"n_debaters": "3"}]:
        with pytest.raises(rllm_envs.InvalidEnvConfig):
            rllm_envs.make_parallel("rllm/Debate-v1", **kwargs)


# ------------------------------------------------------------ final-form answers (issue #25)


def _copy_tasks():
    """Procedural arithmetic and fractions tasks at every difficulty, with their expression."""
    from rllm_envs.math import procedural_tasks

    for difficulty in range(1, 6):
        source = procedural_tasks(
            seed=5, difficulty=difficulty, families=["arithmetic", "fractions"]
        )
        for i in range(3):
            task = source[i]
            expression = task["problem"].split("$")[1]
            yield {"problem": task["problem"], "answer": task["answer"]}, expression


def test_grade_needs_the_value_in_final_form():
    for task, expression in _copy_tasks():
        assert grade(boxed(task["answer"]), task["answer"], task["problem"])[0] == 1.0
        assert grade(boxed(expression), task["answer"], task["problem"])[0] == 0.0
        assert grade(boxed(expression), task["answer"])[0] == 0.0  # arithmetic left, even blind
    assert grade(boxed("6 \\times 7"), "42", "What is 6 times 7?")[0] == 0.0
    assert grade(boxed("y = 1, x = 3"), "(3, 1)", "Give $(x, y)$.")[0] == 1.0
    assert grade(boxed("y = 3, x = 1"), "(3, 1)", "Give $(x, y)$.")[0] == 0.0


def test_solvers_that_copy_the_expression_earn_nothing():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=2)
    for task, expression in _copy_tasks():
        env.reset(options={"task": task})
        env.step({"solver_0": boxed(expression), "solver_1": boxed(task["answer"])})
        _, rewards, *_ = env.step({"judge_0": "\\boxed{1}"})  # solvers are paid at the end
        assert rewards["solver_0"] == 0.0 and rewards["solver_1"] == 1.0, (task, expression)


def test_debaters_that_copy_the_expression_earn_nothing():
    env = rllm_envs.make_parallel("rllm/Debate-v1", n_debaters=2, n_rounds=1)
    for task, expression in _copy_tasks():
        env.reset(options={"task": task})
        _, rewards, *_ = env.step(
            {"debater_0": boxed(expression), "debater_1": boxed(task["answer"])}
        )
        assert rewards["debater_0"] == 0.0 and rewards["debater_1"] == 1.0, (task, expression)


def _form(answer: str) -> str:
    """An answer's surface form: its LaTeX with every integer replaced by ``#``."""
    import re

    return re.sub(r"\d+", "#", answer.strip())


def test_scripted_wrong_answers_take_the_form_of_the_right_one():
    from rllm_envs.math import procedural_tasks

    rng = np.random.default_rng(0)
    sources = [procedural_tasks(difficulty=d) for d in (1, 3, 5)]
    golds = [str(src[i]["answer"]) for src in sources for i in range(80)]
    with_digits = [g for g in golds if any(c.isdigit() for c in g)]
    assert len(with_digits) > 0.9 * len(golds)
    for gold in with_digits:
        wrong = wrong_answer(gold, rng)
        assert _form(wrong) == _form(gold), (gold, wrong)
        assert not is_equivalent(wrong, gold)
    # A reduced fraction stays reduced and a simplified radical simplified.
    for _ in range(30):
        assert wrong_answer("\\frac{3}{4}", rng) not in {
            "\\frac{4}{4}",
            "\\frac{2}{4}",
            "\\frac{6}{4}",
        }
        assert wrong_answer("2\\sqrt{3}", rng) not in {"2\\sqrt{4}", "2\\sqrt{8}", "2\\sqrt{12}"}


def test_a_judge_reading_the_answers_form_earns_only_the_base_rate():
    """The judge picks the one solution whose form differs from the others' (a LaTeX answer
    among integers): against the scripted solvers that tells nothing."""
    import re

    told = 0
    episodes = 150
    for seed in range(episodes):
        env = rllm_envs.make_parallel("rllm/SolverJudge-v1")
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        acts = {a: env.heuristic_action(a, rng) if a != "judge_0" else "wait" for a in env.agents}
        obs, *_ = env.step(acts)
        parts = re.split(r"=== Solution \d+ ===", obs["judge_0"])[1:]
        answers = [(re.findall(r"\\boxed\{(.*)\}", p) or [""])[-1] for p in parts]
        forms = [_form(a) for a in answers]
        told += sum(forms.count(f) == 1 for f in forms) == 1
    # Before, a wrong answer to a non-integer gold was an integer: the odd one out was right.
    assert told <= 0.05 * episodes, told


def _judge_rate(n_solvers: int, rule, episodes: int) -> tuple[float, float]:
    """A problem-blind judge's reward and the base rate against the scripted solvers."""
    import re

    from rllm_envs.math import extract_answer

    got = base = 0.0
    for seed in range(episodes):
        env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=n_solvers)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        acts = {a: env.heuristic_action(a, rng) if a != "judge_0" else "wait" for a in env.agents}
        obs, *_ = env.step(acts)
        parts = re.split(r"=== Solution \d+ ===", obs["judge_0"])[1:]
        answers = [extract_answer(p.split("Check the solutions")[0]) or "" for p in parts]
        numbers = [[float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", a)] for a in answers]
        pick = rule(numbers)
        _, rewards, _, _, infos = env.step({"judge_0": f"\\boxed{{{pick + 1}}}"})
        got += rewards["judge_0"]
        base += infos["judge_0"]["base_rate"]
    return got / episodes, base / episodes


def _smallest(numbers: list[list[float]]) -> int:
    return min(range(len(numbers)), key=lambda i: sum(map(abs, numbers[i])) if numbers[i] else 1e18)


def _nearest_the_others(numbers: list[list[float]]) -> int:
    def distance(a: list[float], b: list[float]) -> float:
        if len(a) != len(b) or not a:
            return 1e9
        return sum(abs(x - y) for x, y in zip(a, b, strict=True))

    return min(
        range(len(numbers)),
        key=lambda i: sum(distance(numbers[i], b) for j, b in enumerate(numbers) if j != i),
    )


@pytest.mark.slow
def test_a_judge_that_reads_only_the_answers_sizes_earns_the_base_rate():
    """att25f: the scripted solvers' wrong answers were the gold with one integer moved, up more
    often than down for small ones and all around it: the smallest answer was right 0.59 of
    the time against a base rate of 0.51 (2 solvers), the one nearest the others 0.71 against
    0.52 (3 solvers). They are other tasks' answers now (``Decoys``)."""
    reward, base = _judge_rate(2, _smallest, 300)
    assert reward <= base + 0.06, (reward, base)
    # With 3 solvers the right ones agree, so a group of equal answers is the majority
    # vote's (the env's own heuristic judge): nearness to the others adds nothing beyond it.
    near, base = _judge_rate(3, _nearest_the_others, 300)
    majority, _ = _judge_rate(3, _majority_of, 300)
    assert near <= majority + 0.04, (near, majority, base)


def _majority_of(numbers: list[list[float]]) -> int:
    keys = [tuple(n) for n in numbers]
    return max(range(len(keys)), key=lambda i: (keys.count(keys[i]), -i))


def test_decoys_are_other_answers_of_the_family_and_all_wrong():
    from rllm_envs.multiagent.mathtasks import Decoys

    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=4)
    for seed in range(20):
        env.reset(seed=seed)
        gold = str(env.task["answer"])
        decoys = Decoys(env.tasks, env.task, from_source=True)
        rng = np.random.default_rng(seed)
        drawn = [decoys.draw(rng) for _ in range(3)]
        assert not any(is_equivalent(d, gold) for d in drawn)
        assert len({*drawn}) == 3
    # A client-written task has no source to draw from: the gold with one integer moved.
    env.reset(seed=0, options=TASK)
    decoys = Decoys(env.tasks, env.task, from_source=env.task_index is not None)
    assert _form(decoys.draw(np.random.default_rng(0))) == _form("42")


def test_heuristic_debaters_follow_only_a_strict_majority():
    """att29f: with every round-1 answer different, the heuristic debaters broke the tie by
    position and all took a blind seat's guess, so a copier out-earned them."""
    assert majority_answer(["1", "2", "3"], strict=True) is None
    assert majority_answer(["1", "2", "2", "3"], strict=True) == 1
    assert majority_answer(["1", "1", "2", "2"], strict=True) is None
    assert majority_answer(["1", "2", "3"]) == 0  # the judge's tie rule is unchanged
    env = rllm_envs.make_parallel("rllm/Debate-v1", n_debaters=3, n_rounds=2)
    env.reset(seed=0)
    env.answers = ["1", "57", "12"]  # all different: each keeps its own
    rng = np.random.default_rng(0)
    env.round = 1
    assert [env.heuristic_action(a, rng) for a in env.possible_agents] == [
        boxed(x) for x in ("1", "57", "12")
    ]
