"""Training returns of the learning runs, next to the thesis's published ones.

Per configuration (experiment and configuration identity: only runs that differ in nothing
but the seed are pooled, see :mod:`ddrl.analysis.results`): the best and the final mean
training return (RLlib's ``episode_return_mean``, the quantity the thesis plotted) as a mean
across seeds with a 95% t-interval, and the env steps at the best. For the humanoid the
thesis's values stand beside them with their caveats (one seed; TD3 rescaled when plotted).
"""

from __future__ import annotations

import importlib.resources
import math
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ddrl.analysis.results import load_progress
from ddrl.analysis.tables import Column, distinguishing_columns, write_table

# Two-sided 95% Student t quantiles by degrees of freedom (seeds - 1); 1.96 beyond 30.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}

COLUMNS = [
    Column("experiment", "Experiment"), Column("algorithm", "Algorithm"), Column("env", "Env"),
    Column("resources", "Resources"), Column("seeds", "Seeds"),
    Column("best_return", "Best return", 1), Column("best_return_ci", "95% CI"),
    Column("env_steps_at_best", "Env steps at best", 0),
    Column("final_return", "Final return", 1), Column("final_return_ci", "95% CI"),
    Column("env_steps", "Env steps", 0),
    Column("thesis_best_return", "Thesis best", 0),
    Column("thesis_env_steps_at_best", "Thesis env steps at best", 0),
    Column("thesis_caveat", "Thesis caveat"),
]


def thesis_returns() -> pd.DataFrame:
    """The thesis's published returns (source in the file's header)."""
    path = importlib.resources.files("ddrl") / "data" / "thesis_returns.csv"
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p, comment="#")


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% t-interval across seeds (NaN bounds with one seed)."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    df = len(values) - 1
    t = _T975.get(df) or (1.96 if df > 30 else _T975[max(k for k in _T975 if k <= df)])
    half = t * float(values.std(ddof=1)) / math.sqrt(len(values))
    return mean, mean - half, mean + half


# One row per configuration; the shown keys first, the identity that tells them apart last.
GROUP_KEYS = ["experiment", "algorithm", "env", "resources", "config_id"]


def _per_run(progress: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for run_id, run in progress.groupby("run_id", sort=False):
        run = run.sort_values("iteration")
        returns = run["episode_return_mean"].to_numpy(float)
        ok = np.isfinite(returns)
        first = run.iloc[0]
        row = {k: first[k] for k in (*GROUP_KEYS, "seed")}
        row.update(run_id=run_id, env_steps=float(run["env_steps"].max()),
                   best_return=math.nan, env_steps_at_best=math.nan, final_return=math.nan)
        if ok.any():
            best = int(np.nanargmax(np.where(ok, returns, -np.inf)))
            row.update(best_return=float(returns[best]),
                       env_steps_at_best=float(run["env_steps"].iloc[best]),
                       final_return=float(returns[ok][-1]))
        rows.append(row)
    return pd.DataFrame(rows)


def _interval_text(low: float, high: float) -> str:
    return f"[{low:.1f}, {high:.1f}]" if np.isfinite(low) and np.isfinite(high) else ""


def learning_returns(progress: pd.DataFrame, thesis: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per configuration (:data:`GROUP_KEYS`); ``progress`` is
    :func:`ddrl.analysis.results.load_progress` output."""
    thesis = thesis_returns() if thesis is None else thesis
    runs = _per_run(progress)
    rows = []
    for keys, group in runs.groupby(GROUP_KEYS, sort=False):
        best, best_lo, best_hi = t_interval(group["best_return"])
        final, final_lo, final_hi = t_interval(group["final_return"])
        row = dict(zip(GROUP_KEYS, keys))
        row.update(seeds=len(group), best_return=best, best_return_ci=_interval_text(best_lo, best_hi),
                   best_ci_low=best_lo, best_ci_high=best_hi,
                   env_steps_at_best=float(group["env_steps_at_best"].median()),
                   final_return=final, final_return_ci=_interval_text(final_lo, final_hi),
                   final_ci_low=final_lo, final_ci_high=final_hi,
                   env_steps=float(group["env_steps"].median()),
                   thesis_best_return=math.nan, thesis_best_return_raw=math.nan,
                   thesis_env_steps_at_best=math.nan, thesis_caveat="")
        match = thesis[(thesis["algorithm"] == row["algorithm"]) & (thesis["env"] == row["env"])]
        if len(match):
            t = match.iloc[0]
            row.update(thesis_best_return=float(t["best_return"]),
                       thesis_best_return_raw=float(t["best_return_raw"]),
                       thesis_env_steps_at_best=float(t["env_steps_at_best"]),
                       thesis_caveat=t["caveat"])
        else:
            row["thesis_caveat"] = "the thesis reports returns for HumanoidBulletEnv-v0 only"
        rows.append(row)
    return pd.DataFrame(rows)


def learning_returns_stage(run_dirs: Iterable[str | Path], stem: str | Path,
                           experiments: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Write ``learning_returns.{csv,md,tex}`` for the learning runs in ``run_dirs``."""
    table = learning_returns(load_progress(run_dirs, experiments))
    columns = distinguishing_columns(table, COLUMNS, by=["experiment", "algorithm", "env", "resources"])
    write_table(table, columns, stem,
                footer="Training returns: RLlib's episode_return_mean (the mean over the last "
                       "episodes of each iteration's window), as the thesis plotted. Mean across "
                       "seeds with a 95% t-interval; env steps at the best: median across seeds. "
                       "The thesis's values are single runs on CTE-POWER with RLlib 1.1.",
                caption="Best and final training return per learning experiment, next to the "
                        "thesis's published returns")
    return table
