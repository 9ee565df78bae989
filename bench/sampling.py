"""Sampling overhead: env steps/s of ddrl's PPO env runner against a plain Python loop.

For each ``--envs`` setting (num_envs_per_env_runner; default 1 2 4 8) it builds ddrl's PPO
(registry defaults, one remote env runner, HumanoidBulletEnv-v0 by default) and, inside
that env runner's process (``foreach_env_runner``), times

- **ddrl**: ``env_runner.sample()`` called as training calls it (``rollout_fragment_length``
  x envs steps per call; 4000 with the defaults), learning excluded;
- **plain**: a plain loop (harness.sampling.time_plain_loop) stepping one env made by
  ``ddrl.envs.make_env`` with the same RLModule (same network and weights), sampling its
  actions from the same exploration distribution, same seed, same terminations (the env's
  own termination and TimeLimit).

Both run in the same process, so they share torch's thread setting (one intra-op thread in a
Ray worker) and CPU. It prints ratio = ddrl / plain for each setting, per ``--rounds`` round
(plain and ddrl alternate) and the median; target >= 0.85 at the best setting.

Usage::

    .venv/bin/python bench/sampling.py                          # 1 2 4 8 envs, ~2-3 min
    .venv/bin/python bench/sampling.py --envs 1 8 --rounds 3 --steps 8000
    .venv/bin/python bench/sampling.py --envs 1 --profile 30    # + cProfile of sample()
    .venv/bin/python bench/sampling.py --hp '{"rollout_fragment_length": 500}'

The last line of output is one JSON object with every measurement (``--json FILE`` writes
it to a file too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def measure(env: str, num_envs: int, args) -> list[dict]:
    from ddrl.training.runtime import ray_session
    from harness.sampling import run_spec, time_env_runner, time_plain_loop
    from ddrl.training.train import build_algorithm_config

    spec = run_spec("PPO", env, args.seed, json.loads(args.hp),
                    resources={"num_env_runners": 1, "num_envs_per_env_runner": num_envs})
    steps, warmup, seed, top = args.steps, args.warmup, args.seed, args.profile
    rows = []
    with ray_session(num_cpus=spec.cpus):
        t0 = time.perf_counter()
        algo = build_algorithm_config(spec).build_algo()
        build_s = time.perf_counter() - t0
        group = algo.env_runner_group
        try:
            for r in range(args.rounds):
                plain = group.foreach_env_runner(
                    lambda runner: time_plain_loop(runner.module, env, steps, seed, warmup),
                    local_env_runner=False)[0]
                ddrl = group.foreach_env_runner(
                    lambda runner: time_env_runner(runner, steps, warmup),
                    local_env_runner=False)[0]
                for name, row in (("plain", plain), ("ddrl", ddrl)):
                    row.update(kind=name, round=r, envs_per_runner=num_envs,
                               build_s=round(build_s, 1))
                    rows.append(row)
                print(f"envs/runner {num_envs}, round {r}: ddrl {ddrl['steps_per_s']:7.1f} "
                      f"steps/s ({ddrl['env_steps']} steps, {ddrl['calls']} sample() calls, "
                      f"mean episode {ddrl['mean_episode_len'] or 0:.1f}), plain "
                      f"{plain['steps_per_s']:7.1f} steps/s (mean episode "
                      f"{plain['mean_episode_len'] or 0:.1f}); ratio "
                      f"{ddrl['steps_per_s'] / plain['steps_per_s']:.3f}; torch threads "
                      f"{ddrl['torch_threads']}; per CPU second: ddrl "
                      f"{ddrl['steps_per_cpu_s']:.1f}, plain {plain['steps_per_cpu_s']:.1f}, "
                      f"ratio {ddrl['steps_per_cpu_s'] / plain['steps_per_cpu_s']:.3f}",
                      flush=True)
            if top:  # an extra, profiled measurement: cProfile slows it, so it is not a row
                prof = group.foreach_env_runner(
                    lambda runner: time_env_runner(runner, steps, 0, profile_top=top),
                    local_env_runner=False)[0]
                print(f"\ncProfile of env_runner.sample(), {num_envs} env(s) per runner "
                      f"({prof['steps_per_s']:.1f} steps/s under the profiler):\n"
                      + prof["profile"], flush=True)
        finally:
            algo.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    from harness.throughput import report_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4, 8],
                   help="num_envs_per_env_runner settings (default: 1 2 4 8)")
    p.add_argument("--steps", type=int, default=4000,
                   help="timed env steps per measurement (whole sample() calls: at least this)")
    p.add_argument("--warmup", type=int, default=200, help="untimed env steps first")
    p.add_argument("--rounds", type=int, default=1, help="plain/ddrl pairs per setting")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hp", default="{}",
                   help="PPO hyperparameters over the registry defaults, as JSON")
    p.add_argument("--profile", type=int, default=0, metavar="ROWS",
                   help="after the rounds, cProfile one more sample() measurement per setting "
                        "and print this many rows (by cumulative time)")
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    rows = []
    for k in args.envs:
        rows += measure(args.env, k, args)
    summary = []
    for k in args.envs:
        def med(kind, key):
            return statistics.median(x[key] for x in rows
                                     if x["envs_per_runner"] == k and x["kind"] == kind)

        summary.append({
            "envs_per_runner": k,
            "ddrl_steps_per_s": round(med("ddrl", "steps_per_s"), 1),
            "plain_steps_per_s": round(med("plain", "steps_per_s"), 1),
            "ratio": round(med("ddrl", "steps_per_s") / med("plain", "steps_per_s"), 3),
            "ddrl_steps_per_cpu_s": round(med("ddrl", "steps_per_cpu_s"), 1),
            "plain_steps_per_cpu_s": round(med("plain", "steps_per_cpu_s"), 1),
            "ratio_cpu": round(med("ddrl", "steps_per_cpu_s") / med("plain", "steps_per_cpu_s"), 3),
            # Median of each round's ratio: plain and ddrl ran back to back, so drifting load
            # from other processes cancels better than in the ratio of medians.
            "ratio_paired": round(statistics.median(
                d["steps_per_s"] / q["steps_per_s"]
                for d in rows if d["envs_per_runner"] == k and d["kind"] == "ddrl"
                for q in rows if q["envs_per_runner"] == k and q["kind"] == "plain"
                and q["round"] == d["round"]), 3),
        })
    best = max(summary, key=lambda s: s["ratio"])
    print(f"\nPPO sampling, {args.env}, 1 env runner, {os.cpu_count()} CPUs; median env "
          f"steps/s over {args.rounds} round(s):")
    print("  envs/runner      ddrl     plain   ratio  paired | per CPU s:  ddrl     plain   ratio")
    for s in summary:
        print(f"  {s['envs_per_runner']:11d} {s['ddrl_steps_per_s']:9.1f} "
              f"{s['plain_steps_per_s']:9.1f} {s['ratio']:7.3f} {s['ratio_paired']:7.3f} |        "
              f"{s['ddrl_steps_per_cpu_s']:9.1f} {s['plain_steps_per_cpu_s']:9.1f} "
              f"{s['ratio_cpu']:7.3f}")
    print("(ratio: of the median wall-clock steps/s, the target's measure; paired: median of "
          "the rounds' ratios; per CPU s: steps per CPU second of the sampling thread)")
    print(f"best: {best['envs_per_runner']} env(s) per runner, ratio {best['ratio']:.3f} "
          f"(target >= {args.target}: {'met' if best['ratio'] >= args.target else 'MISSED'})")
    result = {"benchmark": "sampling", "env": args.env, "cpus": os.cpu_count(),
              "args": vars(args), "summary": summary, "best": best,
              "target": args.target, "met": best["ratio"] >= args.target, "rows": rows}
    report_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
