"""Workflow overhead: ``snakemake -n`` on large studies, and seconds per job of a no-op study.

1. **Dry run.** Writes study configs (in a temporary directory) of ``--sizes`` runs each
   (default 500 and 5000), the grid algorithms x envs x seeds x resources that
   config/thesis.yaml uses (PPO, SAC, TD3; five Bullet tasks; four resource shapes; the
   thesis's hyperparameters), and times ``snakemake -n`` with the repository's
   workflow/Snakefile and the local profile on each, median of ``--repeats`` runs. The
   dry run builds the whole DAG (train, evaluate, render, export, the tables and figures),
   so it measures parsing, config validation, study expansion, every input function and
   Snakemake's own DAG work. Targets: 500 runs < 5 s, 5000 runs < 30 s. Each size is
   repeated ``--repeats`` times, or fewer once ``--budget-s`` is spent. ``--floor`` also
   times the dry run of as many no-op jobs (bench/noop/Snakefile): Snakemake's own floor.
2. **Per-job overhead.** Runs bench/noop/Snakefile (``--noop-jobs`` jobs of a rule that
   only touches its output, one job per run id of a study like the above) with the local
   profile's settings and ``--cores 2``, and reports wall seconds per job: what Snakemake
   itself costs per job on this machine, before any training starts.

Usage::

    .venv/bin/python bench/dag.py                          # 500 and 5000 runs (~3 min)
    .venv/bin/python bench/dag.py --repeats 5 --budget-s 600 --floor   # the full measurement
    .venv/bin/python bench/dag.py --sizes 500 --repeats 5  # one size, more repeats
    .venv/bin/python bench/dag.py --profile 5000           # also cProfile the parse (top 25)
    .venv/bin/python bench/dag.py --noop-jobs 200          # a longer per-job measurement
    mkdir /tmp/before && git archive 2f5a0f0 | tar -x -C /tmp/before
    .venv/bin/python bench/dag.py --checkout /tmp/before  # "before" (ddrl as of 2f5a0f0)

The last line of output is one JSON object with every figure (``--json FILE`` writes it
to a file too).
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "workflow" / "Snakefile"
NOOP_SNAKEFILE = REPO / "bench" / "noop" / "Snakefile"
PROFILE = REPO / "profiles" / "local"

ALGORITHMS = ["PPO", "SAC", "TD3"]
ENVS = ["HumanoidBulletEnv-v0", "HopperBulletEnv-v0", "HalfCheetahBulletEnv-v0",
        "Walker2DBulletEnv-v0", "AntBulletEnv-v0"]
RESOURCES = [{"num_env_runners": 1}, {"num_env_runners": 2}, {"num_env_runners": 4},
             {"num_env_runners": 4, "num_envs_per_env_runner": 4}]
TARGETS_S = {500: 5.0, 5000: 30.0}


def study_config(n_runs: int, name: str | None = None) -> dict:
    """A valid study config of exactly ``n_runs`` runs: algorithms x envs x resources x seeds.

    Every cell of the algorithms x envs x resources grid gets ``n_runs // cells`` seeds; the
    first ``n_runs % cells`` cells get one more (as one-run experiments).
    """
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}")
    # The hyperparameters of the checkout whose workflow is timed (see --checkout).
    thesis = yaml.safe_load((SNAKEFILE.parents[1] / "config" / "thesis.yaml").read_text())
    cells = list(itertools.product(ALGORITHMS, ENVS, RESOURCES))
    full, extra = divmod(n_runs, len(cells))
    experiments = []
    if full:
        experiments.append({"name": "grid", "algorithms": ALGORITHMS, "envs": ENVS,
                            "seeds": list(range(1, full + 1)), "resources": RESOURCES,
                            "budget": {"env_steps": 100000}})
    for i, (algo, env, res) in enumerate(cells[:extra]):
        experiments.append({"name": f"extra-{i}", "algorithms": [algo], "envs": [env],
                            "seeds": [full + 1], "resources": [res],
                            "budget": {"env_steps": 100000}})
    return {"study": name or f"dag{n_runs}", "checkpoint_every": 20,
            "hyperparameters": thesis["hyperparameters"], "experiments": experiments}


def write_study(directory: Path, n_runs: int) -> Path:
    path = directory / f"dag{n_runs}.yaml"
    path.write_text(yaml.safe_dump(study_config(n_runs), sort_keys=False))
    return path


def snakemake_cmd(workdir: Path, configfile: Path, *args: str,
                  snakefile: Path | None = None) -> list[str]:
    """The command tests/conftest.py's run_snakemake uses: local profile, 2 cores."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile or SNAKEFILE),
            "--directory", str(workdir), "--configfile", str(configfile),
            "--profile", str(PROFILE), "--cores", "2", *args]


def _env() -> dict:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    if SNAKEFILE != REPO / "workflow" / "Snakefile":  # --checkout: its ddrl package too
        src = str(SNAKEFILE.parents[1] / "src")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


def _child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_dry_run(workdir: Path, configfile: Path) -> tuple[float, float, int]:
    """Wall and CPU (user + sys) seconds of one ``snakemake -n``, and the jobs it planned.

    CPU seconds are the steadier figure on a shared machine: other load stretches the wall
    time, not the CPU time.
    """
    cmd = snakemake_cmd(workdir, configfile, "-n", "--quiet", "rules")
    cpu0, t0 = _child_cpu_s(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    elapsed, cpu = time.perf_counter() - t0, _child_cpu_s() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake -n failed ({proc.returncode}): {' '.join(cmd)}\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return elapsed, cpu, _count_jobs(proc.stdout + proc.stderr)


def _count_jobs(text: str) -> int:
    """The 'total' row of Snakemake's job-count table (0 when absent)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "total" and parts[1].isdigit():
            return int(parts[1])
    return 0


def time_floor(workdir: Path, n_jobs: int) -> float:
    """Seconds for ``snakemake -n`` of bench/noop/Snakefile with ``n_jobs`` script jobs."""
    workdir.mkdir(parents=True, exist_ok=True)
    configfile = workdir / "noop.yaml"
    configfile.write_text(yaml.safe_dump({"n_jobs": max(n_jobs - 1, 1)}))  # + rule all
    cmd = snakemake_cmd(workdir, configfile, "-n", "--quiet", "rules", snakefile=NOOP_SNAKEFILE)
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, env=_env(), check=True)
    return time.perf_counter() - t0


def profile_parse(configfile: Path, workdir: Path, top: int) -> str:
    """cProfile of one dry run in this process (Snakemake's API), sorted by cumulative time."""
    import io
    import pstats

    out = workdir / "parse.prof"
    cmd = snakemake_cmd(workdir, configfile, "-n", "--quiet", "rules")
    cmd[1:2] = ["-m", "cProfile", "-o", str(out), "-m"]  # python -m cProfile ... -m snakemake
    subprocess.run(cmd, capture_output=True, text=True, env=_env(), check=True)
    buf = io.StringIO()
    pstats.Stats(str(out), stream=buf).sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def time_noop(workdir: Path, n_jobs: int) -> dict:
    """Run ``n_jobs`` no-op jobs through Snakemake with the local profile; seconds per job."""
    configfile = workdir / "noop.yaml"
    configfile.write_text(yaml.safe_dump({"n_jobs": n_jobs}))
    base = snakemake_cmd(workdir, configfile, snakefile=NOOP_SNAKEFILE)
    # Startup + DAG alone (nothing to run once the outputs exist) is subtracted below.
    t0 = time.perf_counter()
    proc = subprocess.run(base + ["--quiet", "all"], capture_output=True, text=True, env=_env())
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"no-op workflow failed: {proc.stderr[-4000:]}")
    made = len(list((workdir / "out" / "script").glob("*.txt")))
    if made != n_jobs:
        raise RuntimeError(f"no-op workflow made {made} outputs, expected {n_jobs}")
    t0 = time.perf_counter()
    subprocess.run(base + ["--quiet", "all"], capture_output=True, text=True, env=_env(),
                   check=True)
    idle = time.perf_counter() - t0
    return {"jobs": n_jobs, "total_s": total, "startup_s": idle,
            "s_per_job": (total - idle) / n_jobs}


def main(argv: list[str] | None = None) -> int:
    from harness.throughput import report_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[500, 5000],
                   help="runs per study (default: 500 5000)")
    p.add_argument("--repeats", type=int, default=3, help="dry runs per size (median)")
    p.add_argument("--budget-s", type=float, default=60.0,
                   help="stop repeating a size once its dry runs took this long (>= 1 run)")
    p.add_argument("--floor", action="store_true",
                   help="also time snakemake -n on as many no-op jobs (bench/noop/Snakefile): "
                        "Snakemake's own cost, without ddrl's rules")
    p.add_argument("--noop-jobs", type=int, default=60,
                   help="jobs in the per-job overhead measurement (0: skip it)")
    p.add_argument("--profile", type=int, metavar="N_RUNS",
                   help="also print a cProfile of one dry run of this size")
    p.add_argument("--top", type=int, default=25, help="rows of the profile to print")
    p.add_argument("--checkout", type=Path,
                   help="time the workflow and ddrl package of another checkout of this "
                        "repository, for before/after (e.g. `mkdir /tmp/before && git archive "
                        "<commit> | tar -x -C /tmp/before`)")
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args(argv)
    if args.checkout:
        global SNAKEFILE
        SNAKEFILE = args.checkout.resolve() / "workflow" / "Snakefile"
        if not SNAKEFILE.is_file():
            p.error(f"--checkout {args.checkout}: no workflow/Snakefile there")

    result: dict = {"benchmark": "dag", "cpus": os.cpu_count(), "snakefile": str(SNAKEFILE),
                    "dry_run": [], "noop": None}
    with tempfile.TemporaryDirectory(prefix="ddrl-bench-dag-") as tmp:
        tmp = Path(tmp)
        for n in args.sizes:
            config = write_study(tmp, n)
            workdir = tmp / f"work{n}"
            workdir.mkdir()
            times, cpus, jobs = [], [], 0
            while len(times) < args.repeats and (not times or sum(times) < args.budget_s):
                elapsed, cpu, jobs = time_dry_run(workdir, config)
                times.append(elapsed)
                cpus.append(cpu)
            med = statistics.median(times)
            target = TARGETS_S.get(n)
            row = {"runs": n, "jobs": jobs, "median_s": round(med, 3),
                   "times_s": [round(t, 3) for t in times],
                   "median_cpu_s": round(statistics.median(cpus), 3), "target_s": target,
                   "met": None if target is None else med < target}
            if args.floor:
                row["floor_s"] = round(time_floor(tmp / f"floor{n}", jobs), 3)
            result["dry_run"].append(row)
            verdict = "" if target is None else f" (target < {target:g} s: " \
                f"{'met' if row['met'] else 'MISSED'})"
            print(f"snakemake -n, {n:5d} runs, {jobs:6d} jobs: median {med:6.2f} s over "
                  f"{len(times)} ({', '.join(f'{t:.2f}' for t in times)}), CPU "
                  f"{row['median_cpu_s']:.2f} s{verdict}", flush=True)
            if args.floor:
                print(f"  Snakemake alone, {jobs} no-op script jobs: {row['floor_s']:.2f} s "
                      f"(ddrl's share: {med - row['floor_s']:.2f} s)", flush=True)
        if args.profile:
            config = write_study(tmp, args.profile)
            workdir = tmp / f"prof{args.profile}"
            workdir.mkdir()
            print(f"\ncProfile of snakemake -n, {args.profile} runs:\n"
                  + profile_parse(config, workdir, args.top), flush=True)
        if args.noop_jobs:
            workdir = tmp / "noop"
            workdir.mkdir()
            noop = time_noop(workdir, args.noop_jobs)
            result["noop"] = {k: round(v, 4) if isinstance(v, float) else v
                              for k, v in noop.items()}
            print(f"no-op study, local profile, --cores 2: {noop['jobs']} jobs in "
                  f"{noop['total_s']:.2f} s, of which {noop['startup_s']:.2f} s startup/DAG; "
                  f"{noop['s_per_job']:.3f} s per job", flush=True)
    report_json(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
