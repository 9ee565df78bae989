"""The thesis's timing grid on one machine: seconds per iteration by env runners and learner GPU.

Times the study's own timing runs (``config/thesis.yaml``: experiment ``scaling-ppo`` and
``scaling-offpolicy-thesis-schedule`` by default, their hyperparameters and provenance
unchanged) at each ``--runners`` count, without and with a learner GPU, and prints them
beside the thesis's published iteration times (CTE-POWER, V100; thesis Tables 6-8). Made for
a many-core GPU machine (1-16 runners), where one prepared run has to fit a short lease:

- one Ray session for the whole grid (``num_cpus`` = the machine's, ``num_gpus`` = torch's);
- off-policy runs start learning after ``--learning-starts`` env steps instead of the
  study's 10000 (the timed iterations are the same steady state; only the untimed warm-up
  is shorter), then time ``--iters`` iterations after one untimed learning iteration;
- ``--deadline-s`` stops starting new configurations once that much time has gone, and
  ``--config-timeout-s`` abandons one that hangs (the row records why);
- every finished configuration is appended to ``--jsonl`` at once, so an interrupted run
  keeps what it measured.

Configurations run in priority order: the experiments in the order given, each one's
algorithms in config order, runner counts in the order given (``--runners 1 16 4 2 8``
measures the ends of the range first), CPU learner before GPU learner. The table sorts them.

Usage::

    python bench/thesis_grid.py --runners 1 2 4 8 16 --gpus 0 1 --jsonl grid.jsonl
    python bench/thesis_grid.py --experiments scaling-offpolicy-fixed-ratio --runners 1 2
    python bench/thesis_grid.py --table grid.jsonl --png grid.png   # table and figure of saved rows
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Iterator

DEFAULT_EXPERIMENTS = ["scaling-ppo", "scaling-offpolicy-thesis-schedule"]
OFFPOLICY = ("TD3", "SAC")


class ConfigTimeout(Exception):
    """A configuration ran past ``--config-timeout-s``."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[dict[str, bool]]:
    """Raise ConfigTimeout in the main thread after ``seconds`` (0: no limit). Yields a dict
    whose "expired" tells afterwards whether the limit struck: Ray may wrap the exception
    (a SystemError from inside ``ray.wait``), so callers check the flag, not the type."""
    state = {"expired": False}
    if seconds <= 0:
        yield state
        return

    def expire(signum: int, frame: Any) -> None:
        state["expired"] = True
        raise ConfigTimeout(f"no result within {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield state
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def grid_specs(config: str, experiments: list[str], runners: list[int], gpus: list[int],
               learning_starts: int, algorithms: list[str] | None = None
               ) -> list[tuple[str, Any]]:
    """The study's timing runs (first seed) for the requested runners and GPU counts, in
    priority order, with off-policy learning starting after ``learning_starts`` env steps."""
    from ddrl.study.study import Study
    from ddrl.errors import ConfigError

    study = Study.from_file(config)
    unknown = [e for e in experiments if e not in study.experiments]
    if unknown:
        raise ConfigError(f"{config}: no experiment(s) {unknown}; expected some of "
                          f"{sorted(study.experiments)}")
    specs = []
    for name in experiments:
        runs = [study.runs[r] for r, e in study.experiment_of.items() if e == name]
        if not runs:
            continue
        seed = min(s.seed for s in runs)
        chosen = [s for s in runs if s.seed == seed
                  and (not algorithms or s.algorithm in algorithms)
                  and s.resources["num_env_runners"] in runners
                  and s.resources["num_gpus_per_learner"] in gpus
                  and s.resources.get("nodes", 1) == 1]
        config_order = list(dict.fromkeys(s.algorithm for s in runs))
        chosen.sort(key=lambda s: (config_order.index(s.algorithm),
                                   runners.index(s.resources["num_env_runners"]),
                                   s.resources["num_gpus_per_learner"]))
        for spec in chosen:
            if spec.algorithm in OFFPOLICY:
                hp = {**spec.hyperparameters,
                      "num_steps_sampled_before_learning_starts": learning_starts}
                spec = dataclasses.replace(spec, hyperparameters=hp)
            specs.append((name, spec))
    return specs


def measured_run_ids(paths: list[str]) -> set[str]:
    """Run ids with a successful row in these JSONL files (missing files count as empty)."""
    done = set()
    for path in paths:
        if Path(path).exists():
            for line in Path(path).read_text().splitlines():
                row = json.loads(line) if line.strip() else {}
                if row and not row.get("error"):
                    done.add(row["run_id"])
    return done


def steps_per_iteration(spec: Any) -> int:
    hp = spec.hyperparameters
    return int(hp["timesteps_per_iteration"] if spec.algorithm in OFFPOLICY
               else hp["train_batch_size"])


def warmup_steps(spec: Any) -> int:
    """Env steps before timing: off-policy, learning starts plus one learning iteration;
    PPO, one iteration (actor start-up, first compile of the learner's step)."""
    per_iter = steps_per_iteration(spec)
    if spec.algorithm in OFFPOLICY:
        return int(spec.hyperparameters["num_steps_sampled_before_learning_starts"]) + per_iter
    return per_iter


def thesis_reference() -> dict[tuple[str, int, int], tuple[float, float, int]]:
    """(algorithm, workers, GPUs) -> (thesis s / iteration, thesis speedup, its reference
    worker count), from ``ddrl.analysis.thesis_comparison.thesis_speedups``: the reference is the
    1-worker CPU run, or the smallest CPU worker count where the thesis has none (PPO: 2)."""
    from ddrl.analysis.thesis_comparison import thesis_speedups
    from ddrl.analysis.scaling_stage import thesis_iteration_times

    return {(r.algorithm.upper(), int(r.num_workers), int(r.num_gpus)):
            (float(r.iteration_time_s), float(r.speedup), int(r.reference_workers))
            for r in thesis_speedups(thesis_iteration_times()).itertuples()}


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: per experiment and algorithm, s/iteration and speedup over the thesis's
    reference runner count without GPU (1, PPO 2: ``thesis_reference``), so ddrl's speedup
    and the thesis's compare like with like; ddrl on this machine beside the thesis."""
    thesis = thesis_reference()
    reference = {a: ref for (a, _, _), (_, _, ref) in thesis.items()}
    out = ["| experiment | algorithm | runners | GPU | learner on | s / iteration | speedup "
           "| env steps/s | updates / iteration | thesis s / iteration | thesis speedup |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    base: dict[tuple[str, str], float] = {}
    for r in rows:
        if (r.get("error") is None and r["gpus"] == 0
                and r["runners"] == reference.get(r["algorithm"], 1)):
            base[(r["experiment"], r["algorithm"])] = r["seconds_per_iter"]
    experiments = list(dict.fromkeys(r["experiment"] for r in rows))
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    rows = sorted(rows, key=lambda r: (experiments.index(r["experiment"]),
                                       algorithms.index(r["algorithm"]), r["runners"], r["gpus"]))
    for r in rows:
        t_time, t_speedup, _ = thesis.get((r["algorithm"], r["runners"], r["gpus"]),
                                          (None, None, None))
        t_cells = (f"{t_time:.2f}" if t_time else "-", f"{t_speedup:.2f}" if t_speedup else "-")
        head = f"| {r['experiment']} | {r['algorithm']} | {r['runners']} | {r['gpus']} |"
        if r.get("error"):
            out.append(f"{head} - | failed: {r['error'][:80]} | | | | {t_cells[0]} | {t_cells[1]} |")
            continue
        b = base.get((r["experiment"], r["algorithm"]))
        speedup = f"{b / r['seconds_per_iter']:.2f}" if b else "-"
        upi = r["updates"] / r["iterations"] if r["algorithm"] in OFFPOLICY else float("nan")
        out.append(f"{head} {r['learner_device']} | {r['seconds_per_iter']:.2f} | {speedup} | "
                   f"{r['steps_per_s']:.0f} | {'-' if upi != upi else f'{upi:.0f}'} | "
                   f"{t_cells[0]} | {t_cells[1]} |")
    return "\n".join(out)


def plot_series(rows: list[dict[str, Any]]) -> dict[tuple[str, int, str], list[tuple[int, float]]]:
    """(algorithm, learner GPUs, "ddrl" or "thesis") -> [(runners, s / iteration)], sorted;
    the thesis's series only for the algorithms measured here."""
    ok = [r for r in rows if not r.get("error")]
    series: dict[tuple[str, int, str], list[tuple[int, float]]] = {}
    for r in ok:
        series.setdefault((r["algorithm"], r["gpus"], "ddrl"), []).append(
            (r["runners"], r["seconds_per_iter"]))
    measured = {r["algorithm"] for r in ok}
    for (algo, n, gpus), (t, _, _) in thesis_reference().items():
        if algo in measured:
            series.setdefault((algo, gpus, "thesis"), []).append((n, t))
    return {k: sorted(v) for k, v in series.items()}


def plot(rows: list[dict[str, Any]], png: str) -> None:
    """Seconds per iteration against env runners, one panel per algorithm: this machine's CPU
    and GPU learners (solid) beside the thesis's (dashed), log-log, so equal slopes mean equal
    scaling whatever the hardware."""
    from ddrl import atomic
    from ddrl.figures.style import GRID_ALPHA, plt  # headless backend

    series = plot_series(rows)
    algorithms = list(dict.fromkeys(a for a, _, source in series if source == "ddrl"))
    if not algorithms:
        raise ValueError("no successful rows to plot")
    fig, axes = plt.subplots(1, len(algorithms), figsize=(4.2 * len(algorithms), 3.6),
                             squeeze=False)
    for ax, algo in zip(axes[0], algorithms):
        for gpus, color in ((0, "tab:blue"), (1, "tab:orange")):
            label = "GPU learner" if gpus else "CPU learner"
            for source, style, alpha in (("ddrl", "o-", 1.0), ("thesis", "s--", 0.6)):
                points = series.get((algo, gpus, source))
                if points:
                    ax.plot(*zip(*points), style, color=color, alpha=alpha,
                            label=f"{source}, {label}")
        ax.set(xscale="log", yscale="log", title=algo, xlabel="env runners (thesis: workers)",
               ylabel="s / iteration")
        ax.grid(alpha=GRID_ALPHA, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic.atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def machine() -> dict[str, Any]:
    import platform

    import torch

    return {"cpus": os.cpu_count(), "cpu_model": platform.processor() or platform.machine(),
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "torch": torch.__version__}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="config/thesis.yaml")
    p.add_argument("--experiments", nargs="+", default=DEFAULT_EXPERIMENTS)
    p.add_argument("--algorithms", nargs="+", help="only these (default: the experiments' all)")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4, 8, 16],
                   help="env runner counts, timed in this order")
    p.add_argument("--gpus", type=int, nargs="+", default=None,
                   help="learner GPUs to time (default: 0 and, if torch sees a GPU, 1)")
    p.add_argument("--iters", type=int, default=2, help="timed iterations per configuration")
    p.add_argument("--learning-starts", type=int, default=1000,
                   help="off-policy env steps before learning (the study: 10000)")
    p.add_argument("--deadline-s", type=float, default=0,
                   help="start no configuration after this many seconds (0: no deadline)")
    p.add_argument("--config-timeout-s", type=float, default=0,
                   help="abandon a configuration after this many seconds (0: never)")
    p.add_argument("--jsonl", help="append each configuration's row to this file")
    p.add_argument("--skip-measured", metavar="JSONL", action="append", default=[],
                   help="leave out configurations with a successful row in this file (a "
                        "previous lease's), matched by run id; may be given again")
    p.add_argument("--table", metavar="JSONL", help="only print the table of saved rows")
    p.add_argument("--png", help="with --table: also plot them beside the thesis")
    args = p.parse_args(argv)
    if args.table:
        rows = [json.loads(line) for line in Path(args.table).read_text().splitlines() if line]
        print(table(rows))
        if args.png:
            plot(rows, args.png)
        return 0
    if min(args.runners) < 1 or args.iters < 1 or args.learning_starts < 0:
        p.error("--runners and --iters must be >= 1 and --learning-starts >= 0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    import torch
    from harness.throughput import report_json, time_training

    from ddrl.training.runtime import ray_session

    has_gpu = torch.cuda.is_available()
    gpus = args.gpus if args.gpus is not None else ([0, 1] if has_gpu else [0])
    if any(g > 0 for g in gpus) and not has_gpu:
        p.error(f"--gpus {gpus}: torch sees no CUDA device")
    specs = grid_specs(args.config, args.experiments, args.runners, gpus, args.learning_starts,
                       args.algorithms)
    if not specs:
        p.error(f"no timing runs of {args.experiments} match --algorithms {args.algorithms}, "
                f"--runners {args.runners} and --gpus {gpus} in {args.config}")
    measured = measured_run_ids(args.skip_measured)
    if measured:
        before = len(specs)
        specs = [(e, s) for e, s in specs if s.run_id not in measured]
        print(f"{before - len(specs)} configuration(s) measured already (--skip-measured)")
        if not specs:
            return 0
    info = machine()
    print(f"{len(specs)} configurations on {info}", flush=True)
    t_start, rows = time.monotonic(), []
    with ray_session(num_cpus=os.cpu_count() or 1, num_gpus=torch.cuda.device_count()):
        for i, (experiment, spec) in enumerate(specs):
            elapsed = time.monotonic() - t_start
            if args.deadline_s and elapsed > args.deadline_s:
                print(f"deadline: {len(specs) - i} configuration(s) not started", flush=True)
                break
            res = spec.resources
            row: dict[str, Any] = {"experiment": experiment, "algorithm": spec.algorithm,
                                   "runners": res["num_env_runners"],
                                   "gpus": res["num_gpus_per_learner"], "run_id": spec.run_id,
                                   "started_s": round(elapsed, 1), "machine": info}
            limit = {"expired": False}
            try:
                with time_limit(args.config_timeout_s) as limit:
                    row.update(time_training(spec, warmup_steps=warmup_steps(spec),
                                             timed_steps=steps_per_iteration(spec) * args.iters))
            except Exception as err:  # one broken configuration must not cost the others
                row["error"] = (f"ConfigTimeout: no result within {args.config_timeout_s:.0f} s"
                                if limit["expired"] else f"{type(err).__name__}: {err}")
            rows.append(row)
            if args.jsonl:
                with open(args.jsonl, "a") as f:
                    f.write(json.dumps(row, default=str) + "\n")
            if "error" in row:
                print(f"[{i + 1}/{len(specs)}] {experiment} {spec.algorithm} "
                      f"runners={row['runners']} gpus={row['gpus']}: {row['error']}", flush=True)
            else:
                print(f"[{i + 1}/{len(specs)}] {experiment} {spec.algorithm} "
                      f"runners={row['runners']} gpus={row['gpus']} ({row['learner_device']}): "
                      f"{row['seconds_per_iter']:.2f} s/iter, {row['steps_per_s']:.0f} env steps/s "
                      f"[{time.monotonic() - t_start:.0f} s]", flush=True)
    print(table(rows))
    report_json({"args": vars(args), "machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
