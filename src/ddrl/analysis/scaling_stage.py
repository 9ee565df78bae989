"""The workflow's scaling and cost stages: run folders in, tables out.

Each function here is what one Snakemake rule calls; all the statistics live in
:mod:`ddrl.analysis.scaling` and :mod:`ddrl.analysis.cost`. The figures drawn from these
tables are :mod:`ddrl.figures.stage`'s.
"""

from __future__ import annotations

import importlib.resources
import logging
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from ddrl.analysis import cost as cost_mod
from ddrl.analysis.scaling import aggregate, load_runs
from ddrl.analysis.thesis_comparison import schedule_comparison, thesis_comparison
from ddrl.analysis.tables import Column, distinguishing_columns, write_table
from ddrl.runs import RunFolder

log = logging.getLogger(__name__)

DEFAULT_WARMUP = 1
SCALING_TABLES = ("speedup", "breakdown", "amdahl", "thesis_comparison", "update_schedules")


def thesis_iteration_times() -> pd.DataFrame:
    """The thesis's published iteration times (source in the file's header)."""
    path = importlib.resources.files("ddrl") / "data" / "thesis_iteration_times.csv"
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p, comment="#")


def _provenance_footer(runs: pd.DataFrame, speedup: pd.DataFrame, warmup: int) -> str:
    hosts = runs.drop_duplicates("run_id").groupby("hostname", dropna=False).agg(
        cpu=("cpu_model", "first"), cores=("cpu_count", "first"), runs=("run_id", "nunique"))
    where = "; ".join(f"{h} ({r.cpu}, {r.cores} cores): {r.runs} run(s)" for h, r in hosts.iterrows())
    overlapped = speedup[~speedup["ran_alone"]]
    if overlapped.empty:
        fairness = ("Timing: every run ran alone on its host (no other run's start-finish span "
                    "overlapped it).")
    else:
        fairness = ("Timing: CONCURRENT runs shared cores for: "
                    + ", ".join(f"{r.algorithm} {r.config}" for r in overlapped.itertuples())
                    + " (their iteration times are not a fair comparison).")
    return (f"Steady state: median over iterations after the first {warmup} of each run; "
            f"seeds of one configuration pooled. 95% intervals: bootstrap over runs (seeds) "
            f"where a configuration has several, else over blocks of consecutive iterations "
            f"(the Interval column). Update schedule: rllib1_round_robin is the thesis's "
            f"RLlib 1.x semantics (one update per sampling round, so fewer updates per env step "
            f"with more workers), fixed_ratio is ddrl's (the same updates per env step at every "
            f"worker count). Hosts: {where}. {fairness}")


SPEEDUP_COLUMNS = [
    Column("experiment", "Experiment"), Column("algorithm", "Algorithm"), Column("env", "Env"), Column("workers", "Workers"),
    Column("gpu", "GPU"), Column("num_cpus_per_env_runner", "CPUs / worker"),
    Column("update_schedule", "Update schedule"),
    Column("iter_time_s", "Iteration time (s)", 2), Column("iter_time_iqr_s", "IQR (s)", 2),
    Column("speedup", "Speedup", 2), Column("speedup_ci", "95% CI"),
    Column("efficiency", "Efficiency", 2), Column("env_steps_per_s", "Env steps/s", 0),
    Column("updates_per_s", "Updates/s", 1), Column("updates_per_env_step", "Updates / env step", 3),
    Column("updates_per_iter", "Updates / iteration", 0), Column("interval", "Interval"),
    Column("iterations", "Iterations"), Column("seeds", "Seeds"), Column("ran_alone", "Ran alone"),
    Column("note", "Note"),
]
BREAKDOWN_COLUMNS = [
    Column("experiment", "Experiment"), Column("algorithm", "Algorithm"), Column("env", "Env"), Column("workers", "Workers"),
    Column("gpu", "GPU"), Column("update_schedule", "Update schedule"), Column("iter_time_s", "Iteration (s)", 2),
    Column("sampling_share", "Sampling", 2), Column("learning_share", "Learning", 2),
    Column("weight_sync_share", "Weight sync", 3), Column("replay_buffer_share", "Replay", 2),
    Column("other_share", "Other", 2), Column("note", "Note"),
]
AMDAHL_COLUMNS = [
    Column("experiment", "Experiment"), Column("algorithm", "Algorithm"), Column("env", "Env"),
    Column("update_schedule", "Update schedule"), Column("series", "Series"),
    Column("workers_measured", "Workers measured"), Column("serial_fraction", "Serial fraction", 3),
    Column("serial_fraction_ci", "95% CI"), Column("max_speedup", "Max speedup", 1),
    Column("workers_2x", "Workers (2x)", 0), Column("speedup_2x", "Predicted speedup (2x)", 2),
    Column("workers_4x", "Workers (4x)", 0), Column("speedup_4x", "Predicted speedup (4x)", 2),
    Column("note", "Note"),
]
THESIS_COLUMNS = [
    Column("algorithm", "Algorithm"), Column("workers", "Workers"), Column("gpu", "GPU"),
    Column("thesis_iter_time_s", "Thesis iteration (s)", 2),
    Column("thesis_speedup", "Thesis speedup", 2), Column("update_schedule", "Our schedule"),
    Column("iter_time_s", "Our iteration (s)", 2), Column("speedup", "Our speedup", 2),
    Column("updates_per_iter", "Our updates / iteration", 0),
    Column("fixed_ratio_speedup", "Our fixed-ratio speedup (env steps/s)", 2),
    Column("reference", "Speedup relative to"), Column("experiment", "Our experiment"),
]
SCHEDULE_COLUMNS = [
    Column("experiment", "Experiment"), Column("algorithm", "Algorithm"), Column("env", "Env"),
    Column("workers", "Workers"), Column("gpu", "GPU"), Column("rr_iter_time_s", "Thesis-mode iteration (s)", 2),
    Column("rr_updates_per_iter", "Updates / iteration", 0),
    Column("rr_speedup", "Thesis-mode speedup", 2), Column("rr_speedup_ci", "95% CI"),
    Column("fewer_updates", "of which: fewer updates (x)", 2),
    Column("per_update_speedup", "of which: parallel sampling and learning (x)", 2),
    Column("fixed_env_steps_per_s", "Fixed-ratio env steps/s", 1),
    Column("fixed_updates_per_env_step", "Fixed-ratio updates / env step", 2),
    Column("fixed_speedup", "Fixed-ratio speedup", 2), Column("fixed_speedup_ci", "95% CI"),
    Column("note", "Note"),
]
COST_COLUMNS = [
    Column("experiment", "Experiment"), Column("algorithm", "Algorithm"), Column("env", "Env"), Column("config", "Resources"),
    Column("priced_as", "Priced as"), Column("price_per_hour", "Price / h", 3),
    Column("train_time_s", "Training time (s)", 0), Column("cost", "Cost", 4),
    Column("return_threshold", "Return threshold", 0), Column("seeds_reached", "Seeds reached"),
    Column("time_to_threshold_s", "Time to threshold (s)", 0),
    Column("env_steps_to_threshold", "Env steps to threshold", 0),
    Column("cost_to_threshold", "Cost to threshold", 4), Column("pareto", "Pareto"),
    Column("note", "Note"),
]


def _interval(low: pd.Series, high: pd.Series, decimals: int) -> pd.Series:
    return pd.Series([f"[{lo:.{decimals}f}, {hi:.{decimals}f}]" if np.isfinite(lo) and np.isfinite(hi)
                      else "" for lo, hi in zip(low.astype(float), high.astype(float))],
                     index=low.index, dtype=object)


def scaling_stage(run_dirs: Iterable[str | Path], tables_dir: str | Path,
                  settings: Mapping[str, Any] | None = None,
                  experiments: Mapping[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """Write speedup, breakdown, amdahl, thesis_comparison and update_schedules tables
    (csv, md, tex). ``experiments`` (run id -> experiment name) keeps experiments apart."""
    settings = settings or {}
    warmup = int(settings.get("warmup_iterations", DEFAULT_WARMUP))
    runs = load_runs(run_dirs, experiments)
    result = aggregate(runs, warmup, n_bootstrap=int(settings.get("bootstrap", 1000)))
    speedup = result.speedup.assign(
        speedup_ci=lambda d: _interval(d["speedup_ci_low"], d["speedup_ci_high"], 2))
    amdahl = result.amdahl
    if not amdahl.empty:
        amdahl = amdahl.assign(serial_fraction_ci=lambda d: _interval(
            d["serial_fraction_ci_low"], d["serial_fraction_ci_high"], 3))
    else:
        amdahl = pd.DataFrame(columns=[c.name for c in AMDAHL_COLUMNS])
    comparison = thesis_comparison(result.speedup, thesis_iteration_times())
    schedules = schedule_comparison(result.speedup).assign(
        rr_speedup_ci=lambda d: _interval(d["rr_speedup_ci_low"], d["rr_speedup_ci_high"], 2),
        fixed_speedup_ci=lambda d: _interval(d["fixed_speedup_ci_low"],
                                             d["fixed_speedup_ci_high"], 2))
    footer = _provenance_footer(runs, result.speedup, warmup)
    tables_dir = Path(tables_dir)
    # Rows that differ only in settings the tables do not show get a Config column.
    shown = ["experiment", "algorithm", "env", "workers", "gpu", "update_schedule"]
    write_table(speedup, distinguishing_columns(speedup, SPEEDUP_COLUMNS,
                                                [*shown, "num_cpus_per_env_runner"]),
                tables_dir / "speedup", footer=footer,
                caption="Iteration time and speedup per resource configuration "
                        "(thesis Tables 6-8), relative to 1 worker without GPU")
    write_table(result.breakdown, distinguishing_columns(result.breakdown, BREAKDOWN_COLUMNS, shown),
                tables_dir / "breakdown", footer=footer,
                caption="Share of the steady-state iteration time by task (RLlib timers, "
                        "per-iteration sums)")
    write_table(amdahl, distinguishing_columns(
                    amdahl, AMDAHL_COLUMNS, ["experiment", "algorithm", "env", "update_schedule",
                                             "series"], key="series_id", header="Series id"),
                tables_dir / "amdahl", footer=footer,
                caption="Amdahl's-law fit per series: serial fraction and predicted speedups")
    write_table(comparison, THESIS_COLUMNS, tables_dir / "thesis_comparison",
                footer="Thesis: HumanoidBulletEnv-v0 on CTE-POWER (POWER9, V100), RLlib 1.1, its "
                       "last iteration's time. Hardware differs: compare speedups, not seconds.",
                caption="Our speedups next to the thesis's published ones (TD3/SAC: runs with "
                        "the thesis's rllib1_round_robin schedule; beside them the same grid at "
                        "a fixed ratio)")
    write_table(schedules, distinguishing_columns(
                    schedules, SCHEDULE_COLUMNS, ["experiment", "algorithm", "env", "workers", "gpu"],
                    key="series_id", header="Series id"),
                tables_dir / "update_schedules", footer=footer,
                caption="Off-policy speedup under the thesis's update schedule, split into "
                        "fewer updates per iteration and parallel work per update, beside "
                        "the fixed-ratio speedup of the same grid")
    for note in result.notes:
        log.warning("scaling: %s", note)
    return {"speedup": speedup, "breakdown": result.breakdown, "amdahl": amdahl,
            "thesis_comparison": comparison, "update_schedules": schedules}


RUNS_COLUMNS = [
    Column("run_id", "Run"), Column("status", "Status"), Column("hostname", "Host"),
    Column("cpu_model", "CPU"), Column("cpu_count", "Cores"), Column("gpus", "GPUs"),
    Column("ray", "Ray"), Column("torch", "torch"), Column("ddrl", "ddrl"),
    Column("commit", "Commit"), Column("started", "Started"), Column("finished", "Finished"),
]


def provenance_table(run_dirs: Iterable[str | Path], stem: str | Path) -> pd.DataFrame:
    """Write ``runs.{csv,md,tex}``: where, with what and from which commit each run ran."""
    rows = []
    for run_dir in run_dirs:
        record = RunFolder(run_dir).read_record()
        host, versions, git = (record.get(k) or {} for k in ("host", "versions", "git"))
        commit = git.get("commit") or ""
        rows.append({
            "run_id": record["run_id"], "status": record.get("status"),
            "hostname": host.get("hostname"), "cpu_model": host.get("cpu_model"),
            "cpu_count": host.get("cpu_count"), "gpus": ", ".join(host.get("gpus") or []) or "none",
            "ray": versions.get("ray"), "torch": versions.get("torch"),
            "ddrl": versions.get("ddrl"), "python": versions.get("python"),
            "commit": commit[:10] + (" (dirty)" if git.get("dirty") else ""),
            "started": record.get("started"), "finished": record.get("finished"),
            "sessions": record.get("sessions"),
        })
    table = pd.DataFrame(rows)
    write_table(table, RUNS_COLUMNS, stem,
                caption="Run provenance: host, versions and code revision of every run")
    return table


def cost_stage(run_dirs: Iterable[str | Path], stem: str | Path,
               cost_cfg: Mapping[str, Any] | None = None,
               experiments: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Write the cost table (csv, md, tex)."""
    cfg = cost_mod.with_defaults(cost_cfg or {})
    table = cost_mod.cost_table(load_runs(run_dirs, experiments), cfg)
    columns = distinguishing_columns(table, COST_COLUMNS, ["experiment", "algorithm", "env", "config"])
    write_table(table, columns, stem, footer=cfg["prices_note"],
                caption="Cost per run and to reach the return threshold "
                        f"({cfg['currency']}, example prices)")
    return table
