"""What a run costs, and what reaching a return costs.

Prices come from the study config (``cost:``). Each run is priced either by an explicit
price for its resource setting (``cost.resource_prices``, keyed by the run's resource label
such as ``r2x1c1g0``), or as the cheapest instance type in ``cost.instances`` that holds
one node of the run (its CPUs, env runners x CPUs per runner + 1, and its GPUs), times its
nodes. Time is training time: the summed iteration times in ``progress.csv`` (start-up and
checkpoint writes excluded), the same clock the scaling tables use.

The return threshold of a run is its own ``budget.return_threshold`` when it has one (then
the threshold is reached where the run's stop rule says so: the mean return over its last
``budget.return_window`` episodes, with at least that many episodes finished; see
ddrl.training.stop), else ``cost.return_threshold`` for its env (reached at the first
iteration whose mean episode return reaches it). The time and env steps to the threshold
are the training time and env steps at that iteration. Runs that never reach it get no
time and no cost: they are counted, not extrapolated.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ddrl.errors import ConfigError
from ddrl.analysis.scaling import BASELINE_KEYS, CONFIG_KEYS
from ddrl.runs import resource_tag, workers_label
from ddrl.runs import DEFAULT_RETURN_WINDOW


# Example prices: Amazon SageMaker training instances, on-demand, us-east-1, in USD per hour,
# for the two shapes the thesis used (CPU-only nodes; nodes with V100 GPUs). They are
# EXAMPLES recalled from AWS's public price list as of 2024, not checked live: prices
# change and differ by region; set your own in the study config (cost.instances).
EXAMPLE_PRICES_NOTE = (
    "Prices are EXAMPLES: Amazon SageMaker training, on-demand, us-east-1, USD per instance "
    "hour, as listed around 2024 (not checked live; prices change). Set cost.instances or "
    "cost.resource_prices in the study config for real figures."
)
EXAMPLE_INSTANCES = {
    "ml.c5.xlarge": {"vcpus": 4, "gpus": 0, "price_per_hour": 0.204},
    "ml.c5.2xlarge": {"vcpus": 8, "gpus": 0, "price_per_hour": 0.408},
    "ml.c5.4xlarge": {"vcpus": 16, "gpus": 0, "price_per_hour": 0.816},
    "ml.c5.9xlarge": {"vcpus": 36, "gpus": 0, "price_per_hour": 1.836},
    "ml.c5.18xlarge": {"vcpus": 72, "gpus": 0, "price_per_hour": 3.672},
    "ml.p3.2xlarge": {"vcpus": 8, "gpus": 1, "price_per_hour": 3.825},
    "ml.p3.8xlarge": {"vcpus": 32, "gpus": 4, "price_per_hour": 14.688},
    "ml.p3.16xlarge": {"vcpus": 64, "gpus": 8, "price_per_hour": 28.152},
    "ml.p3dn.24xlarge": {"vcpus": 96, "gpus": 8, "price_per_hour": 35.894},
}


def with_defaults(cost_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The ``cost:`` config section with the example prices where it sets none."""
    cfg = dict(cost_cfg)
    if not cfg.get("instances") and not cfg.get("resource_prices"):
        cfg["instances"] = EXAMPLE_INSTANCES
        cfg.setdefault("prices_note", EXAMPLE_PRICES_NOTE)
    cfg.setdefault("currency", "USD")
    cfg.setdefault("prices_note", "Prices from the study config (cost.instances, cost.resource_prices).")
    return cfg


def resource_label(workers: int, envs: int, cpus: int, gpus: int, nodes: int) -> str:
    """The run-id resource tag (:func:`ddrl.runs.resource_tag`) of one resource setting."""
    return resource_tag({"num_env_runners": workers, "num_envs_per_env_runner": envs,
                         "num_cpus_per_env_runner": cpus, "num_gpus_per_learner": gpus,
                         "nodes": nodes})


def threshold_for(cost_cfg: Mapping[str, Any], env: str) -> float | None:
    thr = cost_cfg.get("return_threshold")
    if thr is None:
        return None
    if isinstance(thr, Mapping):
        value = thr.get(env)
        return None if value is None else float(value)
    return float(thr)


def price_run(cost_cfg: Mapping[str, Any], *, workers: int, envs: int, cpus_per_runner: int,
              gpus: int, nodes: int) -> tuple[str, float]:
    """``(what was priced, price per hour)`` for one resource setting."""
    label = resource_label(workers, envs, cpus_per_runner, gpus, nodes)
    explicit = cost_cfg.get("resource_prices", {}) or {}
    if label in explicit:
        return f"{label} (set price)", float(explicit[label])
    cpus = workers * cpus_per_runner + 1
    per_node_cpus = math.ceil(cpus / nodes)
    fitting = [
        (float(spec["price_per_hour"]), name)
        for name, spec in (cost_cfg.get("instances") or {}).items()
        if spec["vcpus"] >= per_node_cpus and spec.get("gpus", 0) >= gpus
    ]
    if not fitting:
        raise ConfigError(
            f"cost: no price for resource setting {label} ({per_node_cpus} CPUs and {gpus} GPU(s) "
            f"per node): add it to cost.resource_prices, or an instance type with at least "
            f"that many vcpus and gpus to cost.instances"
        )
    price, name = min(fitting)
    return (f"{nodes} x {name}" if nodes > 1 else name), price * nodes


def _to_threshold(run: pd.DataFrame, threshold: float, window: int = 0) -> tuple[float, float]:
    """Training time and env steps at the first iteration that reaches ``threshold`` with
    at least ``window`` episodes finished (NaN, NaN when none does)."""
    run = run.sort_values("iteration")
    episodes = run["episodes_this_iter"].fillna(0).cumsum() if "episodes_this_iter" in run \
        else pd.Series(math.inf, index=run.index)
    reached = run[(run["episode_return_mean"] >= threshold) & (episodes >= window)]
    if not len(reached):
        return math.nan, math.nan
    return float(reached["time_total_s"].iloc[0]), float(reached["env_steps"].iloc[0])


def _run_threshold(run: pd.DataFrame, cost_cfg: Mapping[str, Any],
                   env: str) -> tuple[float | None, int, str]:
    """The threshold a run is measured against, its episode window and where it comes from."""
    own = float(run["budget_return_threshold"].iloc[0]) \
        if "budget_return_threshold" in run else math.nan
    if own == own:
        window = int(run["budget_return_window"].iloc[0]) if "budget_return_window" in run else 0
        return own, window or DEFAULT_RETURN_WINDOW, "budget.return_threshold"
    return threshold_for(cost_cfg, env), 0, "cost.return_threshold"


def cost_table(runs: pd.DataFrame, cost_cfg: Mapping[str, Any]) -> pd.DataFrame:
    """One row per configuration (only its seeds pooled: medians), with the Pareto front of
    each series (the configurations of one experiment and settings but resources).

    ``runs`` is :func:`ddrl.analysis.scaling.load_runs` output.
    """
    rows = [_cost_row(dict(zip(CONFIG_KEYS, keys)), group, cost_cfg)
            for keys, group in runs.groupby(CONFIG_KEYS, sort=True)]
    table = pd.DataFrame(rows)
    table["pareto"] = False
    for _, group in table.groupby(BASELINE_KEYS, sort=False):
        table.loc[pareto_front(group), "pareto"] = True
    return table


def _per_run(group: pd.DataFrame, cost_cfg: Mapping[str, Any], env: str):
    """Each seed's training time, time and env steps to its threshold and best return, and
    the (threshold, source) pairs the seeds have."""
    per_run, thresholds = [], set()
    for run_id, run in group.groupby("run_id"):
        total = float(run["time_total_s"].max())
        threshold, window, source = _run_threshold(run, cost_cfg, env)
        thresholds.add((threshold, source))
        ttt, steps = (_to_threshold(run, threshold, window) if threshold is not None
                      else (math.nan, math.nan))
        per_run.append((total, ttt, steps, float(run["episode_return_mean"].max())))
    return per_run, thresholds


def _cost_row(cfg: dict, group: pd.DataFrame, cost_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration's row: its price, training time and cost, and the time, env steps
    and cost to its return threshold (medians over the seeds that reached it)."""
    what, price = price_run(cost_cfg, workers=cfg["num_env_runners"],
                            envs=cfg["num_envs_per_env_runner"],
                            cpus_per_runner=cfg["num_cpus_per_env_runner"],
                            gpus=cfg["num_gpus_per_learner"], nodes=cfg["nodes"])
    per_run, thresholds = _per_run(group, cost_cfg, cfg["env"])
    totals, ttts, stepss, best = (np.array(v, float) for v in zip(*per_run))
    reached = np.isfinite(ttts)
    (threshold, source), *others = sorted(thresholds, key=lambda t: (t[0] is None, t))
    row = {
        **cfg,
        "workers": cfg["num_env_runners"],
        "gpu": int(cfg["num_gpus_per_learner"] > 0),
        "config": workers_label(cfg["num_env_runners"], cfg["num_gpus_per_learner"],
                                 cfg["nodes"]),
        "config_id": group["config_id"].iloc[0],
        "priced_as": what,
        "price_per_hour": price,
        "currency": cost_cfg.get("currency", "USD"),
        "seeds": len(per_run),
        "train_time_s": float(np.median(totals)),
        "cost": float(np.median(totals)) / 3600 * price,
        "return_threshold": threshold if threshold is not None else math.nan,
        "seeds_reached": int(reached.sum()),
        "best_return": float(np.nanmax(best)) if np.isfinite(best).any() else math.nan,
        "threshold_from": source,
        "time_to_threshold_s": math.nan,
        "env_steps_to_threshold": math.nan,
        "cost_to_threshold": math.nan,
        "note": "",
    }
    if others:
        # Seeds of one configuration with different thresholds: no common answer.
        row["return_threshold"] = math.nan
        row["note"] = ("seeds have different return thresholds "
                       f"{sorted({t for t, _ in thresholds if t is not None})}; "
                       "not pooled")
    elif threshold is None:
        row["note"] = f"no return threshold set for {cfg['env']} (cost.return_threshold)"
    elif reached.any():
        ttt = float(np.median(ttts[reached]))
        row["time_to_threshold_s"] = ttt
        row["env_steps_to_threshold"] = float(np.median(stepss[reached]))
        row["cost_to_threshold"] = ttt / 3600 * price
        if not reached.all():
            row["note"] = (f"{reached.sum()} of {len(per_run)} seeds reached {threshold:g}; "
                           "median over those")
    else:
        row["note"] = f"not reached: best mean return {row['best_return']:.1f} < {threshold:g}"
    return row


def pareto_front(table: pd.DataFrame, x: str = "time_to_threshold_s",
                 y: str = "cost_to_threshold") -> list:
    """Index of the rows no other row beats on both ``x`` and ``y`` (finite rows only)."""
    ok = table[np.isfinite(table[x]) & np.isfinite(table[y])]
    front = []
    for i, row in ok.iterrows():
        dominated = ((ok[x] <= row[x]) & (ok[y] <= row[y])
                     & ((ok[x] < row[x]) | (ok[y] < row[y]))).any()
        if not dominated:
            front.append(i)
    return front
