"""Scaling aggregation, Amdahl fits, tables, cost and figures on synthetic runs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddrl.analysis.cost import cost_table, price_run, with_defaults
from ddrl.errors import ConfigError
from ddrl.figures.scaling import FIGURES
from ddrl.analysis.scaling import ScalingError, aggregate, fit_amdahl, load_runs
from ddrl.analysis.scaling_stage import cost_stage, scaling_stage
from ddrl.figures.stage import figures_stage

from helpers.scaling_fixtures import amdahl_study, amdahl_time, write_run

ENV = "HumanoidBulletEnv-v0"


def row(table: pd.DataFrame, workers: int, gpu: int = 0) -> pd.Series:
    match = table[(table["workers"] == workers) & (table["gpu"] == gpu)]
    assert len(match) == 1, (workers, gpu, table)
    return match.iloc[0]


# ----------------------------------------------------------------- steady state


@pytest.mark.parametrize("warmup, median, iqr", [(0, 3.5, 2.5), (1, 3.0, 2.0), (3, 4.0, 1.0)])
def test_median_and_iqr_after_warmup(tmp_path, warmup, median, iqr):
    # 100 s first iteration (start-up), then 1..5 s: the warm-up decides what counts.
    run = write_run(tmp_path, times=[100, 1, 2, 3, 4, 5], steps_per_iter=1000)
    result = aggregate(load_runs([run]), warmup, n_bootstrap=200)
    r = row(result.speedup, 1)
    assert r["iter_time_s"] == pytest.approx(median)
    assert r["iter_time_iqr_s"] == pytest.approx(iqr)
    assert r["iterations"] == 6 - warmup
    # env steps / summed time of the same iterations
    kept = [100, 1, 2, 3, 4, 5][warmup:]
    assert r["env_steps_per_s"] == pytest.approx(1000 * len(kept) / sum(kept))


def test_seeds_of_one_configuration_are_pooled(tmp_path):
    a = write_run(tmp_path, seed=1, times=[50, 1, 2, 3])
    b = write_run(tmp_path, seed=2, times=[50, 4, 5, 6])
    r = row(aggregate(load_runs([a, b]), 1, n_bootstrap=100).speedup, 1)
    assert r["seeds"] == 2 and r["iterations"] == 6
    assert r["iter_time_s"] == pytest.approx(3.5)


def test_run_without_steady_iterations_is_reported_not_invented(tmp_path):
    run = write_run(tmp_path, times=[10.0, 9.0])
    result = aggregate(load_runs([run]), 2, n_bootstrap=100)
    r = row(result.speedup, 1)
    assert math.isnan(r["iter_time_s"]) and math.isnan(r["speedup"])
    assert "no steady-state iterations" in r["note"] and "first 2" in r["note"]


# ----------------------------------------------------------------- speedup, Amdahl


def test_known_speedups_and_efficiency(tmp_path):
    dirs = amdahl_study(tmp_path, workers=(1, 2, 4, 8), noise=0.0)
    table = aggregate(load_runs(dirs), 1, n_bootstrap=100).speedup
    for n in (1, 2, 4, 8):
        expected = amdahl_time(1) / amdahl_time(n)
        r = row(table, n)
        assert r["speedup"] == pytest.approx(expected)
        assert r["efficiency"] == pytest.approx(expected / n)
        assert r["baseline"] == "1 runner"
    assert row(table, 8)["speedup"] == pytest.approx(1 / (0.1 + 0.9 / 8))


def test_amdahl_recovers_the_serial_fraction_and_predicts(tmp_path):
    dirs = amdahl_study(tmp_path, workers=(1, 2, 4, 8, 16), noise=0.02, gpu_factor=0.6, seed=3)
    result = aggregate(load_runs(dirs), 1, n_bootstrap=300)
    assert len(result.amdahl) == 2  # CPU and GPU series
    for _, fit in result.amdahl.iterrows():
        assert fit["serial_fraction"] == pytest.approx(0.1, abs=0.01)
        assert fit["serial_fraction_ci_low"] < fit["serial_fraction"] < fit["serial_fraction_ci_high"]
        assert fit["serial_fraction_ci_high"] - fit["serial_fraction_ci_low"] < 0.03
        assert fit["workers_2x"] == 32 and fit["workers_4x"] == 64
    cpu = result.amdahl[result.amdahl["gpu"] == 0].iloc[0]
    assert cpu["speedup_2x"] == pytest.approx(1 / (0.1 + 0.9 / 32), rel=0.05)
    assert cpu["speedup_4x"] == pytest.approx(1 / (0.1 + 0.9 / 64), rel=0.05)
    gpu = result.amdahl[result.amdahl["gpu"] == 1].iloc[0]
    # GPU speedups are relative to the CPU baseline: 1 / 0.6 more at every n.
    assert gpu["speedup_2x"] == pytest.approx(cpu["speedup_2x"] / 0.6, rel=0.05)


def test_amdahl_fit_is_exact_on_exact_data_and_clipped_on_superlinear_data():
    n = np.array([1, 2, 4, 8])
    fit = fit_amdahl(n, [amdahl_time(k, t1=20, f=0.25) for k in n])
    assert fit.serial_fraction == pytest.approx(0.25)
    assert fit.a + fit.b == pytest.approx(20)
    superlinear = fit_amdahl(n, 10.0 / n**1.3)
    assert superlinear.a == 0.0 and superlinear.serial_fraction == 0.0
    with pytest.raises(ScalingError, match="at least 2 worker counts"):
        fit_amdahl([4, 4], [1.0, 1.1])


def test_missing_baseline_names_it_and_leaves_speedup_empty(tmp_path):
    dirs = amdahl_study(tmp_path, workers=(2, 4))
    result = aggregate(load_runs(dirs), 1, n_bootstrap=100)
    assert result.speedup["speedup"].isna().all()
    assert result.speedup["efficiency"].isna().all()
    for note in list(result.speedup["note"]) + result.notes[:1]:
        assert "baseline run (PPO on HumanoidBulletEnv-v0 with 1 env runner and no GPU" in note
        assert "is missing" in note
    fit = result.amdahl.iloc[0]
    assert fit["serial_fraction"] == pytest.approx(0.1, abs=0.02)  # fit needs no baseline
    scaling_stage(dirs, tmp_path / "tables", {"bootstrap": 100})
    assert "1 env runner and no GPU" in (tmp_path / "tables" / "speedup.md").read_text()
    assert math.isnan(fit["speedup_2x"]) and "baseline run" in fit["note"]


def test_missing_timer_column_names_column_and_file(tmp_path):
    good = write_run(tmp_path, workers=1, times=[9, 4, 4, 4])
    bad = write_run(tmp_path, workers=2, times=[9, 2, 2, 2], drop=["learn_time_s"])
    result = aggregate(load_runs([good, bad]), 1, n_bootstrap=100)
    b = row(result.breakdown, 2)
    assert math.isnan(b["sampling_share"]) and math.isnan(b["learning_share"])
    assert "learn_time_s" in b["note"] and f"runs/{bad.name}/progress.csv" in b["note"]
    assert row(result.breakdown, 1)["sampling_share"] == pytest.approx(0.6)
    assert row(result.speedup, 2)["speedup"] == pytest.approx(2.0)  # timing unaffected
    assert any("learn_time_s" in n for n in result.notes)


def test_breakdown_shares_add_up(tmp_path):
    run = write_run(tmp_path, times=[9, 4, 4, 4], shares=(0.5, 0.25, 0.05))
    b = row(aggregate(load_runs([run]), 1, n_bootstrap=100).breakdown, 1)
    assert (b["sampling_share"], b["learning_share"], b["weight_sync_share"]) == pytest.approx(
        (0.5, 0.25, 0.05))
    assert b["replay_buffer_share"] == 0.0 and b["other_share"] == pytest.approx(0.2)
    assert b["sampling_s"] == pytest.approx(2.0)


def test_missing_iteration_time_is_an_error_and_writes_nothing(tmp_path):
    run = write_run(tmp_path, times=[1, 1, 1], drop=["time_this_iter_s"])
    with pytest.raises(ScalingError, match=r"progress\.csv: missing column\(s\) \['time_this_iter_s'\]"):
        scaling_stage([run], tmp_path / "tables")
    assert not (tmp_path / "tables").exists() or not any((tmp_path / "tables").iterdir())


def test_overlapping_runs_are_marked_as_not_alone(tmp_path):
    a = write_run(tmp_path, workers=1, times=[5, 4, 4], started="2026-01-01T00:00:00+00:00",
                  finished="2026-01-01T00:10:00+00:00")
    b = write_run(tmp_path, workers=2, times=[5, 2, 2], started="2026-01-01T00:05:00+00:00",
                  finished="2026-01-01T00:15:00+00:00")
    c = write_run(tmp_path, workers=4, times=[5, 1, 1], started="2026-01-01T00:05:00+00:00",
                  finished="2026-01-01T00:15:00+00:00", hostname="host-b")
    table = aggregate(load_runs([a, b, c]), 1, n_bootstrap=100).speedup
    assert not row(table, 1)["ran_alone"] and not row(table, 2)["ran_alone"]
    assert row(table, 4)["ran_alone"]  # other host
    scaling_stage([a, b, c], tmp_path / "tables", {"bootstrap": 100})
    assert "CONCURRENT" in (tmp_path / "tables" / "speedup.md").read_text()


# ----------------------------------------------------------------- tables and figures


def test_tables_in_three_formats_with_expected_rows(tmp_path):
    dirs = amdahl_study(tmp_path, workers=(1, 2, 4), gpu_factor=0.7)
    tables = tmp_path / "tables"
    scaling_stage(dirs, tables, {"warmup_iterations": 1, "bootstrap": 200})
    for name, rows in (("speedup", 6), ("breakdown", 6), ("amdahl", 2)):
        csv = pd.read_csv(tables / f"{name}.csv")
        assert len(csv) == rows, name
        md = (tables / f"{name}.md").read_text().splitlines()
        assert sum(1 for line in md if "| PPO |" in line) == rows, name
        tex = (tables / f"{name}.tex").read_text()
        assert r"\toprule" in tex and r"\bottomrule" in tex and tex.count(r" \\") == rows + 1
    speedup = pd.read_csv(tables / "speedup.csv")
    assert row(speedup, 4)["speedup"] == pytest.approx(amdahl_time(1) / amdahl_time(4), rel=0.03)
    assert "after the first 1 of each run" in (tables / "speedup.md").read_text()
    thesis = pd.read_csv(tables / "thesis_comparison.csv")
    td3 = thesis[(thesis["algorithm"] == "TD3") & (thesis["workers"] == 64) & (thesis["gpu"] == 1)]
    assert td3["thesis_speedup"].iloc[0] == pytest.approx(25.56 / 1.99)
    ppo2 = thesis[(thesis["algorithm"] == "PPO") & (thesis["workers"] == 4) & (thesis["gpu"] == 0)].iloc[0]
    assert ppo2["reference"] == "2 workers, no GPU"  # the thesis has no 1-worker CPU PPO run
    assert ppo2["speedup"] == pytest.approx(amdahl_time(2) / amdahl_time(4), rel=0.03)


def test_every_figure_is_drawn_from_the_tables(tmp_path):
    dirs = amdahl_study(tmp_path, workers=(1, 2, 4), gpu_factor=0.7)
    tables = tmp_path / "tables"
    scaling_stage(dirs, tables, {"bootstrap": 100})
    cost_stage(dirs, tables / "cost", {"return_threshold": 50})
    out = {n: (tmp_path / "fig" / f"{n}.pdf", tmp_path / "fig" / f"{n}.png") for n in FIGURES}
    figures_stage(dirs, tables, out)
    for pdf, png in out.values():
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 3000, pdf
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000, png
    # Each figure's plotted data lies next to it: the speedup figure shows every worker count.
    speedup = pd.read_csv(tmp_path / "fig" / "fig15-20_speedup.csv")
    assert sorted(set(speedup["workers"])) == [1, 2, 4] and set(speedup["gpu"]) == {0, 1}
    rewards = pd.read_csv(tmp_path / "fig" / "fig12-14_reward_curves.csv")
    assert set(rewards["run_id"]) == {d.name for d in dirs} | {"thesis"}
    # The thesis's published PPO humanoid return is drawn beside the curves, on env steps only.
    thesis = rewards[rewards["run_id"] == "thesis"]
    assert thesis[["task", "env_steps", "episode_return_mean"]].values.tolist() == [
        ["PPO on HumanoidBulletEnv-v0", 3e8, 2137.0]]
    wallclock = pd.read_csv(tmp_path / "fig" / "fig12-14_reward_curves_wallclock.csv")
    assert "thesis" not in set(wallclock["run_id"])
    # A figure with nothing to draw (no off-policy runs here) still leaves readable data.
    empty = pd.read_csv(tmp_path / "fig" / "update_schedules.csv")
    assert list(empty.columns) == ["panel", "series", "workers", "speedup"] and empty.empty


def test_speedup_figure_leaves_out_series_with_a_single_worker_count(tmp_path):
    from ddrl.figures.scaling import speedup_figure

    dirs = amdahl_study(tmp_path, workers=(1, 2, 4), gpu_factor=0.7)
    tables = tmp_path / "tables"
    scaling_stage(dirs, tables, {"bootstrap": 100})
    speedup = pd.read_csv(tables / "speedup.csv", keep_default_na=True)
    speedup["note"] = speedup["note"].fillna("")
    amdahl = pd.read_csv(tables / "amdahl.csv")
    solo = speedup[speedup["workers"] == 1].assign(env="Solo-v0")  # measured at 1 worker only
    drawn = speedup_figure(pd.concat([speedup, solo]), amdahl, tmp_path / "s.pdf", tmp_path / "s.png")
    assert "Solo-v0" not in set(drawn["env"]) and sorted(set(drawn["workers"])) == [1, 2, 4]
    drawn = speedup_figure(solo, amdahl, tmp_path / "o.pdf", tmp_path / "o.png")
    assert drawn.empty and (tmp_path / "o.png").stat().st_size > 0


# ----------------------------------------------------------------- cost


def test_cost_and_time_to_threshold_are_known(tmp_path):
    # 11 iterations of 100 s; returns 0, 10, ..., 100: return 45 first reached at iteration 6.
    one = write_run(tmp_path, workers=1, times=[100] * 11, returns=np.arange(0, 101, 10))
    two = write_run(tmp_path, workers=2, times=[60] * 11, returns=np.arange(0, 101, 10))
    cfg = {"resource_prices": {"r1x1c1g0": 3.6, "r2x1c1g0": 9.0}, "return_threshold": {ENV: 45}}
    table = cost_table(load_runs([one, two]), with_defaults(cfg))
    r1, r2 = row(table, 1), row(table, 2)
    assert r1["cost"] == pytest.approx(1100 / 3600 * 3.6)
    assert r1["time_to_threshold_s"] == pytest.approx(600)
    assert r1["cost_to_threshold"] == pytest.approx(600 / 3600 * 3.6)
    assert r2["time_to_threshold_s"] == pytest.approx(360)
    assert r2["cost_to_threshold"] == pytest.approx(360 / 3600 * 9.0)
    assert r1["pareto"] and r2["pareto"]  # one is cheaper, the other faster

    cfg["resource_prices"]["r2x1c1g0"] = 1.0  # now faster AND cheaper
    table = cost_table(load_runs([one, two]), with_defaults(cfg))
    assert not row(table, 1)["pareto"] and row(table, 2)["pareto"]


def test_unreached_threshold_is_counted_not_extrapolated(tmp_path):
    run = write_run(tmp_path, times=[10] * 4, returns=[1, 2, 3, 4])
    r = row(cost_table(load_runs([run]), with_defaults({"return_threshold": 100})), 1)
    assert math.isnan(r["time_to_threshold_s"]) and r["seeds_reached"] == 0
    assert "not reached: best mean return 4.0 < 100" in r["note"]


def test_instances_price_the_cheapest_fit():
    cfg = with_defaults({})
    assert price_run(cfg, workers=1, envs=1, cpus_per_runner=1, gpus=0, nodes=1) == (
        "ml.c5.xlarge", 0.204)
    what, price = price_run(cfg, workers=8, envs=1, cpus_per_runner=1, gpus=1, nodes=1)
    assert what == "ml.p3.8xlarge"  # 9 CPUs do not fit the 8 vCPUs of a p3.2xlarge
    with pytest.raises(ConfigError, match=r"no price for resource setting r200x1c1g0"):
        price_run(cfg, workers=200, envs=1, cpus_per_runner=1, gpus=0, nodes=1)


def test_gpu_run_that_fell_back_to_the_cpu_is_flagged(tmp_path):
    base = write_run(tmp_path, workers=1, times=[9, 4, 4])
    fell_back = write_run(tmp_path, workers=1, gpus=1, times=[9, 4, 4], host_gpus=[])
    r = row(aggregate(load_runs([base, fell_back]), 1, n_bootstrap=100).speedup, 1, gpu=1)
    assert "ran on a host without one (on_missing_gpu: cpu)" in r["note"]
