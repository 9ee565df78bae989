"""A scaling study's runs as one table (:func:`load_runs`), the keys that group them into
series and configurations, and which runs shared a host (:func:`concurrency`)."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from ddrl.analysis.results import identity_columns
from ddrl.errors import DdrlError
from ddrl.runs import (SCALED_RESOURCES, RunNotFinished, config_identity, hyperparameter_key,
                       read_run)

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
# update_schedule of the runs: the off-policy ones (ddrl.algorithms.common), and PPO's.
ROUND_ROBIN, FIXED_RATIO, ON_POLICY = "rllib1_round_robin", "fixed_ratio", "on_policy"
# Settings that only say how an off-policy run schedules its updates: runs that differ in
# nothing else are one grid measured under both schedules.
SCHEDULE_SETTINGS = ("update_schedule", "updates_per_step", "rollout_fragment_length")


class ScalingError(DdrlError):
    """The progress files cannot give the requested statistics."""


def load_runs(run_dirs: Iterable[str | Path],
              experiments: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every run's progress rows with its settings and provenance columns.

    ``experiments`` maps run ids to the study's experiment names (``Study.experiment_of``):
    runs of different experiments are different series even with equal settings.

    Raises :class:`ScalingError` naming the file when a required column is missing.
    """
    frames = [_run_frame(Path(run_dir), experiments) for run_dir in run_dirs]
    if not frames:
        raise ScalingError("no runs to aggregate")
    data = pd.concat(frames, ignore_index=True)
    for col in PARTS:
        if col not in data.columns:
            data[col] = np.nan
    return data


def _run_frame(run_dir: Path, experiments: Mapping[str, str] | None) -> pd.DataFrame:
    """One run's progress rows, each with the run's settings and provenance."""
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
    if "gradient_updates" not in progress.columns:
        progress = progress.assign(gradient_updates=np.nan)
    return progress.assign(
        run_id=record["run_id"],
        **identity_columns(record, experiments),
        **_setting_columns(record["spec"]),
        stop_reason=record.get("result", {}).get("stop_reason"),
        **_host_columns(record),
        # Columns a file lacks are recorded so the breakdown can name them.
        missing_timers=",".join(c for c in PARTS if c not in progress.columns),
    )


def _setting_columns(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a run measured: its series, algorithm, env, schedule and resources."""
    res = spec["resources"]
    hp = spec.get("hyperparameters", {})
    return dict(
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
        budget_return_threshold=float(spec.get("budget", {}).get("return_threshold", math.nan)),
        budget_return_window=int(spec.get("budget", {}).get("return_window", 0)),
    )


def _host_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """Where and when a run ran (the tables say which runs shared a host)."""
    host = record.get("host", {})
    return dict(
        hostname=host.get("hostname"),
        cpu_model=host.get("cpu_model"),
        cpu_count=host.get("cpu_count"),
        host_gpus=len(host.get("gpus") or []) if "gpus" in host else None,
        started=record.get("started"),
        finished=record.get("finished"),
    )


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


def baseline_description(cfg: dict) -> str:
    return (f"{cfg['algorithm']} on {cfg['env']} with 1 env runner and no GPU "
            f"({cfg['num_envs_per_env_runner']} env(s)/runner, "
            f"{cfg['num_cpus_per_env_runner']} CPU(s)/runner, hyperparameters {cfg['hp']})")


def in_series(table: pd.DataFrame, row: pd.Series | dict) -> pd.Series:
    """Mask of the rows of ``table`` in ``row``'s series (:data:`BASELINE_KEYS`)."""
    mask = pd.Series(True, index=table.index)
    for k in BASELINE_KEYS:
        mask &= table[k] == row[k]
    return mask


def baseline_of(table: pd.DataFrame, row: pd.Series | dict) -> pd.Series | None:
    """The 1-runner, no-GPU, 1-node row of ``row``'s own series (same experiment too)."""
    base = table[in_series(table, row) & (table["workers"] == 1) & (table["gpu"] == 0)
                 & (table["nodes"] == 1) & np.isfinite(table["iter_time_s"])]
    return base.iloc[0] if len(base) else None
