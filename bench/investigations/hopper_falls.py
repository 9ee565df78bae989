"""How often a locomotion run sits in a dive-and-fall policy: evaluations whose episodes end
in a fall within a few dozen steps, after the warm-up, per run and framework.

Hopper's SAC runs (both frameworks) go through a phase of standing still (1000-step
episodes at a return of ~800-900, the alive bonus alone) and one of diving forward and
falling (~60-120 steps, return ~150-250) before they hop; some stay in the dive for most of
the budget. This counts, per run of a bench/learning_locomotion.py output folder, the
evaluations after ``--after`` env steps whose mean episode length is below ``--short``
steps, the longest stretch of consecutive such evaluations in env steps, and how well the
gait is kept once found (the mean return after the first evaluation at ``--threshold``)::

    PYTHONPATH=src:bench python bench/investigations/hopper_falls.py \\
        --out /work/locomotion-runs --config config/bench-locomotion.yaml \\
        --algorithm SAC --env HopperBulletEnv-v0
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import learning_locomotion as ll  # noqa: E402
from time_to_return import cell_specs  # noqa: E402


def falls(curve: Sequence[Mapping[str, Any]], after: int, short: float) -> dict[str, Any]:
    """Falling evaluations of one run's curve (rows with env_steps, return_mean, length_mean):
    how many after ``after`` env steps, of how many, and the longest consecutive stretch
    (env steps from its first to one evaluation past its last; 0 if none)."""
    rows = sorted((r for r in curve if int(r["env_steps"]) > after),
                  key=lambda r: int(r["env_steps"]))
    steps = [int(r["env_steps"]) for r in rows]
    falling = [float(r["length_mean"]) < short for r in rows]
    interval = (steps[-1] - steps[0]) / (len(steps) - 1) if len(steps) > 1 else 0
    longest, start = 0.0, None
    for i, f in enumerate(falling):
        if f and start is None:
            start = i
        if start is not None and (not f or i == len(falling) - 1):
            end = i if not f else i + 1
            longest = max(longest, (steps[end - 1] - steps[start]) + interval)
            start = None
    return {"falling": sum(falling), "evaluations": len(rows), "longest_steps": int(longest)}


def held(curve: Sequence[Mapping[str, Any]], threshold: float) -> tuple[int | None, float]:
    """Env steps of the first evaluation at or above ``threshold`` (None if never) and the
    mean return of the evaluations after it (NaN if none): how well a gait, once found, is
    kept."""
    rows = sorted(curve, key=lambda r: int(r["env_steps"]))
    for i, r in enumerate(rows):
        if float(r["return_mean"]) >= threshold:
            later = [float(x["return_mean"]) for x in rows[i + 1:]]
            return int(r["env_steps"]), (sum(later) / len(later) if later else float("nan"))
    return None, float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="a folder of <framework>/<run_id>/curve.csv")
    p.add_argument("--config", default=str(ll.CONFIG))
    p.add_argument("--algorithm", default="SAC")
    p.add_argument("--env", default="HopperBulletEnv-v0")
    p.add_argument("--after", type=int, default=20_000, help="ignore evaluations up to here")
    p.add_argument("--short", type=float, default=150.0,
                   help="an evaluation falls when its mean episode length is below this")
    p.add_argument("--threshold", type=float, default=1500.0,
                   help="a gait is found at the first evaluation at or above this return")
    args = p.parse_args(argv)
    runs = cell_specs(args.config, args.algorithm, args.env)
    rows = ll.read_curves(Path(args.out), runs) + ll.read_shared_sb3(Path(args.out), runs)
    print("| framework | seed | return / mean episode length at each evaluation | falling "
          "evaluations | longest falling stretch (env steps) | first at the threshold (env steps) "
          "| mean return after it |")
    print("|---|---|---|---|---|---|---|")
    by_framework_then_seed = sorted(ll.cell_runs(rows).items(),
                                    key=lambda kv: (kv[0][3], kv[0][2]))
    for (_, _, seed, fw), curve in by_framework_then_seed:
        curve = sorted(curve, key=lambda r: int(r["env_steps"]))
        f = falls(curve, args.after, args.short)
        points = " ".join(f"{float(r['return_mean']):.0f}/{float(r['length_mean']):.0f}"
                          for r in curve)
        found, after = held(curve, args.threshold)
        print(f"| {fw} | {seed} | {points} | {f['falling']} of {f['evaluations']} | "
              f"{f['longest_steps']:,} | {'never' if found is None else f'{found:,}'} | "
              f"{'-' if math.isnan(after) else f'{after:.0f}'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
