"""The scaling statistics: steady-state iteration times per configuration, their bootstrap,
the speedups over each series' baseline and the breakdown of an iteration into its parts
(:func:`aggregate`)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ddrl.analysis.scaling.amdahl import fit_series
from ddrl.analysis.scaling.runs import (BASELINE_KEYS, CONFIG_KEYS, DEFAULT_BOOTSTRAP, PARTS,
                                        REQUIRED_TIMERS, ScalingError, baseline_description,
                                        concurrency)
from ddrl.runs import workers_label

log = logging.getLogger(__name__)


def steady_state(runs: pd.DataFrame, warmup_iterations: int) -> pd.DataFrame:
    """The rows after each run's first ``warmup_iterations`` iterations (by iteration number)."""
    if warmup_iterations < 0:
        raise ScalingError(f"scaling.warmup_iterations must be >= 0, got {warmup_iterations}")
    first = runs.groupby("run_id")["iteration"].transform("min")
    return runs[runs["iteration"] >= first + warmup_iterations].copy()


def _quartiles(values: np.ndarray) -> tuple[float, float, float]:
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return float(med), float(q1), float(q3)


@dataclass
class ScalingResult:
    """The three tables of the study and the problems found on the way."""

    speedup: pd.DataFrame
    breakdown: pd.DataFrame
    amdahl: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    boot: dict[tuple, np.ndarray] = field(default_factory=dict, repr=False)


def block_length(n: int) -> int:
    """Block length of the moving-block bootstrap for ``n`` consecutive iterations (n^(1/3))."""
    return max(1, int(math.ceil(n ** (1 / 3))))


def bootstrap_medians(runs: Sequence[np.ndarray], n: int,
                      rng: np.random.Generator) -> np.ndarray:
    """``n`` bootstrap draws of the median iteration time of a configuration.

    ``runs`` holds each run's steady-state iteration times in order. With two or more runs
    a draw resamples whole runs (seeds are the independent unit); with one run it is a
    moving-block bootstrap over its consecutive iterations.
    """
    runs = [np.asarray(r, float) for r in runs if len(r)]
    if n <= 0 or not runs:
        return np.empty(0)
    if len(runs) >= 2:
        picks = rng.integers(0, len(runs), size=(n, len(runs)))
        return np.array([np.median(np.concatenate([runs[i] for i in row])) for row in picks])
    values = runs[0]
    size = len(values)
    length = block_length(size)
    starts = rng.integers(0, size - length + 1, size=(n, -(-size // length)))
    idx = (starts[:, :, None] + np.arange(length)).reshape(n, -1)[:, :size]
    return np.median(values[idx], axis=1)


def interval_method(seeds: int, iterations: int) -> str:
    """How :func:`bootstrap_medians` resampled a configuration, for the tables."""
    if seeds >= 2:
        return f"runs ({seeds} seeds)"
    return f"blocks of {block_length(iterations)} iterations (1 run)"


def aggregate(runs: pd.DataFrame, warmup_iterations: int = 1, *,
              n_bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> ScalingResult:
    """Speedup, breakdown and Amdahl tables from :func:`load_runs` output."""
    notes: list[str] = []
    steady = steady_state(runs, warmup_iterations)
    overlap = concurrency(runs)
    rng = np.random.default_rng(seed)
    rows, parts_rows, boot = [], [], {}
    for keys, group in runs.groupby(CONFIG_KEYS, sort=True):
        cfg = dict(zip(CONFIG_KEYS, keys))
        run_ids = sorted(group["run_id"].unique())
        st = steady[steady["run_id"].isin(run_ids)].sort_values(["run_id", "iteration"])
        label = workers_label(cfg["num_env_runners"], cfg["num_gpus_per_learner"], cfg["nodes"])
        shared = sorted({o for r in run_ids for o in overlap.get(r, [])} - set(run_ids))
        row, per_run = _config_row(cfg, label, group, st, shared, warmup_iterations, notes)
        if per_run:
            boot[keys] = bootstrap_medians(per_run, n_bootstrap, rng)
        rows.append(row)
        parts_rows.append(_breakdown_row(cfg, label, st, group, notes))
    speedup = pd.DataFrame(rows)
    _add_speedups(speedup, boot, notes)
    breakdown = pd.DataFrame(parts_rows)
    amdahl = fit_series(speedup, boot, notes)
    for n in notes:
        log.warning("%s", n)
    return ScalingResult(speedup=speedup, breakdown=breakdown, amdahl=amdahl, notes=notes,
                         boot=boot)


def _config_row(cfg: dict, label: str, group: pd.DataFrame, st: pd.DataFrame,
                shared: list[str], warmup_iterations: int,
                notes: list[str]) -> tuple[dict[str, Any], list[np.ndarray]]:
    """One configuration's row of the speedup table (before the speedups), and each run's
    steady-state iteration times (what the bootstrap resamples)."""
    valid = st["time_this_iter_s"].notna() & (st["time_this_iter_s"] > 0)
    per_run = [g["time_this_iter_s"].to_numpy(float) for _, g in st[valid].groupby("run_id")]
    times = np.concatenate(per_run) if per_run else np.empty(0)
    row = {
        **cfg,
        "workers": cfg["num_env_runners"],
        "gpu": int(cfg["num_gpus_per_learner"] > 0),
        "config": label,
        "config_id": group["config_id"].iloc[0],
        "grid": group["grid"].iloc[0],
        "seeds": int(group["seed"].nunique()),
        "iterations": int(len(times)),
        "warmup_iterations": warmup_iterations,
        "iter_time_s": math.nan, "iter_time_q1_s": math.nan, "iter_time_q3_s": math.nan,
        "iter_time_iqr_s": math.nan, "env_steps_per_s": math.nan,
        "updates_per_iter": math.nan, "updates_per_s": math.nan,
        "updates_per_env_step": math.nan, "interval": "",
        "cpu_model": group["cpu_model"].iloc[0], "cpu_count": group["cpu_count"].iloc[0],
        "ran_alone": not shared,
        "concurrent_runs": len(shared),
        "run_ids": " ".join(sorted(group["run_id"].unique())),
        "note": "",
    }
    if cfg["num_gpus_per_learner"] > 0 and (group["host_gpus"] == 0).any():
        # on_missing_gpu: cpu trained it on the CPU; its label still says GPU.
        row["note"] = (f"asked for {cfg['num_gpus_per_learner']} GPU(s) but ran on a host "
                       "without one (on_missing_gpu: cpu): this is a CPU timing")
        notes.append(f"{cfg['algorithm']} {cfg['env']} {label}: {row['note']}")
    if len(times) == 0:
        n_iter = int(group.groupby("run_id")["iteration"].count().max())
        row["note"] = "; ".join(filter(None, [row["note"], (
            f"no steady-state iterations: {n_iter} iteration(s), warm-up "
            f"excludes the first {warmup_iterations}")]))
        notes.append(f"{cfg['algorithm']} {cfg['env']} {label}: {row['note']}")
    else:
        row.update(_rates(st, times, len(per_run)))
    return row, per_run


def _rates(st: pd.DataFrame, times: np.ndarray, seeds: int) -> dict[str, Any]:
    """Steady-state iteration-time quartiles, env steps/s and gradient updates of a
    configuration with steady-state iterations."""
    med, q1, q3 = _quartiles(times)
    steps = st["env_steps_this_iter"].to_numpy(float)
    ok = np.isfinite(steps) & np.isfinite(st["time_this_iter_s"].to_numpy(float))
    total_t = st["time_this_iter_s"].to_numpy(float)[ok].sum()
    out = dict(iter_time_s=med, iter_time_q1_s=q1, iter_time_q3_s=q3, iter_time_iqr_s=q3 - q1,
               env_steps_per_s=steps[ok].sum() / total_t if total_t > 0 else math.nan,
               interval=interval_method(seeds, len(times)))
    updates = st["gradient_updates"].to_numpy(float)
    if ok.any() and np.isfinite(updates[ok]).all():
        out.update(updates_per_iter=float(np.median(updates[ok])),
                   updates_per_s=updates[ok].sum() / total_t if total_t > 0 else math.nan,
                   updates_per_env_step=(updates[ok].sum() / steps[ok].sum()
                                         if steps[ok].sum() > 0 else math.nan))
    return out


def _breakdown_row(cfg: dict, label: str, st: pd.DataFrame, group: pd.DataFrame,
                   notes: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {**cfg, "workers": cfg["num_env_runners"],
                           "gpu": int(cfg["num_gpus_per_learner"] > 0), "config": label,
                           "config_id": group["config_id"].iloc[0], "iterations": int(len(st))}
    missing = sorted({c for m in group["missing_timers"] for c in str(m).split(",") if c}
                     & set(REQUIRED_TIMERS))
    empty = [c for c in REQUIRED_TIMERS if c not in missing and len(st) and st[c].isna().all()]
    t = st["time_this_iter_s"].to_numpy(float)
    total = float(np.nansum(t))
    problem = missing + empty
    for col, name in PARTS.items():
        key = name.replace(" ", "_")
        values = st[col].to_numpy(float)
        if problem or not len(st) or total <= 0:
            row[f"{key}_s"] = math.nan
            row[f"{key}_share"] = math.nan
            continue
        if col == "replay_time_s" and np.isnan(values).all():
            values = np.zeros_like(values)  # no replay buffer
        row[f"{key}_s"] = float(np.nanmedian(values))
        row[f"{key}_share"] = float(np.nansum(values) / total)
    if problem or not len(st) or total <= 0:
        row["other_s"] = row["other_share"] = math.nan
    else:
        parts = sum(np.nan_to_num(st[c].to_numpy(float)) for c in PARTS)
        row["other_s"] = float(np.median(t - parts))
        row["other_share"] = float(1 - parts.sum() / total)
    row["iter_time_s"] = float(np.median(t)) if len(t) else math.nan
    row["note"] = ""
    if problem:
        files = ", ".join(f"runs/{r}/progress.csv" for r in sorted(group["run_id"].unique()))
        kind = "missing timer column(s)" if missing else "timer column(s) with no values"
        row["note"] = f"{kind} {problem} in {files}"
        notes.append(f"{cfg['algorithm']} {cfg['env']} {label}: breakdown left empty: {row['note']}")
    return row


def _add_speedups(table: pd.DataFrame, boot: dict, notes: list[str]) -> None:
    for col in ("speedup", "speedup_ci_low", "speedup_ci_high", "efficiency"):
        table[col] = math.nan
    table["baseline"] = ""
    for keys, group in table.groupby(BASELINE_KEYS, sort=False):
        cfg = dict(zip(BASELINE_KEYS, keys))
        base = group[(group["num_env_runners"] == 1) & (group["num_gpus_per_learner"] == 0)
                     & (group["nodes"] == 1)]
        if base.empty or not np.isfinite(base["iter_time_s"].iloc[0]):
            why = "missing" if base.empty else "without steady-state iterations"
            msg = f"no speedup: the baseline run ({baseline_description(cfg)}) is {why}"
            notes.append(msg)
            for i in group.index:
                table.at[i, "note"] = "; ".join(filter(None, [table.at[i, "note"], msg]))
            continue
        b = base.iloc[0]
        bkey = tuple(b[k] for k in CONFIG_KEYS)
        for i in group.index:
            t = table.at[i, "iter_time_s"]
            if not np.isfinite(t):
                continue
            s = b["iter_time_s"] / t
            table.at[i, "speedup"] = s
            table.at[i, "efficiency"] = s / table.at[i, "workers"]
            table.at[i, "baseline"] = b["config"]
            key = tuple(table.at[i, k] for k in CONFIG_KEYS)
            if bkey in boot and key in boot and len(boot[key]):
                ratio = boot[bkey] / boot[key]
                table.at[i, "speedup_ci_low"], table.at[i, "speedup_ci_high"] = (
                    np.percentile(ratio, [2.5, 97.5]))
