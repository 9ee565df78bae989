"""The scaling tables under the two off-policy update schedules, on synthetic runs with known
times and update counts: updates columns, the speedup split into "fewer updates" and
"parallel sampling and learning", the thesis comparison holding thesis-mode runs, and
intervals that resample runs or blocks of iterations, never single pooled iterations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddrl.analysis.scaling import aggregate, bootstrap_medians, block_length, load_runs
from ddrl.analysis.scaling_stage import scaling_stage
from helpers.scaling_fixtures import write_run

TD3 = {"train_batch_size": 256, "timesteps_per_iteration": 1000}
RR = {**TD3, "update_schedule": "rllib1_round_robin", "rollout_fragment_length": 1}
FIXED = {**TD3, "update_schedule": "fixed_ratio", "rollout_fragment_length": 64}
ITERS = 6  # the first is warm-up


def _grid(root):
    """TD3: thesis mode 10 s (1000 updates) -> 4 s (500 updates); fixed ratio 12 s -> 10 s."""
    cases = [(RR, 1, 10.0, 1000), (RR, 2, 4.0, 500), (FIXED, 1, 12.0, 1000), (FIXED, 2, 10.0, 1000)]
    for i, (hp, workers, t, updates) in enumerate(cases):
        write_run(root, algorithm="TD3", workers=workers, hp=hp, steps_per_iter=1000,
                  times=[50.0] + [t] * (ITERS - 1), updates=[0] + [updates] * (ITERS - 1),
                  tag=f"-{hp['update_schedule']}", started=f"2026-01-01T0{i}:00:00+00:00",
                  finished=f"2026-01-01T0{i}:30:00+00:00")
    return sorted((root / "runs").iterdir())


def test_speedup_table_has_updates_columns_per_schedule(tmp_path):
    speedup = aggregate(load_runs(_grid(tmp_path)), 1, n_bootstrap=200).speedup
    by = speedup.set_index(["update_schedule", "workers"])
    assert by.loc[("rllib1_round_robin", 2), "speedup"] == pytest.approx(2.5)
    assert by.loc[("fixed_ratio", 2), "speedup"] == pytest.approx(1.2)
    assert by.loc[("rllib1_round_robin", 1), "updates_per_iter"] == 1000
    assert by.loc[("rllib1_round_robin", 2), "updates_per_iter"] == 500
    assert by.loc[("rllib1_round_robin", 2), "updates_per_env_step"] == pytest.approx(0.5)
    assert by.loc[("rllib1_round_robin", 2), "updates_per_s"] == pytest.approx(125.0)
    assert by.loc[("fixed_ratio", 2), "updates_per_env_step"] == pytest.approx(1.0)
    assert by.loc[("fixed_ratio", 1), "env_steps_per_s"] == pytest.approx(1000 / 12)


def test_schedule_table_splits_the_thesis_speedup(tmp_path):
    tables = scaling_stage(_grid(tmp_path), tmp_path / "tables", {"bootstrap": 200})
    sched = tables["update_schedules"]
    assert list(sched["workers"]) == [1, 2]
    two = sched[sched["workers"] == 2].iloc[0]
    assert two["rr_speedup"] == pytest.approx(2.5)
    assert two["fewer_updates"] == pytest.approx(2.0)
    assert two["per_update_speedup"] == pytest.approx(1.25)
    assert two["fewer_updates"] * two["per_update_speedup"] == pytest.approx(two["rr_speedup"])
    assert two["fixed_speedup"] == pytest.approx(1.2)
    assert two["note"] == ""
    # The same numbers in the written files, with the schedule named in the speedup table.
    csv = pd.read_csv(tmp_path / "tables" / "update_schedules.csv")
    assert csv.loc[csv["workers"] == 2, "fewer_updates"].iloc[0] == pytest.approx(2.0)
    md = (tmp_path / "tables" / "update_schedules.md").read_text()
    assert "fewer updates" in md and "parallel sampling and learning" in md
    speedup_md = (tmp_path / "tables" / "speedup.md").read_text()
    assert "rllib1_round_robin" in speedup_md and "fixed_ratio" in speedup_md
    assert "Updates / env step" in speedup_md


def test_thesis_comparison_holds_thesis_mode_runs(tmp_path):
    tables = scaling_stage(_grid(tmp_path), tmp_path / "tables", {"bootstrap": 200})
    comp = tables["thesis_comparison"]
    two = comp[(comp["algorithm"] == "TD3") & (comp["workers"] == 2) & (comp["gpu"] == 0)].iloc[0]
    assert two["update_schedule"] == "rllib1_round_robin"
    assert two["speedup"] == pytest.approx(2.5)
    assert two["updates_per_iter"] == 500
    assert two["fixed_ratio_speedup"] == pytest.approx(1.2)
    assert two["thesis_speedup"] == pytest.approx(25.56 / 14.38)


def test_fixed_ratio_runs_alone_do_not_pose_as_thesis_numbers(tmp_path):
    dirs = [d for d in _grid(tmp_path) if "fixed" in d.name]
    comp = scaling_stage(dirs, tmp_path / "tables", {"bootstrap": 50})["thesis_comparison"]
    td3 = comp[comp["algorithm"] == "TD3"]
    assert td3["speedup"].isna().all()
    sched = pd.read_csv(tmp_path / "tables" / "update_schedules.csv")
    assert sched.empty


def test_missing_fixed_ratio_grid_is_named(tmp_path):
    dirs = [d for d in _grid(tmp_path) if "round_robin" in d.name]
    sched = scaling_stage(dirs, tmp_path / "tables", {"bootstrap": 50})["update_schedules"]
    assert sched["fixed_speedup"].isna().all()
    assert (sched["note"] == "no fixed-ratio run of the same grid").all()


def test_bootstrap_resamples_runs_when_there_are_seeds():
    rng = np.random.default_rng(0)
    a, b = np.full(20, 10.0), np.full(20, 12.0)
    draws = bootstrap_medians([a, b], 400, rng)
    # A draw is one of: both runs (pooled median 11), run a twice (10), run b twice (12).
    assert set(np.round(draws, 6)) == {10.0, 11.0, 12.0}
    lo, hi = np.percentile(draws, [2.5, 97.5])
    assert lo == 10.0 and hi == 12.0  # the seed-to-seed spread shows in the interval


def test_bootstrap_of_one_run_keeps_blocks_of_consecutive_iterations():
    values = np.arange(27, dtype=float)  # a drift: consecutive iterations are alike
    assert block_length(27) == 3
    rng = np.random.default_rng(1)
    draws = bootstrap_medians([values], 300, rng)
    assert len(draws) == 300 and np.isfinite(draws).all()
    # Block draws of a strictly increasing series: medians of whole blocks, so spread is wide.
    assert draws.min() < 13 < draws.max()


def test_interval_column_says_what_was_resampled(tmp_path):
    for seed in (1, 2):
        write_run(tmp_path, algorithm="TD3", seed=seed, hp=FIXED, times=[50.0] + [10.0] * 5,
                  updates=[0] + [1000] * 5, started=f"2026-01-01T0{seed}:00:00+00:00",
                  finished=f"2026-01-01T0{seed}:30:00+00:00")
    write_run(tmp_path, algorithm="TD3", workers=2, hp=FIXED, times=[50.0] + [9.0] * 9,
              updates=[0] + [1000] * 9)
    speedup = aggregate(load_runs(sorted((tmp_path / "runs").iterdir())), 1, n_bootstrap=50).speedup
    by = speedup.set_index("workers")["interval"]
    assert by[1] == "runs (2 seeds)"
    assert by[2] == "blocks of 3 iterations (1 run)"


def test_schedule_figure_draws_both_schedules_and_the_thesis(tmp_path):
    from ddrl.figures.scaling import update_schedule_figure

    tables = scaling_stage(_grid(tmp_path), tmp_path / "tables", {"bootstrap": 100})
    pdf, png = tmp_path / "f.pdf", tmp_path / "f.png"
    drawn = update_schedule_figure(tables["update_schedules"], tables["thesis_comparison"], pdf, png)
    assert pdf.read_bytes()[:5] == b"%PDF-" and png.read_bytes()[:4] == b"\x89PNG"
    assert set(drawn["panel"]) == {"TD3 on HumanoidBulletEnv-v0"}
    at2 = drawn[drawn["workers"] == 2].set_index("series")["speedup"]
    assert at2["rr_speedup"] == pytest.approx(2.5)
    assert at2["fixed_speedup"] == pytest.approx(1.2)
    assert at2["fewer_updates"] == pytest.approx(2.0)
    assert at2["thesis"] == pytest.approx(25.56 / 14.38)
    # The thesis's TD3 CPU points, 1 to 64 workers, are all shown.
    assert sorted(drawn.loc[drawn["series"] == "thesis", "workers"]) == [1, 2, 4, 8, 15, 16, 32, 64]
