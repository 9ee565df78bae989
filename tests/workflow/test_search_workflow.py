"""Searches run by the workflow: a 2x2 grid as four training jobs, and an adaptive Ray Tune
search (Optuna TPE + ASHA) that is killed mid-way and resumed with Tuner.restore.

Both use the test-only bandit of tests/helpers/search_env.py, whose best learning rate is known.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, SNAKEFILE, run_snakemake, write_yaml
from ddrl.study.study import Study

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]
# Ray's env runners import search_env themselves; ddrl stays importable from this checkout.
ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS / "helpers"), os.environ.get("PYTHONPATH")]))}
GRID_CONFIG = TESTS / "data" / "search_grid.yaml"
GRID = "results/searchgrid/search/bandit-grid"


@pytest.fixture(scope="module")
def grid_search(tmp_path_factory) -> Path:
    """The grid search's outputs (the experiment waits for best.yaml: not asked for here)."""
    workdir = tmp_path_factory.mktemp("search_grid")
    config = Path(shutil.copy(GRID_CONFIG, workdir / "search_grid.yaml"))
    run_snakemake(workdir, config, f"{GRID}/best.yaml", f"{GRID}/parameters.png", env=ENV)
    return workdir


def test_grid_expands_to_four_runs_and_the_summary_picks_the_known_best(grid_search,
                                                                        monkeypatch):
    monkeypatch.chdir(grid_search)  # hyperparameters_from paths are relative to the workdir
    study = Study.from_file(grid_search / "search_grid.yaml")
    trial_runs = study.search_runs["bandit-grid"]
    assert len(trial_runs) == 4
    board = pd.read_csv(grid_search / GRID / "leaderboard.csv")
    assert len(board) == 4 and set(board["status"]) == {"complete"}
    # Each trial was its own training job with its own run folder; recompute its metric.
    metric = {}
    for run_id in trial_runs:
        run = grid_search / "results/searchgrid/runs" / run_id
        record = json.loads((run / "run.json").read_text())
        progress = pd.read_csv(run / "progress.csv")
        metric[run_id] = progress["episode_return_mean"].dropna().tail(2).mean()
        assert record["result"]["env_steps"] >= 800
    for _, row in board.iterrows():
        assert row["metric"] == pytest.approx(metric[row["runs"]], abs=1e-6)
    assert board["metric"].iloc[0] == pytest.approx(max(metric.values()), abs=1e-6)
    # The known answer: PPO with lr 3e-2 learns the bandit within the budget, 1e-6 does not.
    best = yaml.safe_load((grid_search / GRID / "best.yaml").read_text())
    assert best["searched"]["lr"] == 3e-2 and board["lr"].iloc[0] == 3e-2
    assert set(board["lr"].iloc[2:]) == {1e-6}
    assert best["runs"] == [board["runs"].iloc[0]]
    assert (grid_search / GRID / "parameters.pdf").stat().st_size > 0
    md = (grid_search / GRID / "leaderboard.md").read_text()
    assert "| 1 | " + board["trial"].iloc[0] + " | 0.03 |" in md


def test_final_runs_take_the_winner_and_follow_best_yaml(grid_search, monkeypatch):
    config = grid_search / "search_grid.yaml"
    monkeypatch.chdir(grid_search)
    study = Study.from_file(config)
    (final_id,) = [r for r in study.runs if r not in study.search_runs["bandit-grid"]]
    assert study.run_inputs[final_id] == [f"{GRID}/best.yaml"]
    proc = run_snakemake(grid_search, config, f"results/searchgrid/runs/{final_id}/run.json",
                         env=ENV)
    record = json.loads((grid_search / "results/searchgrid/runs" / final_id / "run.json")
                        .read_text())
    best = yaml.safe_load((grid_search / GRID / "best.yaml").read_text())
    assert record["spec"]["hyperparameters"] == best["hyperparameters"]
    assert record["spec"]["seed"] == 7
    # The search outputs were up to date: the grid was not trained again.
    assert "rule train:" in proc.stdout + proc.stderr
    assert (proc.stdout + proc.stderr).count("rule train:") == 1
    # A new winner (here: edited by hand) makes a new final run; the old one is not reused.
    best["hyperparameters"]["num_epochs"] = 3
    (grid_search / GRID / "best.yaml").write_text(yaml.safe_dump(best))
    assert final_id not in Study.from_file(config).runs


TUNE_STUDY = {
    "study": "searchtune",
    "experiments": [{"algorithms": ["PPO"], "envs": ["search_env:TargetBandit-v0"],
                     "seeds": [1], "budget": {"env_steps": 200}}],
    "search": [{
        "name": "bandit-tune",
        "kind": "tune",
        "algorithm": "PPO",
        "env": "search_env:TargetBandit-v0",
        "seeds": [1],
        "budget": {"env_steps": 600},
        "checkpoint_every": 1,
        "hyperparameters": {"train_batch_size": 200, "minibatch_size": 50, "num_epochs": 2,
                            "fcnet_hiddens": [16]},
        "space": {"lr": {"loguniform": [1.0e-6, 3.0e-2]}, "fcnet_hiddens": [[8], [16]]},
        "num_samples": 4,
        "metric": {"last": 2},
        "tune": {"grace_period": 1, "reduction_factor": 2, "time_budget_s": 900, "num_cpus": 2},
    }],
}
TUNE = "results/searchtune/search/bandit-tune"


def _snakemake_cmd(workdir: Path, config: Path, *targets: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE),
            "--directory", str(workdir), "--configfile", str(config),
            "--profile", str(REPO / "profiles" / "local"), "--cores", "2", *targets]


def test_tune_search_is_killed_and_resumed_with_tuner_restore(tmp_path):
    config = write_yaml(tmp_path / "tune.yaml", TUNE_STUDY)
    log = tmp_path / "results/searchtune/logs/tune/bandit-tune.log"
    started = time.time()
    # 1. Start the search; kill the whole job (Snakemake, the script, Ray) once a trial is done.
    proc = subprocess.Popen(_snakemake_cmd(tmp_path, config, f"{TUNE}/trials.json"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **ENV}, start_new_session=True)
    try:
        deadline = time.time() + 600
        while time.time() < deadline and proc.poll() is None:
            if log.exists() and " finished" in log.read_text():
                break
            time.sleep(1)
        assert proc.poll() is None, "the search ended before it could be killed"
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = log.read_text() if log.exists() else ""
    done_before = set(re.findall(r"trial (\w+) finished", before))
    assert done_before, before[-3000:]
    assert not (tmp_path / TUNE / "trials.json").exists()
    assert (tmp_path / TUNE / "tune").is_dir()  # the experiment survives the kill

    # 2. Run again: the search continues where it was, and the summary follows.
    run_snakemake(tmp_path, config, f"{TUNE}/leaderboard.csv", f"{TUNE}/best.yaml", env=ENV)
    elapsed = time.time() - started
    after = log.read_text()
    resumed = after[after.index("resuming the search"):]
    trials = json.loads((tmp_path / TUNE / "trials.json").read_text())["trials"]
    ids = [t["tune_trial_id"] for t in trials]
    assert len(ids) == 4 and len(set(ids)) == 4  # the trial budget, not 4 more
    assert done_before <= set(ids)
    for trial_id in done_before:  # finished trials are kept, not trained again
        assert f"trial {trial_id} iter=" not in resumed
    assert all(t["status"] in ("complete", "stopped early") for t in trials)
    assert all(t["env_steps"] >= 200 for t in trials)
    # Optuna's state was saved with the experiment (what Tuner.restore reloads).
    assert list((tmp_path / TUNE / "tune").glob("searcher-state-*.pkl"))

    board = pd.read_csv(tmp_path / TUNE / "leaderboard.csv")
    assert len(board) == 4 and list(board["rank"]) == [1, 2, 3, 4]
    finite = board["metric"].dropna()
    assert list(finite) == sorted(finite, reverse=True)
    best = yaml.safe_load((tmp_path / TUNE / "best.yaml").read_text())
    assert best["kind"] == "tune" and best["searched"]["lr"] == board["lr"].iloc[0]
    assert 1e-6 <= best["searched"]["lr"] <= 3e-2
    print(f"\ntune search with kill and resume: {elapsed:.0f} s\n"
          + (tmp_path / TUNE / "leaderboard.md").read_text())
