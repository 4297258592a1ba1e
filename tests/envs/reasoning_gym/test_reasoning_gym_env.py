"""rllm/ReasoningGym-v0: every reasoning-gym family plays, its oracle scores 1 through
reasoning-gym's own ``score_answer``, and degenerate replies (an echo of the question, a piece
of it, a template, the prompt's example) earn nothing."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import rllm_envs  # noqa: E402
import rllm_envs.testing as kit  # noqa: E402
from rllm_envs.error import InvalidEnvConfig  # noqa: E402
from rllm_envs.reasoning_gym import (  # noqa: E402
    ReasoningGymEnv,
    ReasoningGymTasks,
    family_names,
    grade,
    score,
)
from rllm_envs.reasoning_gym.spec import ANSWER_FORMAT, SPEC  # noqa: E402
from rllm_envs.reasoning_gym.surface import KNOWN_TELLS  # noqa: E402
from rllm_envs.testing.hacking import RewardHackingError  # noqa: E402

ENV_ID = "rllm/ReasoningGym-v0"
# `composite` mixes other families and needs them named in its config.
CONFIGS = {"composite": {"datasets": [{"name": "leg_counting", "weight": 1.0, "config": {}}]}}
FAMILIES = family_names()
# Families whose generators take several CPU seconds (up to ~30) for two tasks: the slow lane
# plays them.
SLOW_FAMILIES = {"futoshiki", "knight_swap", "quantum_lock", "sokoban", "zebra_puzzles"}


def _env(name, **kwargs):
    return ReasoningGymEnv(dataset=name, size=4, config=CONFIGS.get(name), **kwargs)


def _degenerate_replies(question: str) -> dict[str, str]:
    lines = [line for line in question.splitlines() if len(line.strip()) > 20]
    return {
        "empty": "",
        "no tags": question,
        "echo in tags": f"<answer>{question}</answer>",
        "echo of the whole prompt": f"<answer>{question}\n\n{ANSWER_FORMAT}</answer>",
        "a line of the question": f"<answer>{lines[-1] if lines else question}</answer>",
        "template": "<answer>...</answer>",
        "format example": "<answer>your answer</answer>",
        "empty tags": "<answer></answer>",
        "garbage": f"<answer>{kit.GARBAGE}</answer>",
        "unclosed think": "<think><answer>42</answer>",
    }


def test_the_registry_row_is_the_spec():
    row = rllm_envs.env_entry(ENV_ID)
    assert rllm_envs.agent_spec(ENV_ID) is SPEC
    assert row.extra == "reasoning-gym" and row.scorer == "rllm_envs.reasoning_gym.scoring:score"


def test_every_family_is_offered():
    assert len(FAMILIES) >= 100
    assert {"basic_arithmetic", "word_sorting", "sudoku", "countdown", "maze"} <= set(FAMILIES)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_FAMILIES else n for n in FAMILIES],
)
def test_every_family_plays_and_is_scored_by_reasoning_gym(name):
    env = _env(name)
    solved = 0
    for index in range(2):
        observation, info = env.reset(seed=index, options={"index": index})
        task = env.unwrapped.task
        assert observation.startswith(task["question"].rstrip()) and ANSWER_FORMAT in observation
        assert info["dataset"] == name
        # Task i is a pure function of the arguments, in this process and in a copy.
        assert env.unwrapped.tasks[index] == task
        assert pickle.loads(pickle.dumps(env.unwrapped.tasks))[index] == task
        try:
            oracle = env.unwrapped.oracle_action()
        except NotImplementedError:
            oracle = None
        if oracle is not None:
            _, reward, terminated, truncated, step_info = env.step(oracle)
            assert (reward, terminated, truncated) == (1.0, True, False), step_info
            assert step_info["is_correct"] and step_info["reasoning_gym_score"] == 1.0
            solved += 1
        for what, reply in _degenerate_replies(task["question"]).items():
            env.reset(seed=index, options={"index": index})
            _, reward, terminated, _, step_info = env.step(reply)
            assert reward == 0.0 and terminated, (what, step_info["verdict"])
            assert not step_info["is_correct"], what
            # Partial credit is not paid for copies either.
            if what.startswith("echo") or what == "a line of the question":
                assert step_info["reward_components"]["score"] == 0.0, what
    if name not in ("boxnet", "rush_hour"):  # these families only verify solutions
        assert solved == 2, f"{name}: no reference answer to play"


@pytest.mark.parametrize("name", ["game_of_life_halting", "rotate_matrix", "acre"])
def test_echoes_reasoning_gym_pays_for_are_refused(name):
    # reasoning-gym itself gives these an echo of the question 1.0, 0.42 and 0.01.
    env = _env(name)
    env.reset(seed=0, options={"index": 0})
    question = env.unwrapped.task["question"]
    _, reward, _, _, info = env.step(question)  # no tags: no answer
    assert reward == 0.0 and info["invalid_action"]
    for reply in (f"<answer>{question}</answer>", f"<answer>Answer: {question} done</answer>"):
        env.reset(seed=0, options={"index": 0})
        _, reward, _, _, info = env.step(reply)
        assert reward == 0.0 and info["verdict"] == "echo"
        assert info["reward_components"] == {"correct": 0.0, "score": 0.0}


def test_a_copied_example_or_expression_is_not_an_answer():
    env = _env("graph_color")
    env.reset(seed=0, options={"index": 0})
    question = env.unwrapped.task["question"]
    example = '{"0": 1, "1": 2, "2": 3}'
    assert example in question  # the question shows this example answer
    _, reward, _, _, info = env.step(f"<answer>{example}</answer>")
    assert reward == 0.0 and info["reward_components"]["score"] == 0.0
    env = _env("basic_arithmetic")
    env.reset(seed=0, options={"index": 0})
    task = env.unwrapped.task
    expression = task["question"].removeprefix("Calculate ").rstrip(".")
    assert grade(f"<answer>{expression}</answer>", task).verdict == "copied_from_question"


def test_the_scorer_reads_the_last_answer_block_and_never_raises():
    env = _env("basic_arithmetic")
    env.reset(seed=0, options={"index": 0})
    task = env.unwrapped.task
    answer = task["answer"]
    assert score(answer, task) == 1.0
    assert score(f"<think>maybe 3</think>work... <answer>{answer}</answer>", task) == 1.0
    assert score(f"<answer>{answer}</answer> no, <answer>0</answer>", task) == 0.0  # two answers
    assert score(kit.GARBAGE, task) == 0.0
    prime = _env("prime_factorization")
    prime.reset(seed=0, options={"index": 0})
    # reasoning-gym's scorer raises ValueError on this; the grade is a plain wrong answer.
    result = grade("<answer>x × y</answer>", prime.unwrapped.task)
    assert result.score == 0.0 and result.verdict in ("scorer_error", "wrong")


def test_train_and_eval_universes_share_no_question():
    from rllm_envs.tasks import EVAL_TASK_SEED, key_universe

    # basic_arithmetic's small problems repeat across generator seeds: the question hash
    # keeps the universes apart anyway.
    # A universe of size n probes at most n draws for its split: 400 show each side's 20
    # questions (at 200, about 25 evaluation draws could show fewer, and a family that shows
    # too few is not split: reported as not held out).
    for name in ("basic_arithmetic", "word_sorting", "letter_counting"):
        train = ReasoningGymTasks(name, size=400)
        neighbour = ReasoningGymTasks(name, size=400, task_seed=1)
        held_out = ReasoningGymTasks(name, size=400, task_seed=EVAL_TASK_SEED)
        train_qs = [train[i] for i in range(200)]
        eval_qs = [held_out[i] for i in range(200)]
        assert {key_universe(train.universe_key(t)) for t in train_qs} == {"train"}, name
        assert {key_universe(held_out.universe_key(t)) for t in eval_qs} == {"eval"}, name
        questions = {t["question"] for t in train_qs}
        assert not questions & {t["question"] for t in eval_qs}, name
        # Generator seeds differ per task seed: neighbouring training seeds are new tasks.
        assert len(questions & {neighbour[i]["question"] for i in range(200)}) < 20, name
        assert train[7] == ReasoningGymTasks(name, size=400)[7]  # pure function of the args


def test_config_and_curriculum_shape_the_tasks():
    easy = ReasoningGymEnv(dataset="basic_arithmetic", difficulty=0)
    hard = ReasoningGymEnv(dataset="basic_arithmetic", difficulty=3)
    assert easy.unwrapped.tasks.config["max_terms"] < hard.unwrapped.tasks.config["max_terms"]
    fixed = ReasoningGymEnv(
        dataset="basic_arithmetic", config={"min_terms": 5, "max_terms": 5}, difficulty=0
    )
    fixed.reset(seed=0, options={"index": 0})
    assert fixed.unwrapped.task["metadata"]["num_terms"] == 5  # config wins over the level
    single = ReasoningGymEnv(dataset="basic_arithmetic", curriculum={"num_terms": 2})
    assert single.unwrapped.tasks.config["max_terms"] >= 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dataset": "basic_arithmetics"}, "basic_arithmetic"),
        ({"dataset": "basic_arithmetic", "difficulty": 99}, "difficulty"),
        ({"dataset": "basic_arithmetic", "curriculum": {"terms": 1}}, "num_terms"),
        ({"dataset": "basic_arithmetic", "config": {"seed": 3}}, "task_seed"),
        ({"dataset": "basic_arithmetic", "config": {"max_terms": 1}}, "rejected"),
        ({"dataset": "basic_arithmetic", "size": 0}, "size"),
        ({"dataset": "basic_arithmetic", "task_seed": -1}, "task_seed"),
    ],
)
def test_programmer_errors_raise_early_with_the_fix(kwargs, message):
    with pytest.raises(InvalidEnvConfig, match=message):
        rllm_envs.make(ENV_ID, **kwargs)


def test_the_env_pickles_and_passes_the_conformance_kit_on_other_families():
    env = gym.make(ENV_ID, dataset="word_sorting", size=8)
    env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.task == env.unwrapped.task
    for name in ("word_sorting", "maze"):
        report = kit.check_text_env(ENV_ID, kwargs={"dataset": name, "size": 16})
        assert not report.failures


#: Families with few labels (True/False, on/off/undetermined), open numbers, and structured
#: answers (JSON maps, grids, lists), where reasoning-gym pays partial credit or checks
#: solutions. Not syllogism: a known tell (surface.KNOWN_TELLS), which the check's surface
#: classifier catches on some universes (30/40 on one), as it should.
HACK_FAMILIES = [
    "basic_arithmetic",
    "gsm_symbolic",
    "prime_factorization",
    "acre",
    "propositional_logic",
    "knights_knaves",
    "graph_color",
    "rotate_matrix",
    "list_functions",
    "word_sorting",
    "countdown",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", HACK_FAMILIES)
def test_degenerate_policies_earn_no_more_than_random(name):
    # The suite's public check: echoes, spans and numbers of the question, constant and
    # sampled answers, several candidates, copied demonstrations, empty and long replies.
    kit.check_reward_hacking(ENV_ID, kwargs={"dataset": name, "size": 64})


@pytest.mark.slow
def test_the_check_gives_one_report_whatever_the_process():
    """s27: the verdict on ReasoningGym gsm_symbolic (size 64) changed from run to run (3 runs
    in 8 failed): the env's random_action drew from an action space gymnasium seeds from OS
    entropy. The same check in two fresh processes (other hash seeds) reports the same."""
    import json
    import os
    import subprocess
    import sys

    script = (
        "import json, rllm_envs.testing as kit\n"
        "r = kit.check_reward_hacking('rllm/ReasoningGym-v0', "
        "kwargs={'dataset': 'gsm_symbolic', 'size': 64}, raise_on_failure=False)\n"
        "print(json.dumps([r.baseline[None][:2], r.baseline_paid[None], "
        "[[x.policy, x.status, x.episodes] for x in r.results]]))\n"
    )
    reports = []
    for hash_seed in ("202", "808"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONWARNINGS": "ignore"}
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
        )
        assert out.returncode == 0, out.stderr[-2000:]
        reports.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert reports[0] == reports[1]


@pytest.mark.slow
def test_the_check_catches_a_family_whose_surface_gives_the_answer_away():
    # game_of_life_halting answers False when its board shows `1 1` (surface.KNOWN_TELLS): a
    # policy that reads the surface and never simulates is caught by the public check, the
    # family is refused for held-out evaluation and warns when trained on.
    name = "game_of_life_halting"
    assert name in KNOWN_TELLS
    with pytest.raises(RewardHackingError, match="surface-classifier"):
        kit.check_reward_hacking(ENV_ID, kwargs={"dataset": name, "size": 64})


def test_several_different_answers_are_not_graded():
    env = _env("acre")
    env.reset(seed=0, options={"index": 0})
    reference = env.unwrapped.task["answer"]
    _, reward, _, _, info = env.step(
        "<answer>on</answer> <answer>off</answer> <answer>undetermined</answer>"
    )
    assert reward == 0.0 and info["verdict"] == "several_answers" and info["invalid_action"]
    env.reset(seed=0, options={"index": 0})
    _, reward, _, _, _ = env.step(f"<answer>{reference}</answer> so <answer>{reference}</answer>")
    assert reward == 1.0  # the same answer twice is one answer


def test_the_random_baseline_guesses_in_the_answer_form():
    env = _env("acre")
    env.reset(seed=0)
    env.action_space.seed(0)
    guesses = {env.unwrapped.random_action() for _ in range(40)}
    assert guesses <= {
        "<answer>on</answer>",
        "<answer>off</answer>",
        "<answer>undetermined</answer>",
    }
    assert len(guesses) >= 2


def test_the_leaderboard_plays_it_on_the_evaluation_universe(tmp_path):
    from benchmarks.leaderboard.runner import LeaderboardConfig, run

    scores = {}
    for policy in ("oracle", "random"):
        config = LeaderboardConfig(policy=policy, envs=[ENV_ID], n_tasks=6, k=2)
        scores[policy] = run(config, tmp_path / policy, progress=False)["envs"][ENV_ID]
    assert scores["oracle"]["pass@1"] == 1.0 and scores["oracle"]["episodes"] == 12
    assert scores["random"]["pass@1"] == 0.0


def _rate(name: str, reply, n: int = 60, task_seed: int = 0) -> float:
    env = ReasoningGymEnv(dataset=name, task_seed=task_seed)
    total = 0.0
    for index in range(n):
        observation, _ = env.reset(options={"index": index})
        _, reward, *_ = env.step(f"<answer>{reply(observation)}</answer>")
        total += reward
    return total / n


def test_a_short_constant_or_a_truncated_answer_earns_nothing():
    from rllm_envs.tasks import EVAL_TASK_SEED

    # coin_flip's scorer credits a matching prefix: "0" was right for every "0.xxx" answer.
    for seed in (0, EVAL_TASK_SEED):
        assert _rate("coin_flip", lambda obs: "0", task_seed=seed) == 0.0
    env = ReasoningGymEnv(dataset="coin_flip")
    for index in range(20):
        env.reset(options={"index": index})
        reference = env.unwrapped.task["answer"]
        for cut in {1, 2, 3, len(reference) // 2}:
            if 0 < cut < len(reference):
                env.reset(options={"index": index})
                _, reward, *_, info = env.step(f"<answer>{reference[:cut]}</answer>")
                assert reward == 0.0 and info["verdict"] in ("truncated", "constant", "wrong")
        env.reset(options={"index": index})
        _, reward, *_ = env.step(f"<answer>{reference}</answer>")
        assert reward == 1.0
    task = {"dataset": "coin_flip", "question": "?", "answer": "0.25", "metadata": {}}
    assert grade("<answer>0.250</answer>", task).correct  # numerically equal: not cut down
    for constant in ("0", "1", "yes", "True", "false", ""):
        assert not grade(f"<answer>{constant}</answer>", task).correct
    # A constant that IS the reference is right.
    syllogism = ReasoningGymTasks("syllogism")
    yes = next(t for t in (syllogism[i] for i in range(40)) if t["answer"] == "Yes")
    assert grade("<answer>Yes</answer>", yes).correct


def test_no_task_answer_can_be_read_off_its_question():
    from rllm_envs.tasks import EVAL_TASK_SEED

    def last_word(observation: str) -> str:
        question = observation.split("\n\n" + ANSWER_FORMAT)[0]
        return question.split()[-1]

    # string_insertion's answer was its input string 91% of the time.
    for seed in (0, EVAL_TASK_SEED):
        assert _rate("string_insertion", last_word, task_seed=seed) <= 0.1
        tasks = ReasoningGymTasks("string_insertion", task_seed=seed)
        assert sum(tasks.answer_in_question(tasks[i]) for i in range(60)) <= 3
    # An answer the family's questions offer as an option is a choice, not a read-off.
    syllogism = ReasoningGymTasks("syllogism")
    assert not any(syllogism.answer_in_question(syllogism[i]) for i in range(20))


@pytest.mark.slow
def test_names_masked_memorisation_does_not_carry_to_the_evaluation_universe():
    import re

    from rllm_envs.tasks import EVAL_TASK_SEED

    def key(question: str) -> str:
        return " ".join(re.sub(r"\b[A-Z][a-z]+\b", "N", question).split())

    # aiw's questions differ across universes by names only; memorising them paid 0.81.
    sources = [ReasoningGymTasks("aiw", task_seed=s) for s in range(2)]
    seen = {key(src[i]["question"]) for src in sources for i in range(600)}
    held = ReasoningGymTasks("aiw", task_seed=EVAL_TASK_SEED)
    assert not seen & {key(held[i]["question"]) for i in range(150)}


def test_a_family_is_held_out_only_where_its_numbers_cannot_be_looked_up():
    from rllm_envs.reasoning_gym.tasks import numbers_recall_answers
    from rllm_envs.tasks import question_key, text_key

    # aiw's answer is a count it shows plus one. Six people at most: too few numbers to split
    # by, so it splits by text, and its numbers recall its answers across that split.
    aiw = ReasoningGymTasks("aiw")
    assert aiw.splitting_key() is text_key
    assert "numbers decide its answers" in (aiw.held_out_reason() or "")
    # Sixteen: its evaluation side shows 20 number keys only past 256 probe draws (the old
    # cap, which fell back to text); now it splits by numbers, so no number lookup carries.
    # Its answer (a count it shows, plus one) is still read off its surface by a token
    # classifier (issue #25), so it is not held out either.
    wide = ReasoningGymTasks("aiw", config={"max_entities": 16})
    assert wide.splitting_key() is question_key
    assert "question's surface" in (wide.held_out_reason() or "")
    assert ReasoningGymTasks("coin_flip", config={"max_trials": 40}).held_out_reason() is None
    assert "too few distinct questions" in (
        ReasoningGymTasks("family_relationships").held_out_reason() or ""
    )
    for name in ("basic_arithmetic", "word_sorting"):
        assert ReasoningGymTasks(name).held_out_reason() is None, name

    # A synthetic family split by its whole text (tags of letters: no numbers of their own).
    def tag(i: int) -> str:
        return "".join(chr(97 + int(d)) for d in str(i))

    def family(answer) -> list[dict]:
        return [
            {
                "question": f"Ann has {i % 7} cats and {i % 5} dogs. Dogs? ({tag(i)})",
                "answer": str(answer(i)),
            }
            for i in range(800)
        ]

    def whole_text(t) -> str:
        return t["question"]

    assert numbers_recall_answers(family(lambda i: i % 5), whole_text) is not None
    # Answers the numbers do not decide: nothing to recall.
    assert numbers_recall_answers(family(lambda i: (i * 7919) % 13), whole_text) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dataset": "codeio"},
        {
            "dataset": "composite",
            "config": {"datasets": [{"name": "codeio", "weight": 1.0, "config": {}}]},
        },
    ],
)
def test_families_that_exec_their_data_on_the_host_are_refused(kwargs, tmp_path, monkeypatch):
    """reasoning-gym's codeio generator exec()s snippets from its data in the generating
    process (one wrote sailor_performance.csv and test_dir/ into the working directory)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidEnvConfig, match="exec"):
        ReasoningGymEnv(size=4, **kwargs)
    assert list(tmp_path.iterdir()) == []
    assert "codeio" not in family_names()
