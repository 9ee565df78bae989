"""Reading run outputs back: progress tables joined with each run's spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from ddrl.errors import DdrlError


def read_run(run_dir: str | Path) -> tuple[dict, pd.DataFrame]:
    """``(run.json, progress.csv)`` of one finished run."""
    run_dir = Path(run_dir)
    try:
        record = json.loads((run_dir / "run.json").read_text())
        progress = pd.read_csv(run_dir / "progress.csv")
    except FileNotFoundError as err:
        raise DdrlError(f"run {run_dir.name} is not finished: {Path(err.filename).name} is missing") from None
    return record, progress


def load_progress(run_dirs: Iterable[str | Path],
                  experiments: Mapping[str, str] | None = None) -> pd.DataFrame:
    """All runs' progress rows in one table, with run id, experiment (from ``experiments``,
    run id -> name; empty when not given), algorithm, env, seed and resources."""
    frames = []
    for run_dir in run_dirs:
        record, progress = read_run(run_dir)
        spec = record["spec"]
        res = spec["resources"]
        progress = progress.assign(
            run_id=record["run_id"],
            experiment=(experiments or {}).get(record["run_id"], ""),
            algorithm=spec["algorithm"],
            env=spec["env"],
            seed=spec["seed"],
            num_env_runners=res["num_env_runners"],
            num_envs_per_env_runner=res["num_envs_per_env_runner"],
            num_cpus_per_env_runner=res["num_cpus_per_env_runner"],
            num_gpus_per_learner=res["num_gpus_per_learner"],
            resources=_resource_label(res),
        )
        frames.append(progress)
    if not frames:
        raise DdrlError("no runs to read")
    return pd.concat(frames, ignore_index=True)


def _resource_label(res: dict) -> str:
    gpu = f", {res['num_gpus_per_learner']} GPU" if res["num_gpus_per_learner"] else ""
    envs = f"x{res['num_envs_per_env_runner']} envs" if res["num_envs_per_env_runner"] > 1 else ""
    return f"{res['num_env_runners']} runner{'s' if res['num_env_runners'] > 1 else ''}{envs}{gpu}"
