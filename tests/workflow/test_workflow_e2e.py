"""The whole workflow on a tiny study: every expected file, with the right contents."""

from __future__ import annotations

import json

import pandas as pd

from ddrl.training.progress import COLUMNS
from ddrl.study.study import Study

from conftest import TINY_CONFIG


def test_tiny_study_writes_every_run_output(tiny_study):
    study = Study.from_file(TINY_CONFIG)
    assert len(study.runs) == 6  # PPO x 2 seeds x 2 resources, SAC, TD3
    for run_id, spec in study.runs.items():
        run_dir = tiny_study / "results" / "tiny" / "runs" / run_id
        progress = pd.read_csv(run_dir / "progress.csv")
        assert list(progress.columns) == COLUMNS
        steps_per_iter = (spec.hyperparameters["train_batch_size"] if spec.algorithm == "PPO"
                          else spec.hyperparameters["timesteps_per_iteration"])
        expected_iters = -(-spec.budget["env_steps"] // steps_per_iter)
        assert len(progress) == expected_iters, run_id
        assert progress["iteration"].tolist() == list(range(1, expected_iters + 1))
        assert progress["env_steps"].is_monotonic_increasing
        assert progress["env_steps"].iloc[-1] >= spec.budget["env_steps"]
        assert (progress["time_this_iter_s"] > 0).all()
        assert (progress["env_steps_per_s"] > 0).all()
        assert progress["sample_time_s"].notna().all()
        assert progress["learn_time_s"].notna().any()
        # The learner's statistics, on every iteration that trained.
        trained = progress[progress["learn_time_s"] > 0]
        stats = {"PPO": ["policy_loss", "value_loss", "entropy", "kl", "vf_explained_var"],
                 "SAC": ["policy_loss", "value_loss", "q_mean", "alpha", "logp_mean"],
                 "TD3": ["value_loss", "q_mean"]}[spec.algorithm]
        assert len(trained) and trained[stats].notna().all().all(), (run_id, trained[stats])
        if spec.algorithm == "SAC":
            assert (trained["alpha"] > 0).all()

        record = json.loads((run_dir / "run.json").read_text())
        assert record["run_id"] == run_id
        assert record["status"] == "complete"
        assert record["spec"] == spec.to_dict()
        assert record["versions"]["ray"] == "2.60.0"
        assert record["host"]["cpu_count"] >= 1 and record["host"]["cpu_model"]
        assert record["started"] <= record["finished"]
        assert record["result"]["env_steps"] == progress["env_steps"].iloc[-1]
        assert (run_dir / "checkpoint" / "rllib_checkpoint.json").is_file()


def test_tiny_study_draws_reward_curves(tiny_study):
    figures = tiny_study / "results" / "tiny" / "figures"
    for name in ("fig12-14_reward_curves.pdf", "fig12-14_reward_curves.png"):
        path = figures / name
        assert path.stat().st_size > 5_000, name
    assert (figures / "fig12-14_reward_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (figures / "fig12-14_reward_curves.pdf").read_bytes()[:5] == b"%PDF-"


def test_final_checkpoint_loads_with_rllib(tiny_study):
    from ray.rllib.algorithms.algorithm import Algorithm

    study = Study.from_file(TINY_CONFIG)
    run_id = next(r for r, s in study.runs.items() if s.algorithm == "PPO")
    path = tiny_study / "results" / "tiny" / "runs" / run_id / "checkpoint"
    algo = Algorithm.from_checkpoint(str(path))
    try:
        assert algo.iteration == 3
    finally:
        algo.stop()
