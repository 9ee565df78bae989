"""Time to a return: ddrl and Stable-Baselines3, each at its defaults, side by side.

The number a researcher cares about joins speed and sample efficiency: the wall-clock
seconds (and env steps) until a run's deterministic evaluation first reaches a return.

``run`` trains, for every seed of one cell (algorithm, task) of a study config, ddrl's run and
SB3's run of the same spec AT THE SAME TIME, one process each with one torch thread
(bench/learning_locomotion.py's ``run``, so both use its one evaluation protocol), so the
machine's noise falls on both alike. ``report`` reads the curves (of this benchmark or of any
bench/learning_locomotion.py output folder) and gives, per seed and framework, the env steps
and training seconds at the first evaluation at or above the threshold, the curve mean (area
under the return curve over its env steps) and the final return; then the median over seeds
of SB3's seconds over ddrl's (> 1: ddrl is faster), with a bootstrap interval.

Commands::

    python bench/time_to_return.py run --algorithm SAC --env HopperBulletEnv-v0 --out DIR
    python bench/time_to_return.py report --out DIR --threshold 1500 --md table.md

``train_s`` excludes evaluation time (both frameworks); a seed that never reaches the
threshold counts as not reached, and its time as the budget's (the ratio is then a bound).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import learning_locomotion as ll  # noqa: E402

# Thresholds chosen from per-step SB3's curves within 100k env steps (docs/img/
# bench-locomotion-curves.csv): every SB3 seed crosses them before its budget ends.
THRESHOLDS = {"HopperBulletEnv-v0": 1500.0, "HalfCheetahBulletEnv-v0": 1000.0,
              "InvertedPendulumBulletEnv-v0": 900.0}
COLUMNS = ["algorithm", "env", "seed", "framework", "run_id", "threshold", "reached",
           "env_steps_to_return", "seconds_to_return", "final_env_steps", "final_return",
           "final_train_s", "curve_mean"]


def cell_specs(config: str | Path, algorithm: str, env: str,
               seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The study's learning runs of one (algorithm, env), optionally only ``seeds``."""
    runs = {rid: s for rid, s in ll.study_runs(config).items()
            if s.algorithm == algorithm and s.env == env
            and (not seeds or s.seed in set(seeds))}
    if not runs:
        raise SystemExit(f"{config}: no learning run of {algorithm} on {env}"
                         + (f" with seeds {list(seeds)}" if seeds else ""))
    return runs


def run_side_by_side(config: str | Path, run_ids: Iterable[str], out: Path,
                     extra: Sequence[str] = (), print_fn=print) -> list[int]:
    """For each run id in turn: ddrl and SB3 trained at once (two processes). Returns the exit
    codes; each process's log is ``<out>/<framework>-<run_id>.log``."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "DDRL_LEARNER_THREADS": "1"}
    codes = []
    for rid in run_ids:
        procs = []
        for fw in ll.FRAMEWORKS:
            log = (out / f"{fw}-{rid}.log").open("w")
            cmd = [sys.executable, str(BENCH / "learning_locomotion.py"), "run", "--config",
                   str(config), "--framework", fw, "--run", rid, "--out", str(out), *extra]
            procs.append((fw, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                               env=env), log))
        t0 = time.perf_counter()
        for fw, proc, log in procs:
            codes.append(proc.wait())
            log.close()
            print_fn(f"{fw} {rid} rc={proc.returncode} after {time.perf_counter() - t0:.0f}s")
    return codes


def seed_rows(rows: Iterable[Mapping[str, Any]], thresholds: Mapping[str, float],
              default_threshold: float | None = None) -> list[dict[str, Any]]:
    """One row per (algorithm, env, seed, framework): time to the threshold, curve mean, final."""
    from ddrl.analysis.seed_stats import curve_mean, time_to_return

    out = []
    for (algo, env, seed, fw), rs in sorted(ll.cell_runs(rows).items()):
        threshold = thresholds.get(env, default_threshold)
        if threshold is None:
            raise SystemExit(f"no return threshold for {env}: pass --threshold")
        rs = sorted(rs, key=lambda r: int(r["env_steps"]))
        steps = [int(r["env_steps"]) for r in rs]
        secs = [float(r["train_s"]) for r in rs]
        rets = [float(r["return_mean"]) for r in rs]
        hit = time_to_return(steps, secs, rets, threshold)
        out.append({"algorithm": algo, "env": env, "seed": seed, "framework": fw,
                    "run_id": rs[-1]["run_id"], "threshold": threshold, "reached": hit.reached,
                    "env_steps_to_return": hit.env_steps, "seconds_to_return": hit.seconds,
                    "final_env_steps": steps[-1], "final_return": rets[-1],
                    "final_train_s": secs[-1], "curve_mean": curve_mean(steps, rets)})
    return out


def speedups(per_seed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (algorithm, env): median over seeds of the seconds to the threshold of each
    framework, their ratio SB3/ddrl (> 1: ddrl reaches it sooner), a 95% bootstrap interval of
    the ratio of means, seeds reached, and the curve means. An unreached seed counts with its
    final training seconds (so the ratio is a bound, marked ``censored``)."""
    from ddrl.analysis.seed_stats import bootstrap_ratio_interval, interquartile_mean

    cells: dict[tuple, dict[str, list]] = {}
    for r in per_seed:
        cells.setdefault((r["algorithm"], r["env"]), {}).setdefault(r["framework"], []).append(r)
    out = []
    for (algo, env), fws in sorted(cells.items()):
        if not {"ddrl", "sb3"} <= set(fws):
            continue
        secs = {fw: [r["seconds_to_return"] if r["reached"] else r["final_train_s"]
                     for r in fws[fw]] for fw in ("ddrl", "sb3")}
        med = {fw: float(np.median(v)) for fw, v in secs.items()}
        lo, hi = bootstrap_ratio_interval(secs["sb3"], secs["ddrl"])
        out.append({"algorithm": algo, "env": env, "threshold": fws["ddrl"][0]["threshold"],
                    "ddrl_median_s": med["ddrl"], "sb3_median_s": med["sb3"],
                    "speedup": med["sb3"] / med["ddrl"] if med["ddrl"] > 0 else math.nan,
                    "speedup_ci": (lo, hi),
                    "ddrl_reached": sum(r["reached"] for r in fws["ddrl"]),
                    "sb3_reached": sum(r["reached"] for r in fws["sb3"]),
                    "seeds": (len(fws["ddrl"]), len(fws["sb3"])),
                    "censored": not all(r["reached"] for fw in fws.values() for r in fw),
                    "ddrl_curve_iqm": interquartile_mean([r["curve_mean"] for r in fws["ddrl"]]),
                    "sb3_curve_iqm": interquartile_mean([r["curve_mean"] for r in fws["sb3"]])})
    return out


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}"
    return str(v)


def markdown(per_seed: Sequence[Mapping[str, Any]], cells: Sequence[Mapping[str, Any]]) -> str:
    lines = ["| algorithm | env | seed | framework | threshold | reached | env steps | seconds "
             "| final return | curve mean |", "|" + "---|" * 10]
    for r in per_seed:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in (
            "algorithm", "env", "seed", "framework", "threshold", "reached",
            "env_steps_to_return", "seconds_to_return", "final_return", "curve_mean")) + " |")
    lines += ["", "| algorithm | env | threshold | ddrl median s | SB3 median s | speedup "
              "(SB3 s / ddrl s) | 95% CI | reached ddrl/SB3 | curve IQM ddrl/SB3 |",
              "|" + "---|" * 9]
    for c in cells:
        ci = "[" + ", ".join(_fmt(x) for x in c["speedup_ci"]) + "]"
        mark = " (censored)" if c["censored"] else ""
        lines.append(
            f"| {c['algorithm']} | {c['env']} | {_fmt(c['threshold'])} | {_fmt(c['ddrl_median_s'])}"
            f" | {_fmt(c['sb3_median_s'])} | {_fmt(c['speedup'])}{mark} | {ci} | "
            f"{c['ddrl_reached']}/{c['seeds'][0]} - {c['sb3_reached']}/{c['seeds'][1]} | "
            f"{_fmt(c['ddrl_curve_iqm'])} / {_fmt(c['sb3_curve_iqm'])} |")
    return "\n".join(lines) + "\n"


def write_csv(per_seed: Sequence[Mapping[str, Any]], path: Path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(per_seed)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(buf.getvalue())
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="train ddrl and SB3 side by side, seed by seed")
    run.add_argument("--config", default=str(ll.CONFIG))
    run.add_argument("--algorithm", required=True)
    run.add_argument("--env", required=True)
    run.add_argument("--seeds", type=int, nargs="*", help="default: the study's seeds")
    run.add_argument("--out", required=True)
    run.add_argument("--steps", type=int, help="override the budget (smoke tests)")
    run.add_argument("--eval-every-iterations", type=int, help="override checkpoint_every")
    run.add_argument("--episodes", type=int, default=ll.EPISODES)
    rep = sub.add_parser("report", help="time to the threshold per seed, and the speedup")
    rep.add_argument("--out", required=True, help="a folder of <framework>/<run_id>/curve.csv")
    rep.add_argument("--config", help="only this study's run ids (default: every run)")
    rep.add_argument("--threshold", type=float,
                     help=f"return threshold (default per task: {THRESHOLDS})")
    rep.add_argument("--md")
    rep.add_argument("--csv")
    args = p.parse_args(argv)

    if args.cmd == "run":
        specs = cell_specs(args.config, args.algorithm, args.env, args.seeds)
        extra = ["--episodes", str(args.episodes)]
        if args.steps:
            extra += ["--steps", str(args.steps)]
        if args.eval_every_iterations:
            extra += ["--eval-every-iterations", str(args.eval_every_iterations)]
        codes = run_side_by_side(args.config, specs, Path(args.out), extra)
        return 0 if all(c == 0 for c in codes) else 1
    runs = ll.study_runs(args.config) if args.config else None
    rows = ll.read_curves(Path(args.out), runs)
    if not rows:
        raise SystemExit(f"no curve.csv under {args.out}/<framework>/<run_id>/")
    thresholds = {} if args.threshold is not None else THRESHOLDS
    per_seed = seed_rows(rows, thresholds, args.threshold)
    text = markdown(per_seed, speedups(per_seed))
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    if args.csv:
        write_csv(per_seed, Path(args.csv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
