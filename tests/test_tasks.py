from __future__ import annotations

import json
import pickle
from functools import partial

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
    for env_id in ("rllm/FrozenLake-v0", "rllm/Math-v0", "rllm/ToolUse-v0", "rllm/Search-v0",
                   "rllm/Countdown-v0"):  # fmt: skip
        with pytest.raises(InvalidEnvConfig, match="difficulty"):
            gym.make(env_id, difficulty=True)


_NAMES = ("Ana", "Bo", "Goran", "Ivo", "Mei", "Zoë", "O'Brien", "Kwame")


def _story(rng):
    """A word problem whose answer depends only on its numbers: names are decoration."""
    a, b = (_NAMES[int(i)] for i in rng.choice(len(_NAMES), size=2, replace=False))
    n, k = int(rng.integers(2, 12)), int(rng.integers(2, 6))
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
        nums = [int(x) for x in rng.integers(1, 6, size=3)]
        return {"nums": nums, "target": int(rng.integers(1, 4)), "solution": str(rng.random())}

    def key(task):
        return f"{sorted(task['nums'])}->{task['target']}"

    for seed in (0, EVAL_TASK_SEED):
        src = ProceduralTasks(gen, name="k", seed=seed, key=key)
        assert {key_universe(src.universe_key(src[i])) for i in range(50)} == {seed_universe(seed)}
    train = {key(ProceduralTasks(gen, name="k", seed=0, key=key)[i]) for i in range(300)}
    held = {key(ProceduralTasks(gen, name="k", seed=EVAL_TASK_SEED, key=key)[i]) for i in range(50)}
    assert not train & held
