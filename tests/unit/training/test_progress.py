"""progress.csv rows from RLlib results, the progress line, and the run record."""

from __future__ import annotations

import math

import pandas as pd

from ddrl.training.progress import COLUMNS, ProgressLog, row_from_result
from ddrl.training.provenance import REDACTED, redact_env
from ddrl.study.study import Study
from ddrl.training.train import progress_line

RESULT = {
    "num_env_steps_sampled_lifetime": 6000.0,
    "time_this_iter_s": 2.0,
    "env_runners": {
        "num_env_steps_sampled": 2000,
        "episode_return_mean": 39.5,
        "episode_return_min": 15.0,
        "episode_return_max": 119.0,
        "episode_len_mean": 39.5,
        "num_episodes": 51,
    },
    "timers": {"env_runner_sampling_timer": 1.5, "learner_update_timer": 0.4, "synch_weights": 0.01},
    "fault_tolerance": {"num_remote_worker_restarts": 1, "num_healthy_workers": 2},
}


def test_row_reads_every_column_from_the_result():
    row = row_from_result(RESULT, iteration=3, time_total_s=7.5, session=1, timestamp=1.0)
    assert set(row) == set(COLUMNS)
    assert row["env_steps"] == 6000 and isinstance(row["env_steps"], int)
    assert row["env_steps_this_iter"] == 2000
    assert row["env_steps_per_s"] == 1000.0
    assert row["episode_return_max"] == 119.0
    assert row["sample_time_s"] == 1.5 and row["learn_time_s"] == 0.4
    assert row["sync_weights_time_s"] == 0.01
    assert row["env_runner_restarts"] == 1 and row["session"] == 1


def test_learner_statistics_of_each_algorithm_get_common_columns():
    ppo = {**RESULT, "learners": {"default_policy": {
        "policy_loss": -0.01, "vf_loss": 40.0, "entropy": 4.2, "mean_kl_loss": 0.007,
        "vf_explained_var": 0.6}}}
    sac = {**RESULT, "learners": {"default_policy": {
        "actor_loss": -55.0, "critic_loss": 2.5, "q_mean": 54.0, "alpha_value": 0.05,
        "logps": 1.3, "num_updates": 64}}}
    td3 = {**RESULT, "learners": {"default_policy": {"critic_loss": 3.0, "q_mean": 80.0}}}
    rows = {name: row_from_result(r, iteration=1, time_total_s=1.0, session=0, timestamp=0.0)
            for name, r in (("ppo", ppo), ("sac", sac), ("td3", td3))}
    picked = ("policy_loss", "value_loss", "q_mean", "alpha", "entropy", "logp_mean", "kl",
              "vf_explained_var")
    values = {name: [None if math.isnan(row[c]) else row[c] for c in picked]
              for name, row in rows.items()}
    assert values == {"ppo": [-0.01, 40.0, None, None, 4.2, None, 0.007, 0.6],
                      "sac": [-55.0, 2.5, 54.0, 0.05, None, 1.3, None, None],
                      "td3": [None, 3.0, 80.0, None, None, None, None, None]}


def test_missing_metrics_become_empty_not_errors():
    row = row_from_result({"time_this_iter_s": 1.0}, iteration=1, time_total_s=1.0,
                          session=0, timestamp=0.0)
    assert math.isnan(row["episode_return_mean"]) and math.isnan(row["env_steps_per_s"])


def test_progress_log_round_trips_and_truncates(tmp_path):
    log = ProgressLog(tmp_path / "progress.csv")
    for i in range(1, 5):
        log.append(row_from_result(RESULT, iteration=i, time_total_s=2.0 * i, session=0,
                                   timestamp=float(i)))
    reread = ProgressLog(tmp_path / "progress.csv")
    assert [int(r["iteration"]) for r in reread.rows] == [1, 2, 3, 4]
    reread.truncate_after(2)
    reread.flush()
    frame = pd.read_csv(tmp_path / "progress.csv")
    assert list(frame.columns) == COLUMNS and frame["iteration"].tolist() == [1, 2]
    assert not list(tmp_path.glob(".progress.csv*")), "temporary files left behind"


def test_progress_line_has_budget_return_speed_and_eta():
    spec = next(iter(Study.from_config({
        "study": "u", "experiments": [{"algorithms": ["PPO"], "envs": ["CartPole-v1"],
                                       "seeds": [0], "budget": {"env_steps": 10000}}]}).runs.values()))
    row = row_from_result(RESULT, iteration=3, time_total_s=6.0, session=0, timestamp=0.0)
    line = progress_line(spec.run_id, spec, row, [row])
    assert line == (f"ddrl {spec.run_id} iter=3 env_steps=6000/10000 return=39.50 "
                    "steps_per_s=1000.0 iter_s=2.00 eta=0:00:04")


def test_recorded_environment_redacts_secrets():
    env = {"AWS_SECRET_ACCESS_KEY": "abc", "AWS_ACCESS_KEY_ID": "AKIA", "RAY_ADDRESS": "x:1",
           "DDRL_TOKEN": "t", "HOME": "/root", "SLURM_JOB_ID": "7"}
    out = redact_env(env)
    assert out["AWS_SECRET_ACCESS_KEY"] == REDACTED and out["AWS_ACCESS_KEY_ID"] == REDACTED
    assert out["DDRL_TOKEN"] == REDACTED
    assert out["RAY_ADDRESS"] == "x:1" and out["SLURM_JOB_ID"] == "7" and "HOME" not in out
