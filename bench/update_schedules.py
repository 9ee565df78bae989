"""TD3 (or SAC) on this machine with 1 and 2 env runners under both off-policy update
schedules: the thesis's ``rllib1_round_robin`` and ddrl's ``fixed_ratio``.

For each schedule and runner count it times ``--iters`` training iterations of
``timesteps_per_iteration`` env steps after the warm-up (``learning starts`` plus one
untimed iteration), alternating the four settings within each of ``--rounds`` rounds so
machine noise hits all of them. It prints seconds per iteration, env steps/s, updates/s
and updates per iteration, then per schedule the speedup from the smallest to the largest
runner count. In round-robin mode the iteration-time speedup splits into
"fewer updates" (updates per iteration at 1 runner / at n) x "per update" (the rest). The
last line of output is one JSON object.

Usage::

    .venv/bin/python bench/update_schedules.py                    # TD3, Humanoid, ~6 min
    .venv/bin/python bench/update_schedules.py --algo SAC --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

SCHEDULES = ("rllib1_round_robin", "fixed_ratio")


def main(argv: list[str] | None = None) -> int:
    from harness.sampling import run_spec
    from harness.throughput import report_json, time_training

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algo", choices=["TD3", "SAC"], default="TD3")
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2])
    p.add_argument("--iters", type=int, default=2, help="timed iterations per measurement")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hp", default='{"rollout_fragment_length": 1, '
                                   '"num_steps_sampled_before_learning_starts": 1000}',
                   help="hyperparameters as JSON (both schedules; default: the thesis's "
                        "fragment of 1 step per runner per round)")
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    if min(args.runners) < 1:
        p.error(f"--runners must be >= 1, got {args.runners}")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    hp = json.loads(args.hp)

    rows = []
    for r in range(args.rounds):
        for schedule in SCHEDULES:
            for n in args.runners:
                spec = run_spec(args.algo, args.env, args.seed,
                                {**hp, "update_schedule": schedule}, {"num_env_runners": n})
                per_iter = spec.hyperparameters["timesteps_per_iteration"]
                warmup = spec.hyperparameters["num_steps_sampled_before_learning_starts"] + per_iter
                row = time_training(spec, warmup_steps=warmup, timed_steps=per_iter * args.iters)
                row.update(round=r, runners=n, schedule=schedule,
                           updates_per_iter=row["updates"] / row["iterations"])
                rows.append(row)
                print(f"round {r} {schedule:18s} runners={n}: {row['seconds_per_iter']:6.2f} s/iter, "
                      f"{row['steps_per_s']:6.1f} env steps/s, {row['updates_per_s']:6.1f} updates/s, "
                      f"{row['updates_per_iter']:6.0f} updates/iter", flush=True)

    def median(schedule: str, n: int, key: str) -> float:
        return statistics.median(x[key] for x in rows if x["schedule"] == schedule and x["runners"] == n)

    lo, hi = min(args.runners), max(args.runners)
    summary = {}
    for schedule in SCHEDULES:
        s = {n: {k: median(schedule, n, k) for k in
                 ("seconds_per_iter", "steps_per_s", "updates_per_s", "updates_per_iter")}
             for n in args.runners}
        iter_speedup = s[lo]["seconds_per_iter"] / s[hi]["seconds_per_iter"]
        fewer = s[lo]["updates_per_iter"] / s[hi]["updates_per_iter"]
        summary[schedule] = {"by_runners": s, "iteration_time_speedup": iter_speedup,
                             "env_steps_per_s_speedup": s[hi]["steps_per_s"] / s[lo]["steps_per_s"],
                             "fewer_updates": fewer, "per_update_speedup": iter_speedup / fewer}
    print(f"\n{args.algo} {args.env}, {os.cpu_count()} CPUs, median over {args.rounds} round(s), "
          f"{lo} -> {hi} runners:")
    for schedule, s in summary.items():
        print(f"  {schedule:18s} iteration-time speedup {s['iteration_time_speedup']:.2f} "
              f"= fewer updates {s['fewer_updates']:.2f} x per update {s['per_update_speedup']:.2f}; "
              f"env steps/s speedup {s['env_steps_per_s_speedup']:.2f}")
    report_json({"args": vars(args), "rows": rows, "summary": summary}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
