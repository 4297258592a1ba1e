"""The private-grading timing benchmark: its statistic, its trials, and its committed results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import private_grading

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "private_grading.json"


def test_auc_is_half_without_a_difference_and_one_when_every_pair_is_ordered():
    assert private_grading.auc([1, 2, 3], [1, 2, 3])[0] == pytest.approx(0.5)
    value, z = private_grading.auc([5, 6, 7], [1, 2, 3])
    assert value == 1.0 and z > 1.9
    assert private_grading.auc([1, 2], [5, 6])[0] == 0.0
    with pytest.raises(ValueError):
        private_grading.auc([], [1])


def test_a_wrong_answer_has_the_references_form_and_differs():
    for reference in ("0", "7", "3", "12", "x"):
        wrong = private_grading.wrong_answer(reference)
        assert wrong != reference and wrong.isdigit() == reference.isdigit()


@pytest.mark.integration
def test_a_short_run_plays_every_setting_and_the_log_agrees(tmp_path):
    pytest.importorskip("openenv.core.env_server", reason='needs "rllm-envs[openenv]"')
    out = tmp_path / "private_grading.json"
    assert private_grading.main(["--pairs", "4", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [row["setting"] for row in data["settings"]] == list(private_grading.SETTINGS)
    for row in data["settings"]:
        assert row["pairs"] == 4 and row["logged"] == {"paid": 4, "episodes": 8}
        floor = row["score_reply_s"]
        assert min(row["reply"]["median_ms"].values()) >= floor * 1e3
    assert data["env_kwargs"]["task_seed"] == "<private>" and data["commit"]


def test_the_committed_run_shows_what_the_docs_say():
    # docs/integrations.md: without protection the reply time and a second session's replies
    # tell the verdict; the floor hides the first, the work padding the second.
    rows = {row["setting"]: row for row in json.loads(RESULTS.read_text())["settings"]}

    def z(setting, probe):
        return abs(rows[setting][probe]["z"])

    assert z("none", "reply") > 3 and z("none", "neighbour") > 3
    assert z("floor", "reply") < 2.5 and z("floor", "neighbour") > 3
    assert z("floor+work", "reply") < 2.5 and z("floor+work", "neighbour") < 2.5
