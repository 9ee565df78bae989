"""Reading run outputs back: progress tables joined with each run's spec.

Every table and figure that aggregates runs groups them by :func:`identity_columns`: the
experiment and the configuration identity (everything in the run id's hash but the seed), so
only runs that differ in nothing but their seed are counted as seeds of one configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from ddrl.errors import DdrlError
from ddrl.runs import config_identity, read_run, resources_legend

# What makes runs seeds of one configuration (see identity_columns).
IDENTITY_KEYS = ["experiment", "config_id"]


def identity_columns(record: Mapping, experiments: Mapping[str, str] | None = None) -> dict[str, str]:
    """A finished run's experiment (from ``experiments``, run id -> name; empty when not
    given) and configuration identity (:func:`ddrl.runs.config_identity` of its spec)."""
    return {"experiment": (experiments or {}).get(record["run_id"], ""),
            "config_id": config_identity(record["spec"])}


def load_progress(run_dirs: Iterable[str | Path],
                  experiments: Mapping[str, str] | None = None) -> pd.DataFrame:
    """All runs' progress rows in one table, with run id, experiment (from ``experiments``,
    run id -> name; empty when not given), configuration identity (``config_id``),
    algorithm, env, seed and resources."""
    frames = []
    for run_dir in run_dirs:
        record, progress = read_run(run_dir)
        spec = record["spec"]
        res = spec["resources"]
        progress = progress.assign(
            run_id=record["run_id"],
            **identity_columns(record, experiments),
            algorithm=spec["algorithm"],
            env=spec["env"],
            seed=spec["seed"],
            num_env_runners=res["num_env_runners"],
            num_envs_per_env_runner=res["num_envs_per_env_runner"],
            num_cpus_per_env_runner=res["num_cpus_per_env_runner"],
            num_gpus_per_learner=res["num_gpus_per_learner"],
            resources=resources_legend(res),
        )
        frames.append(progress)
    if not frames:
        raise DdrlError("no runs to read")
    return pd.concat(frames, ignore_index=True)
