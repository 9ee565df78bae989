"""Amdahl fits of a scaling study: ``T(n) = a + b / n`` per series, with the serial fraction's
bootstrap interval and the speedups the fit predicts beyond the measured worker counts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ddrl.analysis.scaling.runs import (BASELINE_KEYS, CONFIG_KEYS, ScalingError,
                                        baseline_description)


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
        for col in FIT_COLUMNS:
            row[col] = math.nan
        row["note"] = ""
        if len(n) < 2:
            row["note"] = f"not fitted: needs at least 2 worker counts, measured {int(n[0])}"
        else:
            _fit_row(row, cfg, table, points, boot)
        rows.append(row)
    return pd.DataFrame(rows)


# The columns of the amdahl table a fit fills in.
FIT_COLUMNS = ("serial_fraction", "serial_fraction_ci_low", "serial_fraction_ci_high",
               "serial_fraction_se", "serial_s", "parallel_s", "max_speedup",
               "workers_2x", "speedup_2x", "iter_time_2x_s",
               "workers_4x", "speedup_4x", "iter_time_4x_s")


def _fit_row(row: dict[str, Any], cfg: dict, table: pd.DataFrame, points: pd.DataFrame,
             boot: dict) -> None:
    """Fill ``row`` with the fit through a series' ``points`` (2+ worker counts) and the
    speedups it predicts at 2x and 4x the largest worker count."""
    n = points["workers"].to_numpy(float)
    fit = fit_amdahl(n, points["iter_time_s"].to_numpy(float))
    fs = _bootstrap_serial_fractions(n, points, boot)
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


def _bootstrap_serial_fractions(n: np.ndarray, points: pd.DataFrame, boot: dict) -> np.ndarray:
    """The serial fraction refitted on each bootstrap draw of the points' medians."""
    draws = [boot.get(tuple(p[k] for k in CONFIG_KEYS), np.empty(0)) for _, p in points.iterrows()]
    fs = []
    if all(len(d) for d in draws):
        for j in range(min(len(d) for d in draws)):
            fs.append(fit_amdahl(n, [d[j] for d in draws]).serial_fraction)
    return np.asarray([f for f in fs if np.isfinite(f)])


def amdahl_curve(row: pd.Series | dict, workers: np.ndarray) -> np.ndarray:
    """Fitted iteration time at ``workers`` for an amdahl-table row."""
    return AmdahlFit(row["serial_s"], row["parallel_s"]).iteration_time(workers)
