from __future__ import annotations

import json
import pickle
from functools import partial

import numpy as np
import pytest

from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.tasks import DatasetTasks, ProceduralTasks, load_records


def _gen(rng, *, scale):
    return {"x": int(rng.integers(1_000_000)) * scale}


def test_procedural_task_is_pure_function_of_seed_and_index():
    src = ProceduralTasks(partial(_gen, scale=2), name="t", seed=3)
    again = pickle.loads(pickle.dumps(src))
    assert src[10] == again[10] == src[10]
    assert src[10]["id"] == "t-s3-10"
    assert src[10] != src[11]
    assert ProceduralTasks(partial(_gen, scale=2), name="t", seed=4)[10] != src[10]


@pytest.mark.parametrize("index", [-1, 2**31, "3", 1.0, True])
def test_bad_index_is_a_programmer_error(index):
    src = ProceduralTasks(partial(_gen, scale=1), name="t")
    with pytest.raises(InvalidEnvConfig):
        src[index]


def test_procedural_rejects_negative_seed():
    with pytest.raises(InvalidEnvConfig, match="task_seed"):
        ProceduralTasks(partial(_gen, scale=1), name="t", seed=-1)


def _records():
    return [{"question": "1+1?", "final": "2"}, {"question": "2+2?", "final": "4", "id": "q2"}]


def test_load_jsonl_json_and_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in _records()) + "\n\n", encoding="utf-8")
    js = tmp_path / "d.json"
    js.write_text(json.dumps(_records()), encoding="utf-8")
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"question": "1+1?", "final": "2"}]), parquet)
    assert load_records(jsonl) == _records()
    assert load_records(str(js)) == _records()
    assert load_records(parquet) == [{"question": "1+1?", "final": "2"}]


@pytest.mark.parametrize(
    ("content", "name", "match"),
    [
        (None, "missing.jsonl", "no such file"),
        ("{bad json", "bad.jsonl", "Cannot parse"),
        ("a,b\n1,2", "data.csv", ".jsonl, .json or .parquet"),
        ('{"a": 1}', "obj.json", "list of JSON objects"),
    ],
)
def test_load_records_errors_say_how_to_fix(tmp_path, content, name, match):
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidDataset, match=match):
        load_records(path)


def test_dataset_field_map_ids_and_missing_fields():
    src = DatasetTasks(
        _records(),
        name="toy",
        required=("problem", "answer"),
        field_map={"problem": "question", "answer": "final"},
    )
    assert len(src) == 2
    assert src[0]["problem"] == "1+1?" and src[0]["answer"] == "2" and src[0]["id"] == "toy-0"
    assert src[1]["id"] == "q2"
    src[0]["problem"] = "mutated"
    assert src[0]["problem"] == "1+1?"
    with pytest.raises(InvalidDataset, match='field_map=\\{"problem": "<column>"'):
        DatasetTasks(_records(), name="toy", required=("problem",))
    with pytest.raises(InvalidDataset, match="no field `q`"):
        DatasetTasks(_records(), name="toy", field_map={"problem": "q"})
    with pytest.raises(InvalidDataset, match="no records"):
        DatasetTasks([], name="toy")


def _parse_gsm8k(task):
    if "####" not in task["final"]:
        raise ValueError("answer has no '####'")
    task["answer"] = task["final"].split("####")[-1].strip()
    return task


def test_dataset_transform_errors_name_the_record():
    good = DatasetTasks([{"final": "work #### 7"}], name="g", transform=_parse_gsm8k)
    assert good[0]["answer"] == "7"
    with pytest.raises(InvalidDataset, match="record 0: answer has no"):
        DatasetTasks([{"final": "7"}], name="g", transform=_parse_gsm8k)


def test_hf_loader_without_datasets_names_the_extra(monkeypatch):
    # A None entry in sys.modules makes `import datasets` raise ImportError, as if missing.
    monkeypatch.setitem(__import__("sys").modules, "datasets", None)
    from rllm_envs.error import DependencyNotInstalled

    with pytest.raises(DependencyNotInstalled, match=r'pip install "rllm-envs\[datasets\]"'):
        load_records("hf:openai/gsm8k:main")


def test_one_difficulty_check_for_every_env():
    import gymnasium as gym
    import numpy as np

    from rllm_envs.error import InvalidEnvConfig
    from rllm_envs.tasks import check_difficulty

    assert check_difficulty(np.int64(2), (1, 2, 3)) == 2
    for bad in (True, 2.0, "2", None, 9):
        with pytest.raises(InvalidEnvConfig, match="difficulty"):
            check_difficulty(bad, (1, 2, 3))
    for env_id in ("rllm/FrozenLake-v1", "rllm/Math-v1", "rllm/ToolUse-v1", "rllm/Search-v1",
                   "rllm/Countdown-v1"):  # fmt: skip
        with pytest.raises(InvalidEnvConfig, match="difficulty"):
            gym.make(env_id, difficulty=True)


_NAMES = ("Ana", "Bo", "Goran", "Ivo", "Mei", "Zoë", "O'Brien", "Kwame")


def _story(rng):
    """A word problem whose answer depends only on its numbers: names are decoration."""
    a, b = (_NAMES[int(i)] for i in rng.choice(len(_NAMES), size=2, replace=False))
    # A space rich enough to split (each universe keeps many questions).
    n, k = int(rng.integers(2, 120)), int(rng.integers(2, 60))
    question = f"{a} has {n} apples and {b} gives {a} {k} more. How many?"
    return {"question": question, "answer": n + k}


def test_the_universe_key_folds_names_case_and_layout_and_keeps_numbers():
    from rllm_envs.tasks import canonical_text, question_key

    same = [
        "Ana is 34 years older than Bo. How old is Bo?",
        "Goran is 34 years older than  Ivo.\nHow old is Ivo?",
        "Zoë is 34 YEARS older than O'Brien. How old is Kwame?",
    ]
    assert len({canonical_text(t) for t in same}) == 1
    assert canonical_text("Ana is 35 years older than Bo.") != canonical_text(same[0])
    # All-capital data (a string to transform, a map row) and single capitals stay.
    assert canonical_text("Insert X after AAB in DBBDEAC") != canonical_text(
        "Insert X after AAB in DBBDEAD"
    )
    # Without a question field the key is what the policy sees: never the answer or solution.
    a = {"nums": [3, 4], "target": 7, "solution": "3 + 4", "answer": "7", "id": "a"}
    b = {**a, "solution": "4 + 3", "answer": "x", "id": "b"}
    assert question_key(a) == question_key(b)


def test_near_duplicates_never_cross_universes():
    from rllm_envs.tasks import EVAL_TASK_SEED, question_key

    sources = [ProceduralTasks(_story, name="s", seed=s) for s in range(3)]
    train = {question_key(src[i]) for src in sources for i in range(200)}
    eval_source = ProceduralTasks(_story, name="s", seed=EVAL_TASK_SEED)
    held = {question_key(eval_source[i]) for i in range(100)}
    assert train and held and not train & held
    # The exact texts differ by names only: an exact-text split would have mixed them.
    assert len(held) < 100


def test_a_family_key_decides_the_universe():
    from rllm_envs.tasks import EVAL_TASK_SEED, key_universe, seed_universe

    def gen(rng):
        nums = [int(x) for x in rng.integers(1, 30, size=3)]
        return {"nums": nums, "target": int(rng.integers(1, 20)), "solution": str(rng.random())}

    def key(task):
        return f"{sorted(task['nums'])}->{task['target']}"

    for seed in (0, EVAL_TASK_SEED):
        src = ProceduralTasks(gen, name="k", seed=seed, key=key)
        assert {key_universe(src.universe_key(src[i])) for i in range(50)} == {seed_universe(seed)}
    train = {key(ProceduralTasks(gen, name="k", seed=0, key=key)[i]) for i in range(300)}
    held = {key(ProceduralTasks(gen, name="k", seed=EVAL_TASK_SEED, key=key)[i]) for i in range(50)}
    assert not train & held


def _lcm_story(rng):
    """Questions whose answer depends only on the multiset of their numbers, worded and ordered
    in several ways (what a policy memorising answers by the numbers would exploit)."""
    from math import lcm

    a, b = (int(x) for x in rng.choice(np.arange(2, 40), size=2, replace=False))
    name = _NAMES[int(rng.integers(len(_NAMES)))]
    template = [
        "What is lcm({a}, {b})?",
        "Find the least common multiple of {a} and {b}.",
        "{name} has boxes of {a} and of {b}. What is the smallest number both divide?",
    ][int(rng.integers(3))]
    if rng.random() < 0.5:
        a, b = b, a
    return {"question": template.format(a=a, b=b, name=name), "answer": str(lcm(a, b))}


def _memorised_accuracy(source, key, n=300):
    """Accuracy on evaluation tasks of a policy that memorised training answers by ``key``,
    and of the constant policy (the most common training answer)."""
    from collections import Counter

    from rllm_envs.tasks import EVAL_TASK_SEED

    train_source, held_source = source(0), source(EVAL_TASK_SEED)
    train = [train_source[i] for i in range(n)]
    held = [held_source[i] for i in range(n)]
    table = {key(t["question"]): t["answer"] for t in train}
    constant = Counter(t["answer"] for t in train).most_common(1)[0][0]
    lookup = sum(table.get(key(t["question"]), constant) == t["answer"] for t in held)
    return lookup / n, sum(constant == t["answer"] for t in held) / n


def test_questions_with_the_same_numbers_share_a_universe_whatever_their_words():
    from rllm_envs.tasks import canonical_text, key_universe, number_key, question_key

    same = [
        {"question": "What is lcm(4, 6)?"},
        {"question": "What is lcm(6,4)?"},
        {"question": "Find the least common multiple of 06 and 4.0"},
        {"question": "Ana has 4 apples and buys -6 more."},
        {"question": r"Compute $\frac{4}{6}$."},
    ]
    assert len({question_key(t) for t in same}) == 1
    assert len({key_universe(question_key(t)) for t in same}) == 1
    assert number_key("a 4 by 6 rectangle") == number_key("a 6 by 4 rectangle")
    assert number_key("4 and 6") != number_key("4 and 7") != number_key("4 and 6 and 6")
    assert number_key("3.5 and 03.50") == number_key("3.5 and 3.5") != number_key("35")
    # A question without numbers keeps its canonical text as its key.
    for text in ("How many letters does BANANA have?", "Insert X after AAB in DBBDEAC"):
        assert question_key({"question": text}) == canonical_text(text)
    assert number_key("no digits here") is None


def test_a_policy_memorising_answers_by_numbers_gains_nothing_on_evaluation():
    import re

    def source(seed):
        return ProceduralTasks(_lcm_story, name="lcm", seed=seed)

    def by_numbers(q):
        return tuple(sorted(re.findall(r"\d+", q)))

    def by_ordered_numbers(q):
        return tuple(re.findall(r"\d+", q))

    for key in (by_numbers, by_ordered_numbers, lambda q: q):
        lookup, constant = _memorised_accuracy(source, key)
        assert lookup <= constant + 0.02, (key, lookup, constant)


def test_a_generator_whose_numbers_do_not_split_it_is_keyed_by_its_text():
    from rllm_envs.tasks import EVAL_TASK_SEED, key_universe, question_key, text_key

    def rules(rng):
        # Numbered rules (the same numbers in every question) around a string of letters.
        word = "".join(rng.choice(list("ABCDE"), size=8))
        return {"question": f"Apply rule 1, then rule 2, then rule 3 to {word}.", "answer": word}

    train, held = (ProceduralTasks(rules, name="r", seed=s) for s in (0, EVAL_TASK_SEED))
    assert train.splitting_key() is held.splitting_key() is text_key
    train_qs = {train[i]["question"] for i in range(100)}
    held_qs = {held[i]["question"] for i in range(100)}
    assert len(held_qs) > 50 and not train_qs & held_qs
    assert {key_universe(text_key({"question": q})) for q in held_qs} == {"eval"}
    assert len({question_key({"question": q}) for q in train_qs | held_qs}) == 1


def _costly_rules(rng, calls):
    word = "".join(rng.choice(list("ABCDE"), size=8))
    calls.append(1)
    return {"question": f"Apply rule 1 to {word}.", "answer": word, "hidden": word[::-1]}


def _rules_probe(rng, calls):
    word = "".join(rng.choice(list("ABCDE"), size=8))
    calls.append(1)
    return {"question": f"Apply rule 1 to {word}.", "answer": word}


def test_a_probe_chooses_the_plan_and_generate_makes_the_tasks():
    from rllm_envs.tasks import EVAL_TASK_SEED, text_key

    full, probed = [], []
    plain = ProceduralTasks(
        partial(_costly_rules, calls=[]), name="p", seed=EVAL_TASK_SEED, balance=True
    )
    source = ProceduralTasks(
        partial(_costly_rules, calls=full),
        name="p",
        seed=EVAL_TASK_SEED,
        balance=True,
        probe=partial(_rules_probe, calls=probed),
    )
    assert source.splitting_key() is text_key and len(full) == 0 and len(probed) >= 256
    assert source[3] == plain[3] and "hidden" in source[3] and len(full) >= 1
    with pytest.raises(InvalidEnvConfig, match="Mixture"):
        from rllm_envs.tasks import Mixture

        ProceduralTasks(Mixture({"a": _costly_rules}, field="f"), name="m", probe=_rules_probe)


def test_a_tiny_question_space_keeps_its_tasks_in_both_universes():
    from rllm_envs.tasks import EVAL_TASK_SEED

    def tiny(rng):
        return {"question": f"What is {int(rng.integers(1, 4))} + 1?"}

    train, held = (ProceduralTasks(tiny, name="t", seed=s) for s in (0, EVAL_TASK_SEED))
    assert train.splitting_key() is None and held.splitting_key() is None
    # Too few questions to split: both universes draw from all three (none is held out).
    assert {held[i]["question"] for i in range(60)} == {train[i]["question"] for i in range(60)}


def test_a_generator_whose_questions_never_repeat_is_unsplit_and_shares_nothing():
    from rllm_envs.tasks import EVAL_TASK_SEED, question_text

    def directory(rng):
        # A made-up name in one template: names masked, every question is one key.
        name = "".join(rng.choice(list("bdgklmnprstvz"), size=6)).capitalize()
        return {"question": f"Where does {name} work?", "answer": name[::-1]}

    train, held = (ProceduralTasks(directory, name="d", seed=s) for s in (0, EVAL_TASK_SEED))
    assert held.splitting_key() is None and not held.questions_repeat()
    train_qs = {question_text(train[i]) for i in range(200)}
    held_qs = {question_text(held[i]) for i in range(200)}
    assert len(held_qs) == 200 and not train_qs & held_qs
    # Its universe key is the question itself: what two universes would share, if anything.
    assert held.universe_key(held[3]) == question_text(held[3])

    def tiny(rng):
        return {"question": f"What is {int(rng.integers(1, 4))} + 1?"}

    assert ProceduralTasks(tiny, name="t").questions_repeat()


def test_a_rich_space_is_probed_until_its_evaluation_universe_shows_its_keys():
    from rllm_envs.tasks import _PROBES, MIN_UNIVERSE_KEYS, grow_probe, probe_rng, question_key

    def pairs(rng):
        # About 210 keys, 26 of them evaluation ones: the first probes show too few of them.
        a, b = int(rng.integers(20)), int(rng.integers(20))
        return {"question": f"What is {a} times {b} plus {a + b + 1000}?"}

    probe = [pairs(probe_rng(i)) for i in range(_PROBES)]
    grown = grow_probe(probe, lambda i: pairs(probe_rng(i)), [question_key], 4 * _PROBES)
    assert len(grown) > len(probe)
    assert ProceduralTasks(pairs, name="p").splitting_key() is question_key
    assert MIN_UNIVERSE_KEYS == 20


def test_a_kept_task_is_a_fresh_copy():
    source = ProceduralTasks(_lcm_story, name="lcm", seed=3)
    first = source[5]
    first["question"] = "changed"
    assert source[5]["question"] != "changed" and source[5] == source[5]
