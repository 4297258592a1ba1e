from __future__ import annotations

import json
import shutil
import subprocess
from math import comb
from pathlib import Path

import pytest

import rllm_envs
from benchmarks.leaderboard import LeaderboardConfig, mean_pass_at_k, pass_at_k, run
from benchmarks.leaderboard.__main__ import main as cli
from benchmarks.leaderboard.report import load_run, markdown, write_report

FL = "rllm/FrozenLake-v1"


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
        (10, 3, 1, 0.3),
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 0, 5, 0.0),
        (10, 6, 5, 1.0),  # n - c < k
        (20, 2, 10, 1 - 45 / 190),  # 1 - C(18,10)/C(20,10) = 1 - 10*9/(20*19)
    ],
)
def test_pass_at_k_matches_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_pass_at_k_rejects_inconsistent_counts():
    for n, c, k in [(3, 4, 1), (3, 1, 4), (3, 1, 0), (3, -1, 1)]:
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)
    assert mean_pass_at_k([(4, 1), (4, 0), (1, 1)], 2) == pytest.approx(0.25)


def test_run_writes_provenance_episodes_and_summary(tmp_path):
    config = LeaderboardConfig(policy="oracle", envs=[FL], n_tasks=4, k=2)
    summary = run(config, tmp_path, progress=False)
    run_dir = tmp_path / "oracle"
    meta = json.loads((run_dir / "meta.json").read_text())
    prov = meta["provenance"]
    assert meta["config"]["n_tasks"] == 4 and "gymnasium" in prov["machine"]["versions"]
    assert len(prov["commit"]) in (0, 40) and prov["time"].endswith("Z")
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 8
    assert summary["envs"][FL]["pass@1"] == 1.0 and summary["envs"][FL]["pass@2"] == 1.0
    assert summary["overall_pass@1"] == 1.0
    assert json.loads((run_dir / "summary.json").read_text()) == summary


def test_interrupted_run_resumes_without_losing_work(tmp_path):
    config = LeaderboardConfig(policy="random", envs=[FL], n_tasks=6, k=2, seed=3)
    full = run(config, tmp_path / "full", progress=False)
    run(config, tmp_path / "cut", progress=False)
    episodes = tmp_path / "cut" / "random" / "episodes.jsonl"
    lines = episodes.read_text().splitlines()
    # Simulate an interruption: 5 complete episodes and half of the 6th line.
    episodes.write_text("\n".join(lines[:5]) + "\n" + lines[5][:20])
    resumed = run(config, tmp_path / "cut", progress=False)
    meta = json.loads((tmp_path / "cut" / "random" / "meta.json").read_text())
    assert meta["resumed_with"] == 5
    assert len(episodes.read_text().splitlines()) == 12
    for summary in (resumed, full):
        for metrics in summary["envs"].values():
            metrics.pop("wall_s")
    assert resumed == full


def test_resuming_with_another_config_is_refused(tmp_path):
    run(LeaderboardConfig(policy="oracle", envs=[FL], n_tasks=2), tmp_path, progress=False)
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="another config"):
        run(LeaderboardConfig(policy="oracle", envs=[FL], n_tasks=3), tmp_path, progress=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"envs": ["rllm/FrozenLak-v0"]}, "Did you mean"), ({"k": 0}, "k >= 1")],
)
def test_bad_config_is_rejected(kwargs, match):
    with pytest.raises(rllm_envs.InvalidEnvConfig, match=match):
        LeaderboardConfig(policy="oracle", **kwargs)


def test_unknown_policy_is_rejected(tmp_path):
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Unknown policy spec"):
        run(LeaderboardConfig(policy="oracel", envs=[FL], n_tasks=1), tmp_path, progress=False)


def test_same_episodes_for_every_policy(tmp_path):
    for policy in ("oracle", "random"):
        run(LeaderboardConfig(policy=policy, envs=[FL], n_tasks=3), tmp_path, progress=False)
    tasks = {
        p: [json.loads(line)["task_id"] for line in (tmp_path / p / "episodes.jsonl").open()]
        for p in ("oracle", "random")
    }
    assert tasks["oracle"] == tasks["random"]


def _two_runs(tmp_path: Path) -> list[Path]:
    for policy in ("oracle", "random"):
        run(LeaderboardConfig(policy=policy, envs=[FL], n_tasks=5), tmp_path, progress=False)
    return [tmp_path / "oracle", tmp_path / "random"]


def test_markdown_ranks_policies(tmp_path):
    text = markdown([load_run(d) for d in _two_runs(tmp_path)])
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| oracle") or line.startswith("| random")
    ]
    assert rows[0].startswith("| oracle | 1.000")


def test_cli_run_and_report(tmp_path, capsys):
    assert (
        cli(["run", "--policy", "oracle", "--envs", FL, "--n-tasks", "2", "--out", str(tmp_path)])
        == 0
    )
    assert cli(["report", str(tmp_path / "oracle"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "index.html").exists() and (tmp_path / "leaderboard.md").exists()
    assert cli(["run", "--policy", "nope", "--envs", FL, "--out", str(tmp_path)]) == 2


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_html_page_renders_offline_in_headless_chromium(tmp_path):
    md, page = write_report(_two_runs(tmp_path), tmp_path / "report")
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # self-contained
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "rllm-envs leaderboard" in dom and 'id="per-env"' in dom
    assert dom.count("<svg") == 2  # one bar chart per env + the score-vs-tokens scatter
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, *flags, "--window-size=1200,1400", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one


def test_multiagent_envs_are_evaluated(tmp_path):
    envs = ["rllm/SolverJudge-v1", "rllm/TicTacToe-v0"]
    oracle = run(LeaderboardConfig(policy="oracle", envs=envs, n_tasks=4), tmp_path, progress=False)
    rand = run(LeaderboardConfig(policy="random", envs=envs, n_tasks=4), tmp_path, progress=False)
    # Cooperative self-play: the oracle solver(s) and judge are all correct.
    assert oracle["envs"]["rllm/SolverJudge-v1"]["pass@1"] == 1.0
    assert rand["envs"]["rllm/SolverJudge-v1"]["pass@1"] == 0.0
    # Competitive: the evaluated policy plays player_0 against the scripted heuristic. A task's
    # opening is random plies, which can leave the evaluated side lost before it moves, so the
    # minimax oracle's mean is not always >= 0; random play does worse.
    ttt_oracle = oracle["envs"]["rllm/TicTacToe-v0"]
    assert rand["envs"]["rllm/TicTacToe-v0"]["mean_reward"] < ttt_oracle["mean_reward"]


def test_default_envs_cover_single_and_multi_agent():
    config = LeaderboardConfig(policy="oracle")
    assert set(rllm_envs.list_envs()) | set(rllm_envs.list_multiagent_envs()) == set(config.envs)
