"""Hyperparameter searches on a real Slurm (see slurm_cluster.py).

- The 2x2 grid of tests/data/search_grid.yaml through ``--profile profiles/slurm``: every
  trial is its own Slurm training job, and the search summary ranks them (the best learning
  rate of the test-only bandit, tests/helpers/search_env.py, is known).
- An adaptive (Ray Tune) search whose tune job asks Slurm for two nodes: Ray is started over
  the allocation (ddrl.cluster.ray_nodes.ray_cluster_on_nodes, the same bootstrap as multi-node
  training) and the trials run on both nodes.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ddrl.study.study import Study

from .conftest import snakemake_command, write_test_profile
from .test_slurm import _read

TESTS = Path(__file__).resolve().parents[1]
GRID_CONFIG = TESTS / "data" / "search_grid.yaml"
GRID = "results/searchgrid/search/bandit-grid"
TUNE = "results/slurmtune/search/bandit-tune"


def _snakemake(workdir: Path, config: Path, *targets: str, timeout: float = 600) -> str:
    """Run the workflow with the test Slurm profile. Slurm jobs inherit this environment
    (sbatch --export=ALL), so PYTHONPATH makes search_env importable in every job and in
    the Ray workers the jobs start."""
    profile = write_test_profile(workdir / "profile")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS / "helpers"), os.environ.get("PYTHONPATH")]))}
    t0 = time.monotonic()
    proc = subprocess.run(snakemake_command(workdir, config, profile, *targets),
                          capture_output=True, text=True, timeout=timeout, env=env)
    (workdir / "wall_s").write_text(f"{time.monotonic() - t0:.1f}")
    if proc.returncode != 0:
        logs = "\n".join(f"--- {p} ---\n{p.read_text()[-3000:]}"
                         for p in sorted(workdir.glob("logs/slurm/**/*.log")))
        raise AssertionError(f"snakemake --profile slurm failed ({proc.returncode}):\n"
                             f"{proc.stderr[-6000:]}\n{logs}")
    return proc.stderr


def _submitted(log: str) -> dict[str, list[tuple[str, str]]]:
    """rule -> [(wildcards folder, Slurm job id)] of every job Snakemake submitted."""
    jobs: dict[str, list[tuple[str, str]]] = {}
    for slurm_id, rule, rest in re.findall(
            r"has been submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/(\S*)\)", log):
        jobs.setdefault(rule, []).append((str(Path(rest).parent), slurm_id))
    return jobs


# -- the grid: four training jobs and a summary --------------------------------------------

@pytest.fixture(scope="module")
def slurm_grid(slurm_cluster, tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("slurm_grid")
    config = Path(shutil.copy(GRID_CONFIG, workdir / "search_grid.yaml"))
    log = _snakemake(workdir, config, f"{GRID}/best.yaml", f"{GRID}/leaderboard.md")
    (workdir / "snakemake.stderr").write_text(log)
    return workdir


def test_grid_trials_ran_as_slurm_jobs_and_the_summary_picks_the_known_best(
        slurm_grid, slurm_cluster, monkeypatch):
    monkeypatch.chdir(slurm_grid)  # hyperparameters_from paths are relative to the workdir
    study = Study.from_file(slurm_grid / "search_grid.yaml")
    trial_runs = study.search_runs["bandit-grid"]
    assert len(trial_runs) == 4

    # Each trial was one Slurm job of rule train (its own log folder), and it completed.
    jobs = _submitted((slurm_grid / "snakemake.stderr").read_text())
    train = dict(jobs.get("train", []))
    assert set(train) == set(trial_runs), jobs
    assert len(set(train.values())) == 4
    for run_id, slurm_id in train.items():
        info = slurm_cluster.job_info(slurm_id)
        assert info["JobState"] == "COMPLETED" and info["Partition"] == "ddrltest", info
        assert (slurm_grid / "logs/slurm/rule_train" / run_id / f"{slurm_id}.log").is_file()
        record = json.loads((slurm_grid / "results/searchgrid/runs" / run_id / "run.json")
                            .read_text())
        assert record["placement"]["slurm_job_id"] == slurm_id  # trained inside that job
    (summary,) = jobs["search_summary"]
    assert slurm_cluster.job_info(summary[1])["JobState"] == "COMPLETED"

    # The leaderboard ranks the four trials by their recorded metric; lr 3e-2 wins.
    board = pd.read_csv(slurm_grid / GRID / "leaderboard.csv")
    assert len(board) == 4 and set(board["status"]) == {"complete"}
    assert set(board["runs"]) == set(trial_runs)
    for _, row in board.iterrows():
        progress = pd.read_csv(slurm_grid / "results/searchgrid/runs" / row["runs"]
                               / "progress.csv")
        expected = progress["episode_return_mean"].dropna().tail(2).mean()
        assert row["metric"] == pytest.approx(expected, abs=1e-6)
    assert list(board["metric"]) == sorted(board["metric"], reverse=True)
    assert board["lr"].iloc[0] == 3e-2 and set(board["lr"].iloc[2:]) == {1e-6}
    best = yaml.safe_load((slurm_grid / GRID / "best.yaml").read_text())
    assert best["searched"] == {"lr": 3e-2, "num_epochs": int(board["num_epochs"].iloc[0])}
    assert best["hyperparameters"]["lr"] == 3e-2
    assert best["runs"] == [board["runs"].iloc[0]]
    print(f"\ngrid search on Slurm: {(slurm_grid / 'wall_s').read_text()} s\n"
          + (slurm_grid / GRID / "leaderboard.md").read_text())


# -- adaptive search: one tune job over a 2-node allocation ----------------------------------

TUNE_STUDY = {
    "study": "slurmtune",
    "experiments": [{"algorithms": ["PPO"], "envs": ["search_env:TargetBandit-v0"],
                     "seeds": [1], "budget": {"env_steps": 200}}],
    "search": [{
        "name": "bandit-tune",
        "kind": "tune",
        "algorithm": "PPO",
        "env": "search_env:TargetBandit-v0",
        "seeds": [1],
        "budget": {"env_steps": 400},
        "checkpoint_every": 1,
        "hyperparameters": {"train_batch_size": 200, "minibatch_size": 50, "num_epochs": 2,
                            "fcnet_hiddens": [16]},
        "space": {"lr": {"loguniform": [1.0e-6, 3.0e-2]}},
        "num_samples": 2,
        "metric": {"last": 1},
        # Two trials at once, one node each: a trial takes 2 CPUs (driver + 1 env runner),
        # and each node's Ray gets 2.
        "tune": {"nodes": 2, "max_concurrent_trials": 2, "grace_period": 2,
                 "time_budget_s": 300},
    }],
}


def test_tune_search_in_a_two_node_allocation_runs_trials_on_both_nodes(
        slurm_cluster, tmp_path):
    config = tmp_path / "tune.yaml"
    config.write_text(yaml.safe_dump(TUNE_STUDY, sort_keys=False))
    # Only the tune job: its leaderboard is the local profile's (tests/workflow/test_search_workflow.py),
    # and the grid test above runs search_summary as a Slurm job.
    log = _snakemake(tmp_path, config, f"{TUNE}/trials.json")

    # The tune job was one Slurm job over both nodes, one task per node.
    (tune_job,) = _submitted(log)["tune"]
    info = slurm_cluster.job_info(tune_job[1])
    assert info["JobState"] == "COMPLETED", info
    assert info["NumNodes"] == "2" and info["NumTasks"] == "2", info
    assert info["CPUs/Task"] == "2", info
    tune_log = (tmp_path / "results/slurmtune/logs/tune/bandit-tune.log").read_text()
    assert "ddrl ray cluster: 2 nodes up" in tune_log, tune_log[-3000:]

    # Tune placed the trials on both nodes: two network hosts, one trial each.
    record = json.loads((tmp_path / TUNE / "trials.json").read_text())
    trials = record["trials"]
    assert len(trials) == 2 and all(t["iterations"] >= 1 for t in trials), trials
    assert sorted(t["node"] for t in trials) == ["n1", "n2"], trials
    assert sorted(t["node_ip"] for t in trials) == ["10.231.76.1", "10.231.76.2"], trials
    assert all(t["status"] in ("complete", "stopped early") for t in trials), trials
    assert all(math.isfinite(t["metric"]) and t["env_steps"] >= 200 for t in trials), trials
    assert len({t["tune_trial_id"] for t in trials}) == 2

    # The cluster was shut down: no Ray process of that job is left, nor its token.
    leftover = [p for p in Path("/proc").glob("[0-9]*/cmdline")
                if f"ddrl-ray-{tune_job[1]}-".encode() in _read(p)]
    assert not leftover
    assert not (tmp_path / TUNE / f"ray-{tune_job[1]}" / "auth_token").exists()
    print(f"\ntune search in a 2-node allocation: {(tmp_path / 'wall_s').read_text()} s, "
          f"search {record['session_wall_time_s']} s; trials: "
          + ", ".join(f"{t['trial']} on {t['node']} ({t['node_ip']}) metric={t['metric']}"
                      for t in trials))

