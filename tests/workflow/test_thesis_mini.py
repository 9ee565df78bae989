"""The miniature thesis (config/thesis-mini.yaml) end to end on the local profile.

thesis.yaml's structure at toy scale: every algorithm timed with 1 and 2 env runners, TD3
and SAC under both update schedules, a learning group, cost thresholds. The workflow runs
once (module fixture); the tests check that every thesis figure (12-22, with the learning
runs' frame strips standing for 23-25) and every table exists and holds the runs it claims:
reward curves and the returns table only learning runs, the speedup tables only timing runs.
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from ddrl.study.study import Study
from ddrl.figures.catalog import FIGURES

from conftest import REPO, run_snakemake

pytestmark = pytest.mark.slow

CONFIG = REPO / "config" / "thesis-mini.yaml"
TABLES = ("speedup", "breakdown", "amdahl", "thesis_comparison", "update_schedules", "runs",
          "cost", "learning_returns")


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    work = tmp_path_factory.mktemp("thesis_mini")
    config = shutil.copy(CONFIG, work / "thesis-mini.yaml")
    run_snakemake(work, config, timeout=1800)
    study = Study.from_file(config)
    root = work / "results" / study.name
    return {"root": root, "study": study,
            "learning": set(study.experiment_runs("learning")),
            "timing": set(study.experiment_runs("timing"))}


def _csv(mini, path) -> pd.DataFrame:
    return pd.read_csv(mini["root"] / path)


def test_every_thesis_figure_and_table_exists(mini):
    root = mini["root"]
    for name in FIGURES:
        for ext in ("pdf", "png", "csv"):
            assert (root / "figures" / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    for name in TABLES:
        for ext in ("csv", "md", "tex"):
            assert (root / "tables" / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    assert (root / "tables" / "returns.csv").exists()
    # Figs 23-25 (the agents): frame strips and videos of the learning runs only.
    for run_id in mini["learning"]:
        assert (root / "runs" / run_id / "frames.png").stat().st_size > 0
        assert (root / "runs" / run_id / "policy.pt").exists()
    for run_id in mini["timing"]:
        assert (root / "runs" / run_id / "eval.json").exists()
        assert not (root / "runs" / run_id / "video.mp4").exists()
        assert not (root / "runs" / run_id / "policy.pt").exists()


def test_reward_curves_show_only_the_learning_runs(mini):
    for name in ("fig12-14_reward_curves", "fig12-14_reward_curves_wallclock"):
        drawn = _csv(mini, f"figures/{name}.csv")
        runs = drawn[drawn["run_id"] != "thesis"]
        assert set(runs["run_id"]) == mini["learning"], name
        assert set(runs["algorithm"]) == {"TD3", "SAC", "PPO"}
    # Against env steps, the thesis's published best returns stand beside the curves.
    drawn = _csv(mini, "figures/fig12-14_reward_curves.csv")
    thesis = drawn[drawn["run_id"] == "thesis"].set_index("task")["episode_return_mean"]
    assert thesis.to_dict() == {"SAC on HumanoidBulletEnv-v0": 2180.0,
                                "PPO on HumanoidBulletEnv-v0": 2137.0,
                                "TD3 on HumanoidBulletEnv-v0": 1911.0}
    returns = _csv(mini, "tables/learning_returns.csv")
    assert set(returns["experiment"]) == {"learning"}
    assert set(returns["algorithm"]) == {"TD3", "SAC", "PPO"}
    assert returns["thesis_best_return"].notna().all()  # the humanoid: thesis values beside


def test_speedup_tables_read_only_the_timing_runs(mini):
    speedup = _csv(mini, "tables/speedup.csv")
    runs = {r for ids in speedup["run_ids"] for r in ids.split()}
    assert runs == mini["timing"]
    assert set(speedup["experiment"]) == {"scaling-ppo", "scaling-offpolicy-thesis-schedule",
                                          "scaling-offpolicy-fixed-ratio"}
    # Every algorithm with 1 and 2 runners; TD3 and SAC under both schedules.
    cells = set(zip(speedup["algorithm"], speedup["update_schedule"], speedup["workers"]))
    for workers in (1, 2):
        assert ("PPO", "on_policy", workers) in cells
        for algo in ("TD3", "SAC"):
            assert (algo, "rllib1_round_robin", workers) in cells
            assert (algo, "fixed_ratio", workers) in cells
    assert speedup["updates_per_env_step"].notna().sum() == 8  # the off-policy rows
    breakdown = _csv(mini, "tables/breakdown.csv")
    assert set(breakdown["update_schedule"]) == {"on_policy", "rllib1_round_robin", "fixed_ratio"}
    drawn = _csv(mini, "figures/fig15-20_speedup.csv")
    assert {r for ids in drawn["run_ids"] for r in ids.split()} <= mini["timing"]


def test_update_schedules_split_the_thesis_mode_speedup(mini):
    sched = _csv(mini, "tables/update_schedules.csv")
    two = sched[sched["workers"] == 2].set_index("algorithm")
    for algo in ("TD3", "SAC"):
        # 100 env steps per iteration, one step per runner per round: 100 vs 50 updates.
        assert two.loc[algo, "rr_updates_per_iter"] == 50
        assert two.loc[algo, "fewer_updates"] == pytest.approx(2.0)
        assert two.loc[algo, "fixed_speedup"] > 0
    comparison = _csv(mini, "tables/thesis_comparison.csv")
    td3 = comparison[(comparison["algorithm"] == "TD3") & (comparison["workers"] == 2)
                     & (comparison["gpu"] == 0)].iloc[0]
    assert td3["update_schedule"] == "rllib1_round_robin"
    assert td3["speedup"] > 0 and td3["fixed_ratio_speedup"] > 0
    drawn = _csv(mini, "figures/update_schedules.csv")
    for algo in ("TD3", "SAC"):
        series = set(drawn.loc[drawn["panel"] == f"{algo} on HumanoidBulletEnv-v0", "series"])
        assert {"rr_speedup", "fewer_updates", "fixed_speedup", "thesis"} <= series


def test_cost_table_keeps_experiments_apart(mini):
    cost = _csv(mini, "tables/cost.csv")
    assert set(cost["experiment"]) == set(mini["study"].experiments)
    # PPO with 2 runners is both a timing and a learning run: two rows, not one pooled.
    ppo2 = cost[(cost["algorithm"] == "PPO") & (cost["workers"] == 2)]
    assert sorted(ppo2["experiment"]) == ["learning", "scaling-ppo"]


def test_gradient_updates_follow_each_schedule(mini):
    """Updates per iteration in the progress files of the TD3 and SAC timing runs: under the
    thesis's schedule one per round of 1 step from every runner (100 env steps an iteration:
    100 with 1 runner, 50 with 2), at the fixed ratio one per env step at any runner count."""
    study, root = mini["study"], mini["root"]
    per_iter = 100  # timesteps_per_iteration in config/thesis-mini.yaml
    seen = set()
    for run_id, name in study.experiment_of.items():
        spec = study.runs[run_id]
        if spec.algorithm not in ("TD3", "SAC") or not name.startswith("scaling-"):
            continue
        rows = pd.read_csv(root / "runs" / run_id / "progress.csv")
        warm = spec.hyperparameters["num_steps_sampled_before_learning_starts"]
        steady = rows[rows["env_steps"] - rows["env_steps_this_iter"] >= warm]
        assert len(steady) >= 1, run_id
        runners = spec.resources["num_env_runners"]
        schedule = spec.hyperparameters["update_schedule"]
        for row in steady.itertuples():
            if schedule == "rllib1_round_robin":
                assert row.env_steps_this_iter % runners == 0
                assert row.gradient_updates == row.env_steps_this_iter // runners == per_iter // runners
            else:
                assert abs(row.gradient_updates - row.env_steps_this_iter) <= 1, run_id
        assert rows["gradient_updates_total"].iloc[-1] == rows["gradient_updates"].sum()
        seen.add((spec.algorithm, schedule, runners))
    assert len(seen) == 8  # TD3 and SAC x both schedules x 1 and 2 runners
