"""Behaviour of rllm/Search-v1 beyond the shared conformance matrix."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.search import SearchEnv
from tests.envs.conformance import oracle, run_episode

pytest.importorskip("bm25s")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLLM_ENVS_CACHE", str(tmp_path / "cache"))


def test_first_observation_is_self_contained():
    env = gym.make("rllm/Search-v1")
    obs, info = env.reset(seed=0)
    assert "<search>" in obs and "<answer>" in obs and "Question:" in obs
    assert [t["function"]["name"] for t in info["tools"]] == ["search", "final_answer"]
    assert info["n_hops"] in (1, 2)


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
def test_oracle_solves_every_difficulty(difficulty):
    env = gym.make("rllm/Search-v1", difficulty=difficulty)
    for seed in range(4):
        steps = run_episode(env, oracle, seed=seed)
        assert steps[-1][4]["is_correct"] and sum(s[1] for s in steps) == 1.0
        assert len(steps) - 2 == steps[0][4]["n_hops"]  # one search per hop, then the answer
        # The answer was read: the last search returned a passage that states it.
        assert env.unwrapped.task["answers"][0] in steps[-2][0]


def test_search_then_answer_with_f1_component():
    env = SearchEnv(difficulty=1)
    env.reset(seed=1)
    answer = env.task["answers"][0]
    obs, reward, terminated, _, info = env.step(f"<search>{env.task['hops'][0]}</search>")
    assert "<information>Doc 1 (Title:" in obs and answer in obs and reward == 0.0
    assert info["queries"] == [env.task["hops"][0]] and len(info["retrieved"]) == 3
    assert not terminated and info["invalid_action"] is False
    obs, reward, terminated, _, info = env.step(f"<think>hm</think><answer>The {answer}.</answer>")
    assert terminated and reward == 1.0 and info["is_correct"]
    assert info["reward_components"] == {"em": 1.0, "f1": 1.0, "invalid_action": 0.0}


def test_partial_answer_gets_f1_but_no_reward():
    env = SearchEnv(difficulty=1)
    env.reset(seed=0, options={"task": {"question": "q?", "answers": ["Ross Island"]}})
    _, reward, terminated, _, info = env.step("<answer>Ross</answer>")
    assert terminated and reward == 0.0 and not info["is_correct"]
    assert info["reward_components"]["f1"] == pytest.approx(2 / 3) and info["f1"] > 0


def test_with_the_reference_hidden_an_unpaid_f1_reads_only_right_or_wrong():
    """att31d: a served Search env showed the token F1 of a wrong answer, a bag-of-words
    oracle on the hidden answer ("Foo Theinvos Bar": 0.5). Hidden and unpaid, it is 1 or 0;
    a reward that pays it keeps it."""
    task = {"question": "q?", "answers": ["Ross Island"]}
    for kwargs, expected in (
        ({"reveal_reference": False}, 0.0),
        ({"reveal_reference": False, "reward_weights": {"f1": 0.5}}, 2 / 3),
    ):
        env = SearchEnv(difficulty=1, **kwargs)
        env.reset(seed=0, options={"task": task})
        _, reward, _, _, info = env.step("<answer>Ross</answer>")
        assert info["f1"] == pytest.approx(expected)
        assert info["reward_components"]["f1"] == pytest.approx(expected)
        env.reset(seed=0, options={"task": task})
        assert env.step("<answer>Ross Island</answer>")[4]["f1"] == 1.0
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="reveal_reference"):
        SearchEnv(difficulty=1, reveal_reference="no")


def test_tool_call_form_works_for_search_and_answer():
    env = SearchEnv(difficulty=1)
    env.reset(seed=2)
    call = {"name": "search", "arguments": {"query": env.task["hops"][0]}}
    obs, _, _, _, info = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert "<information>" in obs and info["call_format"] == "hermes"
    assert info["queries"] == [env.task["hops"][0]]
    answer = {"name": "final_answer", "arguments": {"answer": env.task["answers"][0]}}
    _, reward, terminated, _, _ = env.step(json.dumps(answer))
    assert terminated and reward == 1.0


def test_several_searches_per_reply_are_capped():
    env = SearchEnv(max_searches_per_turn=2)
    env.reset(seed=0)
    obs, _, _, _, info = env.step("<search>a river</search><search>city</search><search>x</search>")
    assert len(info["queries"]) == 2 and "only 2 searches" in obs


@pytest.mark.parametrize(
    "reply, fragment",
    [
        ("I think it is Paris.", "no <search> query and no <answer>"),
        ("<search></search>", "placeholder"),
        ('<tool_call>{"name": "browse", "arguments": {}}</tool_call>', "unknown tool"),
        ("<tool_call>{oops</tool_call>", "not valid JSON"),
    ],
)
def test_unusable_replies_are_flagged_and_explained(reply, fragment):
    env = SearchEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert reward == 0.0 and not terminated and not truncated
    assert info["invalid_action"] and fragment in info["invalid_reason"]
    assert info["reward_components"]["invalid_action"] == 1.0
    assert "<search>" in obs or "rror" in obs


def test_invalid_penalty_is_an_option():
    env = SearchEnv(reward_weights={"invalid_action": -0.05})
    env.reset(seed=0)
    assert env.step("nothing")[1] == pytest.approx(-0.05)


def test_never_answering_truncates_with_zero():
    env = gym.make("rllm/Search-v1", max_turns=3)
    steps = run_episode(env, lambda *_: "<search>river</search>", seed=0)
    assert steps[-1][3] and sum(s[1] for s in steps) == 0.0


def test_user_corpus_and_question_file():
    env = gym.make(
        "rllm/Search-v1",
        corpus=str(FIXTURES / "corpus.jsonl"),
        dataset=str(FIXTURES / "questions.jsonl"),
    )
    obs, info = env.reset(options={"index": 0})
    assert "designer of the Analytical Engine" in obs and "5 passages" in obs
    obs, *_ = env.step("<search>Charles Babbage born</search>")
    assert "Doc 1 (Title: Charles Babbage)" in obs
    _, reward, terminated, _, _ = env.step("<answer>london</answer>")
    assert terminated and reward == 1.0
    for seed in range(3):
        assert run_episode(env, oracle, seed=seed)[-1][4]["is_correct"]


def test_oracle_on_a_passed_task_record():
    env = SearchEnv(corpus=FIXTURES / "corpus.jsonl", dataset=FIXTURES / "questions.jsonl")
    task = {"question": "  Which island is Mount Erebus on?\n", "answers": ["Ross Island"]}
    steps = run_episode(env, oracle, seed=0, options={"task": task})
    assert len(steps) == 3 and steps[-1][4]["is_correct"] and "Ross Island" in steps[1][0]


def test_accepted_answer_lists():
    env = SearchEnv(corpus=FIXTURES / "corpus.jsonl", dataset=FIXTURES / "questions.jsonl")
    env.reset(options={"index": 1})
    assert env.step("<answer>4 km</answer>")[1] == 1.0


def test_hotpotqa_file_brings_its_own_corpus():
    env = SearchEnv(dataset=FIXTURES / "hotpot_dev_distractor.json")
    obs, _ = env.reset(options={"index": 1})
    assert "Corliss Archer" in obs and "5 passages" in obs
    obs, *_ = env.step("<search>Shirley Temple</search>")
    assert "Chief of Protocol" in obs
    assert env.step("<answer>Chief of Protocol</answer>")[1] == 1.0


@pytest.mark.parametrize("name", ["nq_open.jsonl", "nq_simplified.jsonl", "search_r1.jsonl"])
def test_other_formats_with_a_user_corpus(name):
    env = SearchEnv(corpus=FIXTURES / "corpus.jsonl", dataset=FIXTURES / name)
    steps = run_episode(env, oracle, seed=0)
    assert steps[-1][4]["is_correct"]


def test_field_map_renames_columns(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"query": "Which island is Mount Erebus on?", "gold": "Ross Island"})
    )
    env = SearchEnv(
        corpus=FIXTURES / "corpus.jsonl",
        dataset=path,
        field_map={"question": "query", "answer": "gold"},
    )
    assert run_episode(env, oracle, seed=0)[-1][4]["is_correct"]


def test_configuration_errors_say_how_to_fix():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="pass `dataset=`"):
        SearchEnv(corpus=FIXTURES / "corpus.jsonl")
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="need a corpus"):
        SearchEnv(dataset=FIXTURES / "nq_open.jsonl")
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="difficulty"):
        SearchEnv(difficulty=9)
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="retriever"):
        SearchEnv(retriever="faiss")
    with pytest.raises(rllm_envs.InvalidDataset, match="field_map"):
        SearchEnv(
            corpus=FIXTURES / "corpus.jsonl",
            dataset=FIXTURES / "questions.jsonl",
            field_map={"question": "nope"},
        )
    env = SearchEnv()
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="answers"):
        env.reset(options={"task": {"question": "q"}})


def test_rank_bm25_backend_also_serves_the_oracle():
    # The two libraries use different BM25 variants (Lucene vs Okapi idf), so lower ranks may
    # differ; the passage that answers each hop comes back with both.
    env = SearchEnv(retriever="rank_bm25", difficulty=4)
    for seed in range(5):
        steps = run_episode(env, oracle, seed=seed)
        assert steps[-1][4]["is_correct"] and env.task["answers"][0] in steps[-2][0]


def test_pickled_env_continues_identically():
    env = SearchEnv(difficulty=3)
    env.reset(seed=4)
    env.step(env.oracle_action())
    clone = pickle.loads(pickle.dumps(env))
    action = env.oracle_action()
    assert clone.oracle_action() == action
    assert env.step(action) == clone.step(action)


def test_index_is_written_to_the_cache_dir(tmp_path):
    env = SearchEnv(cache_dir=tmp_path / "idx", kb_size=30)
    env.reset(seed=0)
    assert env.retriever.index_path is not None
    assert str(env.retriever.index_path).startswith(str(tmp_path / "idx"))


# --------------------------------------------------------------------------- ungameable
# `em` and `f1` need the answer's words; `invalid_action` (a penalty, best 0) needs every
# search and answer to be real. Copying the instructions must not reach a component's best.


@pytest.mark.parametrize(
    "reply",
    [
        '<tool_call>{"name": "final_answer", "arguments": {"answer": "..."}}</tool_call>',
        '<tool_call>{"name": "final_answer", "arguments": {"answer": ""}}</tool_call>',
        "<answer>...</answer>",
        "<answer></answer>",
        "<answer>the answer</answer>",
        "<answer>a name, a year, ...</answer>",
    ],
    ids=["call-dots", "call-empty", "tag-dots", "tag-empty", "tag-words", "tag-example"],
)
def test_parroted_placeholder_answers_are_refused(reply):
    env = SearchEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert not terminated and not truncated and reward == 0.0
    assert info["answer"] is None
    assert info["reward_components"] == {"em": 0.0, "f1": 0.0, "invalid_action": 1.0}
    assert "placeholder" in obs
    _, reward, terminated, _, _ = env.step(f"<answer>{env.task['answers'][0]}</answer>")
    assert terminated and reward == 1.0  # the real answer is still taken


@pytest.mark.parametrize(
    "reply",
    [
        "<search>your query</search>",
        "<search>...</search>",
        "<search>  </search>",
        '<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>',
        '<tool_call>{"name": "search", "arguments": {"query": ""}}</tool_call>',
        '<tool_call>{"name": "search", "arguments": {}}</tool_call>',
        "<tool_call></tool_call>",
    ],
    ids=["tag-example", "tag-dots", "tag-blank", "call-dots", "call-empty", "call-no-args",
         "empty-tag"],
)  # fmt: skip
def test_empty_and_placeholder_searches_are_invalid_and_not_run(reply):
    env = SearchEnv()
    env.reset(seed=0)
    obs, _, terminated, _, info = env.step(reply)
    assert not terminated and info["queries"] == [] and info["retrieved"] == []
    assert "<information>" not in obs
    assert info["reward_components"]["invalid_action"] == 1.0


def test_a_format_only_reply_copied_from_the_prompt_earns_nothing():
    env = SearchEnv()
    obs, _ = env.reset(seed=0)
    instructions = obs[: obs.index("Question:")]
    _, reward, terminated, _, info = env.step(instructions)
    assert not terminated and reward == 0.0 and info["queries"] == []
    assert info["reward_components"]["invalid_action"] == 1.0


def test_a_real_search_next_to_a_placeholder_one_still_runs_but_is_flagged():
    env = SearchEnv(difficulty=1)
    env.reset(seed=1)
    hop = env.task["hops"][0]
    _, _, _, _, info = env.step(f"<search>{hop}</search><search>your query</search>")
    assert info["queries"] == [hop]
    assert info["reward_components"]["invalid_action"] == 1.0


def _constant_answer_reward(difficulty: int, task_seed: int, resets: int) -> tuple[float, int]:
    """The reward of the world's most common answer given to every reset, and the questions."""
    from collections import Counter

    env = gym.make("rllm/Search-v1", difficulty=difficulty, task_seed=task_seed)
    tasks = env.unwrapped.tasks
    top = Counter(tasks[i]["answers"][0] for i in range(resets)).most_common(1)[0][0]
    reward, questions = 0.0, set()
    for seed in range(resets):
        env.reset(seed=seed)
        questions.add(env.unwrapped.task["question"])
        reward += env.step(f"<answer>{top}</answer>")[1]
    return reward / resets, len(questions)


#: A constant answer's reward over 300 resets: the 5% cap plus two standard errors.
_CONSTANT_BOUND = 0.05 + 2 * (0.05 * 0.95 / 300) ** 0.5


@pytest.mark.parametrize("universe", ["train", "eval"])
def test_a_constant_answer_earns_no_more_than_a_guess_at_the_hardest_difficulty(universe):
    from rllm_envs.tasks import EVAL_TASK_SEED

    # Three-hop answers are countries and rivers, few per world: one country answered 19% of
    # the evaluation seed's questions when that seed kept only the eighth of its world's
    # questions that hashed to its universe (its world is its universe's already).
    reward, questions = _constant_answer_reward(
        5, 0 if universe == "train" else EVAL_TASK_SEED, 300
    )
    assert reward <= _CONSTANT_BOUND
    assert questions >= 100  # the seed plays every question of its world (200 at d5)


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("universe", ["train", "eval"])
def test_no_answer_holds_more_than_its_cap_of_a_world(difficulty, universe):
    from collections import Counter

    from rllm_envs.tasks import EVAL_TASK_SEED, MAX_ANSWER_SHARE

    seed = 0 if universe == "train" else EVAL_TASK_SEED
    tasks = gym.make("rllm/Search-v1", difficulty=difficulty, task_seed=seed).unwrapped.tasks
    n = 1000
    counts = Counter(tasks[i]["answers"][0] for i in range(n))
    cap = max(1 / len(counts), MAX_ANSWER_SHARE)
    assert counts.most_common(1)[0][1] / n <= cap + 4 * (cap * (1 - cap) / n) ** 0.5
    reward, _ = _constant_answer_reward(difficulty, seed, 300)
    assert reward <= _CONSTANT_BOUND
