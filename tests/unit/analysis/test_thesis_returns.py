"""The learning-returns table: best and final training return across seeds with t-intervals,
env steps at the best, and the thesis's published values beside the humanoid rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddrl.analysis.thesis_returns import learning_returns_stage, t_interval
from helpers.scaling_fixtures import write_run


def test_t_interval_known_values():
    mean, lo, hi = t_interval(np.array([1.0, 3.0]))
    assert mean == 2.0
    assert hi - mean == pytest.approx(12.706 * np.sqrt(2) / np.sqrt(2))
    assert np.isnan(t_interval(np.array([5.0]))[1])


def test_best_final_and_thesis_columns(tmp_path):
    dirs = [
        write_run(tmp_path, algorithm="SAC", seed=1, times=[1.0] * 4, steps_per_iter=1000,
                  returns=[10, 50, 40, 45]),
        write_run(tmp_path, algorithm="SAC", seed=2, times=[1.0] * 4, steps_per_iter=1000,
                  returns=[20, 30, 70, 60]),
        write_run(tmp_path, algorithm="PPO", env="CartPole-v1", seed=1, times=[1.0] * 3,
                  steps_per_iter=100, returns=[9, 200, 150]),
    ]
    experiments = {d.name: "learn" for d in dirs}
    table = learning_returns_stage(dirs, tmp_path / "tables" / "learning_returns", experiments)
    sac = table[table["algorithm"] == "SAC"].iloc[0]
    assert sac["experiment"] == "learn" and sac["seeds"] == 2
    assert sac["best_return"] == pytest.approx(60.0)       # mean of 50 and 70
    assert sac["final_return"] == pytest.approx(52.5)      # mean of 45 and 60
    assert sac["env_steps_at_best"] == pytest.approx(2500)  # median of 2000 and 3000
    assert sac["thesis_best_return"] == 2180 and sac["thesis_env_steps_at_best"] == 520000
    assert "single seed" in sac["thesis_caveat"]
    ppo = table[table["algorithm"] == "PPO"].iloc[0]
    assert ppo["best_return"] == 200 and ppo["env_steps_at_best"] == 200
    assert np.isnan(ppo["thesis_best_return"])
    assert "HumanoidBulletEnv-v0 only" in ppo["thesis_caveat"]
    csv = pd.read_csv(tmp_path / "tables" / "learning_returns.csv")
    assert len(csv) == 2
    md = (tmp_path / "tables" / "learning_returns.md").read_text()
    assert "Thesis best" in md and "2180" in md


def test_td3_carries_the_plotting_scale_caveat(tmp_path):
    d = write_run(tmp_path, algorithm="TD3", times=[1.0] * 2, returns=[1, 2])
    table = learning_returns_stage([d], tmp_path / "lr")
    td3 = table.iloc[0]
    assert td3["thesis_best_return"] == 1911 and td3["thesis_best_return_raw"] == 2850
    assert "0.67" in td3["thesis_caveat"]
