"""Synthetic finished runs with known timings, for the scaling/cost/figure tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ddrl.training.progress import COLUMNS

HP = {"lr": 0.0003, "train_batch_size": 4000}


def amdahl_time(n: int, t1: float = 10.0, f: float = 0.1) -> float:
    return t1 * (f + (1 - f) / n)


def write_run(root: Path, *, algorithm="PPO", env="HumanoidBulletEnv-v0", seed=1, workers=1,
              gpus=0, times=(), steps_per_iter=4000, returns=None, drop=(), shares=(0.6, 0.3, 0.02),
              hp=None, started="2026-01-01T00:00:00+00:00", finished="2026-01-01T00:10:00+00:00",
              hostname="host-a", host_gpus=None, updates=None, tag="") -> Path:
    """A finished run folder: progress.csv with ``times`` as iteration times (and ``updates``
    gradient updates per iteration, if given), and run.json."""
    run_id = f"{algorithm.lower()}-{env}-r{workers}g{gpus}-s{seed}{tag}"
    run_dir = root / "runs" / run_id
    run_dir.mkdir(parents=True)
    times = np.asarray(times, float)
    k = len(times)
    returns = np.linspace(0, 100, k) if returns is None else np.asarray(returns, float)
    progress = pd.DataFrame({c: np.nan for c in COLUMNS}, index=range(k))
    progress["iteration"] = np.arange(1, k + 1)
    progress["env_steps_this_iter"] = steps_per_iter
    progress["env_steps"] = steps_per_iter * np.arange(1, k + 1)
    progress["episode_return_mean"] = returns
    progress["time_this_iter_s"] = times
    progress["time_total_s"] = np.cumsum(times)
    progress["sample_time_s"] = times * shares[0]
    progress["learn_time_s"] = times * shares[1]
    progress["sync_weights_time_s"] = times * shares[2]
    progress["env_steps_per_s"] = steps_per_iter / times
    progress["session"] = 0
    if updates is not None:
        progress["gradient_updates"] = updates
        progress["gradient_updates_total"] = np.cumsum(np.broadcast_to(updates, (k,)))
    progress = progress.drop(columns=list(drop))
    progress.to_csv(run_dir / "progress.csv", index=False)
    record = {
        "run_id": run_id, "status": "complete",
        "spec": {"algorithm": algorithm, "env": env, "seed": seed,
                 "resources": {"num_env_runners": workers, "num_envs_per_env_runner": 1,
                               "num_cpus_per_env_runner": 1, "num_gpus_per_learner": gpus,
                               "nodes": 1},
                 "budget": {"env_steps": steps_per_iter * k}, "hyperparameters": hp or HP},
        "started": started, "finished": finished,
        "host": {"hostname": hostname, "cpu_model": "Test CPU", "cpu_count": 2,
                 "gpus": ["Test GPU"] * gpus if host_gpus is None else host_gpus},
        "versions": {"ray": "2.60.0"}, "git": {"commit": "abc", "dirty": False},
    }
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def amdahl_study(root: Path, workers=(1, 2, 4, 8), gpu_factor=None, warmup_time=100.0,
                 iters=9, noise=0.01, seed=0, **kw) -> list[Path]:
    """Runs whose steady iteration time follows Amdahl (f=0.1, T1=10 s), 1 warm-up iteration."""
    rng = np.random.default_rng(seed)
    dirs = []
    # Sequential, non-overlapping time spans: they ran alone.
    for i, n in enumerate(workers):
        for gpus in (0, 1) if gpu_factor else (0,):
            base = amdahl_time(n) * (gpu_factor if gpus else 1.0)
            times = [warmup_time] + list(base * (1 + noise * rng.uniform(-1, 1, iters)))
            start = f"2026-01-01T{i:02d}:{30 * gpus:02d}:00+00:00"
            end = f"2026-01-01T{i:02d}:{30 * gpus + 20:02d}:00+00:00"
            dirs.append(write_run(root, workers=n, gpus=gpus, times=times, started=start,
                                  finished=end, **kw))
    return dirs
