"""Scaling on this machine: PPO env steps/s with 1 and 2 env runners, and parallel efficiency.

Trains ddrl's PPO (registry defaults unless ``--hp`` overrides them; HumanoidBulletEnv-v0 by
default) with each ``--runners`` count, alternating within each ``--rounds`` round so machine
noise hits every setting, and times ``--iters`` training iterations after one untimed
iteration (actor start-up). Prints env steps/s per setting, the speedup over the smallest
runner count, and parallel efficiency = speedup / (runners ratio). Target on a 2-core
machine: efficiency >= 0.8 for 2 runners. The last line of output is one JSON object.

What a PPO iteration on n runners does: the runners sample ``train_batch_size / n`` steps
each in parallel, then the learner (in the driver process) runs the SGD epochs alone. Only
sampling scales, so efficiency is bounded by the learner's share of the iteration (Amdahl);
the per-iteration timers printed with each measurement show that share.

Usage::

    .venv/bin/python bench/scaling.py                         # 1 vs 2 runners, ~3 min
    .venv/bin/python bench/scaling.py --rounds 3 --iters 4
    .venv/bin/python bench/scaling.py --hp '{"num_epochs": 30}'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys


def main(argv: list[str] | None = None) -> int:
    from harness.throughput import report_json

    from harness.sampling import run_spec
    from harness.throughput import time_training

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2])
    p.add_argument("--envs-per-runner", type=int, default=1)
    p.add_argument("--iters", type=int, default=3, help="timed iterations per measurement")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hp", default="{}", help="PPO hyperparameters as JSON")
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    if min(args.runners) < 1:
        p.error(f"--runners must be >= 1, got {args.runners}")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    rows = []
    for r in range(args.rounds):
        for n in args.runners:
            spec = run_spec("PPO", args.env, args.seed, json.loads(args.hp),
                            {"num_env_runners": n, "num_envs_per_env_runner": args.envs_per_runner})
            batch = spec.hyperparameters["train_batch_size"]
            row = time_training(spec, warmup_steps=batch, timed_steps=batch * args.iters)
            row.update(round=r, runners=n)
            rows.append(row)
            t = row["timers_s"]
            print(f"round {r} runners={n}: {row['steps_per_s']:7.1f} env steps/s "
                  f"({row['env_steps']} steps in {row['seconds']:.1f} s); last iteration: "
                  f"sampling {t.get('env_runner_sampling_timer', float('nan')):.2f} s, "
                  f"learner {t.get('learner_update_timer', float('nan')):.2f} s", flush=True)
    median = {n: statistics.median(x["steps_per_s"] for x in rows if x["runners"] == n)
              for n in args.runners}
    base = min(args.runners)
    summary = {n: {"steps_per_s": v, "speedup": v / median[base],
                   "efficiency": (v / median[base]) / (n / base)} for n, v in median.items()}
    print(f"\nPPO {args.env}, {os.cpu_count()} CPUs, median over {args.rounds} round(s):")
    for n, s in summary.items():
        print(f"  runners={n}: {s['steps_per_s']:7.1f} env steps/s, speedup {s['speedup']:.2f}, "
              f"efficiency {s['efficiency']:.2f}")
    out = {"args": vars(args), "rows": rows, "summary": summary}
    report_json(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
