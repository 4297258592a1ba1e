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
