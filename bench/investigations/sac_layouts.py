"""Where ddrl's SAC learner gets its CPU: process layouts and learner threads, against SB3.

Variants (HumanoidBulletEnv-v0, 1 update per env step, [256, 256], batch 256, as in
``bench/peers.py``; measurements alternate within each round):

- ``ddrl-r1-1t``: the default, 1 remote env runner, 1 learner thread;
- ``ddrl-r0-2omp``: the env runner in the learner's process (``num_env_runners: 0``, as SB3
  runs), 2 torch (OpenMP) threads; the twin-critic threads are switched off so the two
  threads are torch's own;
- ``ddrl-r0-1t``: the same with 1 thread;
- ``sb3-sac``: Stable-Baselines3 SAC at its defaults (torch's 2 threads).

Usage (``bench`` extra installed)::

    PYTHONPATH=src:bench python bench/investigations/sac_layouts.py --rounds 2 --steps 800
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

# Run from bench/investigations/: harness/ and the maintained benchmarks live one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def time_ddrl(runners: int, threads: int, args: argparse.Namespace) -> float:
    import ddrl.algorithms.sac.sac as sac_module
    from harness.sampling import run_spec
    from harness.throughput import time_training

    from ddrl.training.runtime import LEARNER_THREADS_ENV

    limit = sac_module.limit_learner_threads
    # Twin-critic threads off: with 2 threads, torch's OpenMP threads share every op.
    sac_module.limit_learner_threads = lambda learner, twin_split=False: limit(learner)
    try:
        with mock.patch.dict(os.environ, {LEARNER_THREADS_ENV: str(threads)}):
            spec = run_spec("SAC", args.env, args.seed,
                            {"train_batch_size": 256, "updates_per_step": 1.0,
                             "num_steps_sampled_before_learning_starts": args.learning_starts,
                             "fcnet_hiddens": [256, 256]},
                            {"num_env_runners": runners, "num_envs_per_env_runner": 1})
            return time_training(spec, args.learning_starts + 256, args.steps,
                                 num_cpus=2)["steps_per_s"]
    finally:
        sac_module.limit_learner_threads = limit

def main(argv: list[str] | None = None) -> int:
    import peers

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--steps", type=int, default=800, help="timed env steps per measurement")
    p.add_argument("--learning-starts", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sb3_args = SimpleNamespace(env=args.env, seed=args.seed, steps=args.steps,
                               learning_starts=args.learning_starts)
    variants = {
        "ddrl-r1-1t": lambda: time_ddrl(1, 1, args),
        "ddrl-r0-2omp": lambda: time_ddrl(0, 2, args),
        "ddrl-r0-1t": lambda: time_ddrl(0, 1, args),
        "sb3-sac": lambda: peers.time_sb3("sb3-sac", sb3_args)["steps_per_s"],
    }
    rows: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(args.rounds):
        for name, measure in variants.items():
            rows[name].append(measure())
            print(f"round {r} {name:14s} {rows[name][-1]:7.1f} env steps/s", flush=True)
    sb3 = statistics.median(rows["sb3-sac"])
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"{name:14s} median {median:7.1f} env steps/s  / SB3 {median / sb3:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
