"""The scaling, cost and figure stages and the HTML report, on the shared tiny study."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from ddrl.figures.scaling import FIGURES
from ddrl.study.study import Study

from conftest import TINY_CONFIG, run_snakemake


def _tables(workdir):
    return workdir / "results" / "tiny" / "tables"


def test_progress_timers_are_per_iteration(tiny_study):
    study = Study.from_file(TINY_CONFIG)
    for run_id, spec in study.runs.items():
        if spec.algorithm != "PPO":
            continue
        p = pd.read_csv(tiny_study / "results" / "tiny" / "runs" / run_id / "progress.csv")
        parts = p[["sample_time_s", "learn_time_s", "sync_weights_time_s"]]
        assert parts.notna().all().all(), run_id
        total = parts.sum(axis=1)
        # This iteration's parts fit inside this iteration, and are most of it
        # (RLlib's default moving average carries the slow first iteration into later ones).
        assert (total <= p["time_this_iter_s"] * 1.02 + 0.02).all(), (run_id, p)
        assert (total >= 0.5 * p["time_this_iter_s"]).all(), (run_id, p)


def test_scaling_tables_have_one_row_per_configuration(tiny_study):
    tables = _tables(tiny_study)
    speedup = pd.read_csv(tables / "speedup.csv")
    # PPO with 1 and 2 runners (2 seeds each, pooled), SAC and TD3 with 1 runner.
    assert sorted(zip(speedup["algorithm"], speedup["workers"])) == [
        ("PPO", 1), ("PPO", 2), ("SAC", 1), ("TD3", 1)]
    ppo2 = speedup[(speedup["algorithm"] == "PPO") & (speedup["workers"] == 2)].iloc[0]
    ppo1 = speedup[(speedup["algorithm"] == "PPO") & (speedup["workers"] == 1)].iloc[0]
    assert ppo2["seeds"] == 2 and ppo2["iterations"] == 4  # 3 iterations - 1 warm-up, x2 seeds
    assert ppo2["speedup"] == pytest.approx(ppo1["iter_time_s"] / ppo2["iter_time_s"])
    assert ppo2["efficiency"] == pytest.approx(ppo2["speedup"] / 2)
    assert (speedup["ran_alone"]).all()  # the local profile's single training slot
    assert (speedup[speedup["workers"] == 1]["speedup"] == 1.0).all()

    breakdown = pd.read_csv(tables / "breakdown.csv")
    assert len(breakdown) == 4
    ppo = breakdown[breakdown["algorithm"] == "PPO"]
    assert ppo["sampling_share"].between(0.05, 1).all() and ppo["learning_share"].between(0.01, 1).all()

    amdahl = pd.read_csv(tables / "amdahl.csv")
    ppo_fit = amdahl[amdahl["algorithm"] == "PPO"].iloc[0]
    assert ppo_fit["workers_measured"] == "1 2" and ppo_fit["workers_4x"] == 8
    assert "2 worker counts" in ppo_fit["note"]
    assert amdahl[amdahl["algorithm"] != "PPO"]["note"].str.contains("needs at least 2").all()

    for name in ("speedup", "breakdown", "amdahl", "thesis_comparison", "runs", "cost"):
        for ext in ("csv", "md", "tex"):
            assert (tables / f"{name}.{ext}").stat().st_size > 100, (name, ext)
    runs = pd.read_csv(tables / "runs.csv")
    assert len(runs) == len(Study.from_file(TINY_CONFIG).runs) and runs["commit"].notna().all()


def test_every_scaling_figure_is_drawn(tiny_study):
    figures = tiny_study / "results" / "tiny" / "figures"
    for name in FIGURES:
        pdf, png = figures / f"{name}.pdf", figures / f"{name}.png"
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 3000, name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000, name


def test_report_contains_every_figure_and_table(tiny_study, tmp_path):
    workdir = tmp_path / "study"
    shutil.copytree(tiny_study, workdir, symlinks=True)
    report = workdir / "report.html"
    run_snakemake(workdir, workdir / "tiny.yaml", "--report", str(report), timeout=600)
    html = report.read_text(errors="replace")
    assert len(html) > 100_000
    for name in FIGURES:
        assert f"{name}.png" in html, name
    for table in ("speedup.csv", "breakdown.csv", "amdahl.csv", "cost.csv", "runs.csv",
                  "thesis_comparison.csv"):
        assert table in html, table
    for category in ("Learning", "Scaling", "Cost", "Provenance"):
        assert category in html, category
