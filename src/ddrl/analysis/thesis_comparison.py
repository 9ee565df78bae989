"""ddrl's speedups beside the thesis's published ones (:func:`thesis_comparison`), and the
thesis-semantics (``rllib1_round_robin``) runs beside the fixed-ratio runs of the same grid
(:func:`schedule_comparison`). Reads the speedup table of :mod:`ddrl.analysis.scaling`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddrl.analysis.scaling import FIXED_RATIO, ON_POLICY, ROUND_ROBIN, baseline_of, in_series

THESIS_ENV = "HumanoidBulletEnv-v0"


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
        base = baseline_of(speedup, rr)
        if base is not None and rr["updates_per_iter"] > 0 and base["updates_per_iter"] > 0:
            out["fewer_updates"] = base["updates_per_iter"] / rr["updates_per_iter"]
            out["per_update_speedup"] = rr["speedup"] / out["fewer_updates"]
        elif base is None:
            notes.append("no round-robin baseline (1 runner, no GPU)")
        fixed = _same_grid(ok, rr, FIXED_RATIO)
        if len(fixed):
            f = fixed.iloc[0]
            fbase = baseline_of(speedup, f)
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
            ref = thesis_mode[in_series(thesis_mode, m)
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
