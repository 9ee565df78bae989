"""budget.return_threshold: the stop rule, its config checks, the cost table, a real run."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from ddrl.analysis.cost import cost_table, with_defaults
from ddrl.errors import ConfigError
from ddrl.analysis.scaling import load_runs
from ddrl.study.study import Study
from ddrl.training.stop import DEFAULT_RETURN_WINDOW, episodes_so_far, stop_reason

from helpers.scaling_fixtures import write_run

BUDGET = {"env_steps": 10_000, "time_limit_s": 60.0, "return_threshold": 200.0,
          "return_window": 20}


def test_threshold_stops_only_with_a_full_window_of_episodes():
    at = dict(env_steps=5000, time_total_s=10.0)
    assert stop_reason(BUDGET, return_mean=250.0, episodes=19, **at) is None
    assert stop_reason(BUDGET, return_mean=250.0, episodes=20, **at) == "return_threshold"
    assert stop_reason(BUDGET, return_mean=200.0, episodes=20, **at) == "return_threshold"
    assert stop_reason(BUDGET, return_mean=199.9, episodes=500, **at) is None
    assert stop_reason(BUDGET, return_mean=math.nan, episodes=500, **at) is None
    # Progress rows read back from CSV hold strings.
    assert stop_reason(BUDGET, return_mean="201.5", episodes=20, **at) == "return_threshold"


def test_other_limits_and_their_order():
    assert stop_reason(BUDGET, env_steps=10_000, time_total_s=1.0) == "env_steps"
    assert stop_reason(BUDGET, env_steps=1, time_total_s=60.0) == "time_limit_s"
    # Both met at once: the threshold is named, the more informative reason.
    assert stop_reason(BUDGET, env_steps=10_000, time_total_s=60.0, return_mean=300.0,
                       episodes=20) == "return_threshold"
    assert stop_reason({"env_steps": 100}, env_steps=99, time_total_s=1e9,
                       return_mean=1e9, episodes=1e9) is None
    assert episodes_so_far([{"episodes_this_iter": "3"}, {"episodes_this_iter": "nan"},
                            {"episodes_this_iter": 4.0}, {}]) == 7


def _config(budget):
    return {"study": "s", "experiments": [{"algorithms": ["PPO"], "envs": ["CartPole-v1"],
                                           "seeds": [1], "budget": budget}]}


def test_window_is_written_into_the_run_spec():
    spec = next(iter(Study.from_config(_config({"env_steps": 10, "return_threshold": 5})).runs
                     .values()))
    assert spec.budget == {"env_steps": 10, "return_threshold": 5,
                           "return_window": DEFAULT_RETURN_WINDOW}
    plain = next(iter(Study.from_config(_config({"env_steps": 10})).runs.values()))
    assert plain.budget == {"env_steps": 10}  # runs without a threshold keep their ids


@pytest.mark.parametrize("budget, words", [
    ({"return_threshold": 5}, ["experiments.0.budget", "no env_steps or time_limit_s"]),
    ({"env_steps": 10, "return_window": 5}, ["experiments.0.budget.return_window", "5",
                                            "without return_threshold"]),
    ({"env_steps": 10, "return_threshold": 5, "return_window": 0},
     ["experiments.0.budget.return_window", "minimum"]),
    ({"env_steps": 10, "return_threshold": "high"},
     ["experiments.0.budget.return_threshold", "'high'", "number"]),
])
def test_bad_budgets_are_named(budget, words):
    with pytest.raises(ConfigError) as err:
        Study.from_config(_config(budget))
    for word in words:
        assert word in str(err.value)


def _with_budget(run_dir, budget, episodes_per_iter):
    record = json.loads((run_dir / "run.json").read_text())
    record["spec"]["budget"].update(budget)
    (run_dir / "run.json").write_text(json.dumps(record))
    progress = pd.read_csv(run_dir / "progress.csv")
    progress["episodes_this_iter"] = episodes_per_iter
    progress.to_csv(run_dir / "progress.csv", index=False)


def test_cost_table_uses_the_budget_threshold_and_counts_env_steps(tmp_path):
    # Returns 0, 10, ..., 90; 3 episodes an iteration; 1000 steps and 60 s an iteration.
    run = write_run(tmp_path, times=[60.0] * 10, steps_per_iter=1000, returns=range(0, 100, 10))
    # Budget threshold 30 over 12 episodes: the mean reaches 30 at iteration 4 (12 episodes).
    _with_budget(run, {"return_threshold": 30.0, "return_window": 12}, 3)
    cfg = with_defaults({"return_threshold": {"HumanoidBulletEnv-v0": 80.0}})
    row = cost_table(load_runs([run]), cfg).iloc[0]
    assert row["return_threshold"] == 30.0 and row["threshold_from"] == "budget.return_threshold"
    assert row["time_to_threshold_s"] == pytest.approx(240.0)
    assert row["env_steps_to_threshold"] == 4000
    # A wider window than the episodes at that point moves the answer later.
    _with_budget(run, {"return_window": 18}, 3)
    row = cost_table(load_runs([run]), cfg).iloc[0]
    assert row["env_steps_to_threshold"] == 6000
    # Without a budget threshold the study's cost.return_threshold applies, as before.
    plain = write_run(tmp_path, seed=2, times=[60.0] * 10, steps_per_iter=1000,
                      returns=range(0, 100, 10))
    row = cost_table(load_runs([plain]), cfg).iloc[0]
    assert row["return_threshold"] == 80.0 and row["threshold_from"] == "cost.return_threshold"
    assert row["env_steps_to_threshold"] == 9000


@pytest.mark.slow
def test_a_real_run_stops_at_its_return_threshold(tmp_path):
    from ddrl.training.train import train_run

    # CartPole-v1: random play returns about 22 an episode; PPO passes 40 within a few
    # thousand steps, far inside the 40 000-step budget.
    budget = {"env_steps": 40_000, "return_threshold": 40.0, "return_window": 10}
    config = _config(budget)
    config["experiments"][0]["hyperparameters"] = {"PPO": {
        "train_batch_size": 500, "minibatch_size": 100, "num_epochs": 6, "lr": 0.001,
        "fcnet_hiddens": [32, 32]}}
    spec = next(iter(Study.from_config(config).runs.values()))
    lines = []
    record = train_run(spec, tmp_path / spec.run_id, print_fn=lines.append)
    result = record["result"]
    progress = pd.read_csv(tmp_path / spec.run_id / "progress.csv")
    assert result["stop_reason"] == "return_threshold", lines
    assert result["env_steps"] < budget["env_steps"]
    assert record["rllib_config"]["metrics_num_episodes_for_smoothing"] == 10
    # It stopped at the first iteration the rule allows, not later.
    episodes = progress["episodes_this_iter"].cumsum()
    ok = (progress["episode_return_mean"] >= 40.0) & (episodes >= 10)
    assert ok.iloc[-1] and not ok.iloc[:-1].any()
    assert result["env_steps"] == progress["env_steps"].iloc[-1] == 500 * len(progress)
    assert any(f"stopped: return_threshold (iteration {len(progress)}" in line for line in lines)
    # The cost table reads the same threshold and finds the same point.
    row = cost_table(load_runs([tmp_path / spec.run_id]), with_defaults({})).iloc[0]
    assert row["env_steps_to_threshold"] == result["env_steps"]
