"""The scaling study: steady-state iteration times, speedups and Amdahl fits.

Input is every run's ``progress.csv`` (one row per training iteration) joined with its
``run.json``. For each resource configuration (runs that differ only in seed are pooled):

- **steady-state iteration time**: the median of ``time_this_iter_s`` over the iterations
  after the first ``warmup_iterations`` of each run (the first iterations include JIT,
  actor start-up and replay warm-up), with its inter-quartile range;
- **env steps/s**: env steps sampled over those iterations / their summed time; likewise
  **updates/s** and **updates per env step** from the gradient updates each iteration
  recorded (off-policy runs; the ``update_schedule`` column says which semantics: the
  thesis's ``rllib1_round_robin`` or ddrl's ``fixed_ratio``, see
  :mod:`ddrl.algorithms.offpolicy`);
- **breakdown**: the share of that time spent sampling, learning, syncing weights and in
  replay-buffer work, from RLlib's timers (per-iteration sums, see
  :func:`ddrl.training.progress.use_per_iteration_timers`), and the unaccounted rest;
- **speedup** ``T(baseline) / T`` and **parallel efficiency** ``speedup / workers``, where the
  baseline is the 1-env-runner, no-GPU configuration of the same algorithm, env,
  hyperparameters, envs per runner and CPUs per runner;
- an **Amdahl fit** per series (CPU only; with GPU): ``T(n) = a + b / n`` by least squares on
  relative residuals, ``a, b >= 0``. The serial fraction is ``f = a / (a + b)``; its
  uncertainty is a bootstrap over the steady-state iterations of every configuration.

Nothing is invented: a configuration without its baseline, or a run without a timer
column, gets an empty cell and a note saying which baseline or column is missing.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ddrl.analysis.results import identity_columns
from ddrl.errors import DdrlError
from ddrl.runs import (SCALED_RESOURCES, RunNotFinished, config_identity, hyperparameter_key,
                       read_run, workers_label)

log = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("iteration", "time_this_iter_s", "env_steps_this_iter")
# Breakdown parts: progress.csv column -> label. replay_time_s is optional (on-policy
# algorithms have no replay buffer; older progress files lack the column).
PARTS = {
    "sample_time_s": "sampling",
    "learn_time_s": "learning",
    "sync_weights_time_s": "weight sync",
    "replay_time_s": "replay buffer",
}
REQUIRED_TIMERS = ("sample_time_s", "learn_time_s", "sync_weights_time_s")
# What makes two runs the same series (everything but workers, GPUs, nodes and seed):
# ``series_id`` is their spec's hash without those; the other keys are shown in the tables.
BASELINE_KEYS = ["experiment", "series_id", "algorithm", "env", "update_schedule", "hp",
                 "num_envs_per_env_runner", "num_cpus_per_env_runner"]
# One configuration (seeds pooled): the series at one worker count, GPU and node setting,
# i.e. the same runs as ``config_id`` (everything but the seed) picks.
CONFIG_KEYS = BASELINE_KEYS + ["num_env_runners", "num_gpus_per_learner", "nodes"]
DEFAULT_BOOTSTRAP = 1000
THESIS_ENV = "HumanoidBulletEnv-v0"
# update_schedule of the runs: the off-policy ones (ddrl.algorithms.common), and PPO's.
ROUND_ROBIN, FIXED_RATIO, ON_POLICY = "rllib1_round_robin", "fixed_ratio", "on_policy"
# Settings that only say how an off-policy run schedules its updates: runs that differ in
# nothing else are one grid measured under both schedules.
SCHEDULE_SETTINGS = ("update_schedule", "updates_per_step", "rollout_fragment_length")


class ScalingError(DdrlError):
    """The progress files cannot give the requested statistics."""


# --------------------------------------------------------------------------- loading


def load_runs(run_dirs: Iterable[str | Path],
              experiments: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every run's progress rows with its settings and provenance columns.

    ``experiments`` maps run ids to the study's experiment names (``Study.experiment_of``):
    runs of different experiments are different series even with equal settings.

    Raises :class:`ScalingError` naming the file when a required column is missing.
    """
    frames = []
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        try:
            record, progress = read_run(run_dir)
        except RunNotFinished as err:
            raise ScalingError(str(err)) from None
        missing = [c for c in REQUIRED_COLUMNS if c not in progress.columns]
        if missing:
            raise ScalingError(
                f"{run_dir / 'progress.csv'}: missing column(s) {missing}; "
                f"expected ddrl's progress columns including {list(REQUIRED_COLUMNS)}"
            )
        spec = record["spec"]
        res = spec["resources"]
        host = record.get("host", {})
        hp = spec.get("hyperparameters", {})
        if "gradient_updates" not in progress.columns:
            progress = progress.assign(gradient_updates=np.nan)
        frames.append(progress.assign(
            run_id=record["run_id"],
            **identity_columns(record, experiments),
            series_id=config_identity(spec, without_resources=SCALED_RESOURCES),
            algorithm=spec["algorithm"],
            env=spec["env"],
            seed=spec["seed"],
            hp=hyperparameter_key(hp),
            update_schedule=hp.get("update_schedule", ON_POLICY),
            grid=hyperparameter_key({k: v for k, v in hp.items() if k not in SCHEDULE_SETTINGS}),
            num_env_runners=int(res["num_env_runners"]),
            num_envs_per_env_runner=int(res.get("num_envs_per_env_runner", 1)),
            num_cpus_per_env_runner=int(res.get("num_cpus_per_env_runner", 1)),
            num_gpus_per_learner=int(res.get("num_gpus_per_learner", 0)),
            nodes=int(res.get("nodes", 1)),
            # The run's own stop rule (budget.return_threshold), read by the cost table.
            budget_return_threshold=float(spec.get("budget", {}).get("return_threshold",
                                                                     math.nan)),
            budget_return_window=int(spec.get("budget", {}).get("return_window", 0)),
            stop_reason=record.get("result", {}).get("stop_reason"),
            hostname=host.get("hostname"),
            cpu_model=host.get("cpu_model"),
            cpu_count=host.get("cpu_count"),
            host_gpus=len(host.get("gpus") or []) if "gpus" in host else None,
            started=record.get("started"),
            finished=record.get("finished"),
            # Columns a file lacks are recorded so the breakdown can name them.
            missing_timers=",".join(c for c in PARTS if c not in progress.columns),
        ))
    if not frames:
        raise ScalingError("no runs to aggregate")
    data = pd.concat(frames, ignore_index=True)
    for col in PARTS:
        if col not in data.columns:
            data[col] = np.nan
    return data


def concurrency(runs: pd.DataFrame) -> dict[str, list[str]]:
    """For each run, the other runs on the same host whose [started, finished] overlap it.

    Timing runs that shared cores are not fair comparisons; the tables say which did.
    """
    meta = runs.drop_duplicates("run_id")[["run_id", "hostname", "started", "finished"]]
    spans = {}
    for row in meta.itertuples():
        try:
            spans[row.run_id] = (row.hostname, datetime.fromisoformat(row.started),
                                 datetime.fromisoformat(row.finished))
        except (TypeError, ValueError):
            spans[row.run_id] = None
    out: dict[str, list[str]] = {}
    for rid, span in spans.items():
        others = []
        if span is not None:
            for oid, other in spans.items():
                if oid == rid or other is None or other[0] != span[0]:
                    continue
                if other[1] < span[2] and span[1] < other[2]:
                    others.append(oid)
        out[rid] = sorted(others)
    return out


# --------------------------------------------------------------------------- statistics


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
        valid = st["time_this_iter_s"].notna() & (st["time_this_iter_s"] > 0)
        per_run = [g["time_this_iter_s"].to_numpy(float) for _, g in st[valid].groupby("run_id")]
        times = np.concatenate(per_run) if per_run else np.empty(0)
        label = workers_label(cfg["num_env_runners"], cfg["num_gpus_per_learner"], cfg["nodes"])
        shared = sorted({o for r in run_ids for o in overlap.get(r, [])} - set(run_ids))
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
            "run_ids": " ".join(run_ids),
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
            med, q1, q3 = _quartiles(times)
            steps = st["env_steps_this_iter"].to_numpy(float)
            ok = np.isfinite(steps) & np.isfinite(st["time_this_iter_s"].to_numpy(float))
            total_t = st["time_this_iter_s"].to_numpy(float)[ok].sum()
            row.update(iter_time_s=med, iter_time_q1_s=q1, iter_time_q3_s=q3,
                       iter_time_iqr_s=q3 - q1,
                       env_steps_per_s=steps[ok].sum() / total_t if total_t > 0 else math.nan,
                       interval=interval_method(len(per_run), len(times)))
            updates = st["gradient_updates"].to_numpy(float)
            if ok.any() and np.isfinite(updates[ok]).all():
                row.update(updates_per_iter=float(np.median(updates[ok])),
                           updates_per_s=updates[ok].sum() / total_t if total_t > 0 else math.nan,
                           updates_per_env_step=(updates[ok].sum() / steps[ok].sum()
                                                 if steps[ok].sum() > 0 else math.nan))
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


def baseline_description(cfg: dict) -> str:
    return (f"{cfg['algorithm']} on {cfg['env']} with 1 env runner and no GPU "
            f"({cfg['num_envs_per_env_runner']} env(s)/runner, "
            f"{cfg['num_cpus_per_env_runner']} CPU(s)/runner, hyperparameters {cfg['hp']})")


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


# --------------------------------------------------------------------------- Amdahl


@dataclass(frozen=True)
class AmdahlFit:
    """``T(n) = a + b / n``: ``a`` the serial seconds, ``b`` the parallelisable seconds."""

    a: float
    b: float

    @property
    def serial_fraction(self) -> float:
        return self.a / (self.a + self.b) if self.a + self.b > 0 else math.nan

    def iteration_time(self, n: float | np.ndarray) -> float | np.ndarray:
        return self.a + self.b / np.asarray(n, float)


def fit_amdahl(workers: Sequence[float], times: Sequence[float]) -> AmdahlFit:
    """Least squares of ``T(n) = a + b/n`` on relative residuals, with ``a, b >= 0``.

    Relative residuals weigh the fast, many-worker configurations as much as the slow
    one-worker run; without them the fit would follow the largest times only.
    """
    n = np.asarray(workers, float)
    t = np.asarray(times, float)
    if len(np.unique(n)) < 2:
        raise ScalingError(f"an Amdahl fit needs at least 2 worker counts, got {sorted(set(n))}")
    w = 1.0 / t**2
    x = 1.0 / n
    design = np.column_stack([np.ones_like(x), x]) * np.sqrt(w)[:, None]
    (a, b), *_ = np.linalg.lstsq(design, t * np.sqrt(w), rcond=None)
    if a < 0:  # superlinear data: no serial part
        a, b = 0.0, float(np.sum(w * t * x) / np.sum(w * x * x))
    if b < 0:  # slower with more workers: all serial
        a, b = float(np.sum(w * t) / np.sum(w)), 0.0
    return AmdahlFit(float(a), float(b))


def fit_series(table: pd.DataFrame, boot: dict, notes: list[str]) -> pd.DataFrame:
    """One Amdahl fit per series (baseline keys x CPU/GPU), with bootstrap uncertainty."""
    rows = []
    ok = table[np.isfinite(table["iter_time_s"])]
    for keys, group in ok.groupby(BASELINE_KEYS + ["gpu"], sort=True):
        cfg = dict(zip(BASELINE_KEYS + ["gpu"], keys))
        series = "GPU learner" if cfg["gpu"] else "CPU only"
        # One point per worker count (several node layouts: the fastest is the setting).
        points = group.sort_values("iter_time_s").drop_duplicates("workers").sort_values("workers")
        n = points["workers"].to_numpy(float)
        row: dict[str, Any] = {**cfg, "series": series, "workers_measured": " ".join(
            str(int(v)) for v in n), "points": len(n)}
        for col in ("serial_fraction", "serial_fraction_ci_low", "serial_fraction_ci_high",
                    "serial_fraction_se", "serial_s", "parallel_s", "max_speedup",
                    "workers_2x", "speedup_2x", "iter_time_2x_s",
                    "workers_4x", "speedup_4x", "iter_time_4x_s"):
            row[col] = math.nan
        row["note"] = ""
        if len(n) < 2:
            row["note"] = f"not fitted: needs at least 2 worker counts, measured {int(n[0])}"
            rows.append(row)
            continue
        fit = fit_amdahl(n, points["iter_time_s"].to_numpy(float))
        keys_cfg = [tuple(p[k] for k in CONFIG_KEYS) for _, p in points.iterrows()]
        draws = [boot.get(k, np.empty(0)) for k in keys_cfg]
        fs = []
        if all(len(d) for d in draws):
            for j in range(min(len(d) for d in draws)):
                fs.append(fit_amdahl(n, [d[j] for d in draws]).serial_fraction)
        fs = np.asarray([f for f in fs if np.isfinite(f)])
        base = table[(table[BASELINE_KEYS] == pd.Series({k: cfg[k] for k in BASELINE_KEYS})).all(axis=1)
                     & (table["num_env_runners"] == 1) & (table["num_gpus_per_learner"] == 0)
                     & (table["nodes"] == 1)]
        t_base = float(base["iter_time_s"].iloc[0]) if len(base) else math.nan
        largest = int(n.max())
        row.update(serial_fraction=fit.serial_fraction, serial_s=fit.a, parallel_s=fit.b,
                   workers_2x=2 * largest, workers_4x=4 * largest,
                   iter_time_2x_s=float(fit.iteration_time(2 * largest)),
                   iter_time_4x_s=float(fit.iteration_time(4 * largest)))
        if len(fs):
            row["serial_fraction_ci_low"], row["serial_fraction_ci_high"] = np.percentile(fs, [2.5, 97.5])
            row["serial_fraction_se"] = float(np.std(fs, ddof=1)) if len(fs) > 1 else math.nan
        if np.isfinite(t_base):
            row["speedup_2x"] = t_base / row["iter_time_2x_s"]
            row["speedup_4x"] = t_base / row["iter_time_4x_s"]
            row["max_speedup"] = t_base / fit.a if fit.a > 0 else math.inf
        else:
            row["note"] = f"speedups not predicted: the baseline run ({baseline_description(cfg)}) is missing"
        if len(n) == 2:
            row["note"] = "; ".join(filter(None, [row["note"],
                                    "2 worker counts: the curve passes through both; the "
                                    "interval reflects iteration-time noise only"]))
        rows.append(row)
    return pd.DataFrame(rows)


def amdahl_curve(row: pd.Series | dict, workers: np.ndarray) -> np.ndarray:
    """Fitted iteration time at ``workers`` for an amdahl-table row."""
    return AmdahlFit(row["serial_s"], row["parallel_s"]).iteration_time(workers)


# --------------------------------------------------------------------------- thesis


def thesis_speedups(thesis: pd.DataFrame) -> pd.DataFrame:
    """The thesis's iteration times with speedups relative to its own reference run.

    The reference is the 1-worker CPU run where the thesis has one (TD3, SAC). Its PPO
    table has none; there the reference is its smallest CPU worker count, and the
    ``reference`` column says so.
    """
    out = []
    for algo, group in thesis.groupby("algorithm", sort=True):
        cpu = group[group["num_gpus"] == 0]
        if cpu.empty:
            continue
        ref = cpu.sort_values("num_workers").iloc[0]
        g = group.copy()
        g["speedup"] = ref["iteration_time_s"] / g["iteration_time_s"]
        g["reference_workers"] = int(ref["num_workers"])
        g["reference"] = f"{int(ref['num_workers'])} worker{'s' if ref['num_workers'] > 1 else ''}, no GPU"
        out.append(g)
    return pd.concat(out, ignore_index=True) if out else thesis.assign(speedup=np.nan)


def _same_grid(table: pd.DataFrame, row: pd.Series | dict, schedule: str) -> pd.DataFrame:
    """Rows of ``table`` measured under ``schedule`` with ``row``'s grid and resources."""
    keys = ["algorithm", "env", "grid", "workers", "gpu", "nodes", "num_envs_per_env_runner",
            "num_cpus_per_env_runner"]
    mask = table["update_schedule"] == schedule
    for k in keys:
        mask &= table[k] == row[k]
    return table[mask]


def _in_series(table: pd.DataFrame, row: pd.Series | dict) -> pd.Series:
    """Mask of the rows of ``table`` in ``row``'s series (:data:`BASELINE_KEYS`)."""
    mask = pd.Series(True, index=table.index)
    for k in BASELINE_KEYS:
        mask &= table[k] == row[k]
    return mask


def _baseline_of(table: pd.DataFrame, row: pd.Series | dict) -> pd.Series | None:
    """The 1-runner, no-GPU, 1-node row of ``row``'s own series (same experiment too)."""
    base = table[_in_series(table, row) & (table["workers"] == 1) & (table["gpu"] == 0)
                 & (table["nodes"] == 1) & np.isfinite(table["iter_time_s"])]
    return base.iloc[0] if len(base) else None


def schedule_comparison(speedup: pd.DataFrame) -> pd.DataFrame:
    """Each thesis-semantics (``rllib1_round_robin``) configuration beside the fixed-ratio run
    of the same grid, with its speedup split into its two causes.

    In round-robin mode an iteration of ``T`` seconds holds ``u`` updates, and ``u`` falls as
    1/workers. So ``speedup = T(1)/T(n) = [u(1)/u(n)] x [(T(1)/u(1)) / (T(n)/u(n))]``:
    ``fewer_updates`` is the first factor (less learning per iteration), ``per_update_speedup``
    the second (sampling and learning done in parallel per update). The fixed-ratio column is
    the honest speedup: env steps/s at the same updates per env step.
    """
    rows = []
    ok = speedup[np.isfinite(speedup["iter_time_s"])]
    for _, rr in ok[ok["update_schedule"] == ROUND_ROBIN].iterrows():
        out = {k: rr[k] for k in ("experiment", "series_id", "algorithm", "env", "workers",
                                  "gpu", "nodes", "config")}
        out.update(rr_iter_time_s=rr["iter_time_s"], rr_speedup=rr["speedup"],
                   rr_speedup_ci_low=rr["speedup_ci_low"], rr_speedup_ci_high=rr["speedup_ci_high"],
                   rr_updates_per_iter=rr["updates_per_iter"],
                   rr_updates_per_env_step=rr["updates_per_env_step"],
                   fewer_updates=math.nan, per_update_speedup=math.nan,
                   fixed_env_steps_per_s=math.nan, fixed_updates_per_env_step=math.nan,
                   fixed_speedup=math.nan, fixed_speedup_ci_low=math.nan,
                   fixed_speedup_ci_high=math.nan, note="")
        notes = []
        base = _baseline_of(speedup, rr)
        if base is not None and rr["updates_per_iter"] > 0 and base["updates_per_iter"] > 0:
            out["fewer_updates"] = base["updates_per_iter"] / rr["updates_per_iter"]
            out["per_update_speedup"] = rr["speedup"] / out["fewer_updates"]
        elif base is None:
            notes.append("no round-robin baseline (1 runner, no GPU)")
        fixed = _same_grid(ok, rr, FIXED_RATIO)
        if len(fixed):
            f = fixed.iloc[0]
            fbase = _baseline_of(speedup, f)
            out.update(fixed_env_steps_per_s=f["env_steps_per_s"],
                       fixed_updates_per_env_step=f["updates_per_env_step"],
                       fixed_speedup_ci_low=f["speedup_ci_low"],
                       fixed_speedup_ci_high=f["speedup_ci_high"])
            if fbase is not None:
                out["fixed_speedup"] = f["env_steps_per_s"] / fbase["env_steps_per_s"]
            else:
                notes.append("no fixed-ratio baseline (1 runner, no GPU)")
        else:
            notes.append("no fixed-ratio run of the same grid")
        out["note"] = "; ".join(notes)
        rows.append(out)
    columns = ["experiment", "series_id", "algorithm", "env", "workers", "gpu", "nodes",
               "config", "rr_iter_time_s",
               "rr_speedup", "rr_speedup_ci_low", "rr_speedup_ci_high", "rr_updates_per_iter",
               "rr_updates_per_env_step", "fewer_updates", "per_update_speedup",
               "fixed_env_steps_per_s", "fixed_updates_per_env_step", "fixed_speedup",
               "fixed_speedup_ci_low", "fixed_speedup_ci_high", "note"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["algorithm", "env", "experiment", "series_id", "gpu", "workers"],
                             ignore_index=True)


def thesis_comparison(speedup: pd.DataFrame, thesis: pd.DataFrame) -> pd.DataFrame:
    """Our speedups next to the thesis's, per algorithm, worker count and GPU setting.

    Like is compared with like: for TD3 and SAC "our speedup" comes from runs with the
    thesis's ``rllib1_round_robin`` update schedule (the iteration semantics of RLlib 1.1);
    beside it, ``fixed_ratio_speedup`` is the same grid at a fixed number of updates per env
    step (env steps/s), which is what ddrl reports as the speedup of the computation.
    Both sides use their own reference (see :func:`thesis_speedups`); where the thesis
    reference is not 1 worker, our speedup is re-based on the same worker count.
    """
    th = thesis_speedups(thesis)
    ours = speedup[np.isfinite(speedup["iter_time_s"]) & (speedup["nodes"] == 1)]
    rows = []
    for row in th.itertuples():
        algo = ours[ours["algorithm"].str.lower() == row.algorithm]
        thesis_mode = algo[algo["update_schedule"].isin([ROUND_ROBIN, ON_POLICY])]
        mine = thesis_mode[(thesis_mode["workers"] == row.num_workers)
                           & (thesis_mode["gpu"] == int(row.num_gpus > 0))]
        out = {"algorithm": row.algorithm.upper(), "workers": int(row.num_workers),
               "gpu": int(row.num_gpus > 0), "thesis_iter_time_s": row.iteration_time_s,
               "thesis_speedup": row.speedup, "reference": row.reference,
               "update_schedule": "", "iter_time_s": math.nan, "speedup": math.nan,
               "updates_per_iter": math.nan, "fixed_ratio_speedup": math.nan, "env": "",
               "experiment": "", "series_id": ""}
        if len(mine):
            # The thesis ran the humanoid; prefer it where the study has several envs.
            m = mine.sort_values("env", key=lambda e: e != THESIS_ENV, kind="stable").iloc[0]
            out.update(iter_time_s=m["iter_time_s"], env=m["env"],
                       update_schedule=m["update_schedule"],
                       updates_per_iter=m["updates_per_iter"],
                       experiment=m["experiment"], series_id=m["series_id"])
            # The reference run of the same series (experiment and settings but workers).
            ref = thesis_mode[_in_series(thesis_mode, m)
                              & (thesis_mode["workers"] == row.reference_workers)
                              & (thesis_mode["gpu"] == 0)]
            if len(ref):
                out["speedup"] = ref["iter_time_s"].iloc[0] / m["iter_time_s"]
            fixed = _same_grid(ours, m, FIXED_RATIO)
            fixed_ref = _same_grid(ours, {**dict(m), "workers": row.reference_workers, "gpu": 0},
                                   FIXED_RATIO)
            if len(fixed) and len(fixed_ref):
                out["fixed_ratio_speedup"] = (fixed["env_steps_per_s"].iloc[0]
                                              / fixed_ref["env_steps_per_s"].iloc[0])
        rows.append(out)
    return pd.DataFrame(rows)
