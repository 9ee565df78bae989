"""Learning parity: does a speed default change returns at the same env steps?

Trains the same algorithm, env, seeds and budget twice per seed: with ``--hp-a`` and with
``--hp-b`` (JSON overrides of the registry defaults), then evaluates each final policy
deterministically on the same fresh episodes (``ddrl.agents.evaluate``). Prints per-seed returns,
the mean per variant, and the wall time per variant. The default compares ddrl's SAC
(``TransitionReplayBuffer``, 64-step fragments: the shipped default) with RLlib's own SAC
training step (``EpisodeReplayBuffer``, 1-step fragments: the old default) on Pendulum-v1.

Usage::

    .venv/bin/python bench/learning_parity.py                     # SAC, 2 seeds, ~15 min
    .venv/bin/python bench/learning_parity.py --seeds 1 --steps 6000
    .venv/bin/python bench/learning_parity.py --algorithm TD3 \\
        --hp-a '{"replay_buffer_type": "TransitionReplayBuffer"}' \\
        --hp-b '{"replay_buffer_type": "EpisodeReplayBuffer", "rollout_fragment_length": 1}'

The last line of output is one JSON object with every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

COMMON = {"gamma": 0.98, "num_steps_sampled_before_learning_starts": 1000,
          "timesteps_per_iteration": 1000}
SAC_FAST = {"replay_buffer_type": "TransitionReplayBuffer", "rollout_fragment_length": 64}
SAC_RLLIB = {"replay_buffer_type": "EpisodeReplayBuffer", "rollout_fragment_length": 1}


def train_and_evaluate(algorithm: str, env: str, seed: int, steps: int, hp: dict,
                       episodes: int, workdir: str) -> dict:
    """One production training run (``ddrl.training.train.train_run``) and its evaluation."""
    import dataclasses

    from ddrl.agents.evaluate import evaluate_run
    from harness.sampling import run_spec
    from ddrl.training.train import train_run

    spec = dataclasses.replace(run_spec(algorithm, env, seed, hp), budget={"env_steps": steps})
    run_dir = os.path.join(workdir, spec.run_id)
    t0 = time.perf_counter()
    train_run(spec, run_dir, print_fn=lambda line: None)
    seconds = time.perf_counter() - t0
    record = evaluate_run(spec, run_dir, episodes)
    return {"seed": seed, "run_id": spec.run_id, "env_steps": record["checkpoint"]["env_steps"],
            "train_s": seconds, "mean_return": record["return_mean"]}


def main(argv: list[str] | None = None) -> int:
    from harness.throughput import report_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithm", default="SAC")
    p.add_argument("--env", default="Pendulum-v1")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--hp", default=json.dumps({**COMMON, "fcnet_hiddens": [64, 64]}),
                   help="hyperparameters shared by both variants (JSON)")
    p.add_argument("--hp-a", default=json.dumps(SAC_FAST), help="variant A overrides (JSON)")
    p.add_argument("--hp-b", default=json.dumps(SAC_RLLIB), help="variant B overrides (JSON)")
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    shared = json.loads(args.hp)
    variants = {"A": {**shared, **json.loads(args.hp_a)}, "B": {**shared, **json.loads(args.hp_b)}}
    rows = []
    workdir = tempfile.mkdtemp(prefix="ddrl-parity-")
    for seed in args.seeds:
        for name, hp in variants.items():
            row = {"variant": name, **train_and_evaluate(args.algorithm, args.env, seed,
                                                         args.steps, hp, args.episodes, workdir)}
            rows.append(row)
            print(f"{name} seed {seed}: return {row['mean_return']:8.1f} after "
                  f"{row['env_steps']} env steps, trained in {row['train_s']:.0f} s", flush=True)
    summary = {}
    for name, hp in variants.items():
        mine = [r for r in rows if r["variant"] == name]
        summary[name] = {"hyperparameters": hp,
                         "mean_return": statistics.mean(r["mean_return"] for r in mine),
                         "train_s": statistics.mean(r["train_s"] for r in mine)}
        print(f"{name}: mean return {summary[name]['mean_return']:.1f} over seeds "
              f"{args.seeds}, {summary[name]['train_s']:.0f} s per run; {json.dumps(hp)}")
    out = {"args": vars(args), "rows": rows, "summary": summary}
    report_json(out, args.json)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
