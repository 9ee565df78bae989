"""Fixtures for the tests against a real Slurm: the daemons, a test copy of the Slurm
profile, and one workflow run of tests/slurm/data/slurm_tiny.yaml shared by the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from ddrl.study.study import Study
from .slurm_cluster import PARTITION, SlurmTestCluster, start_cluster, unavailable_reason

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "workflow" / "Snakefile"
SLURM_CONFIG = Path(__file__).parent / "data" / "slurm_tiny.yaml"
TINY_CONFIG = REPO / "tests" / "data" / "tiny.yaml"
TIMEOUT_SEED = 7  # the run whose first attempt is given too little time


def slurm_study_config() -> dict:
    """tests/data/tiny.yaml with the study name and experiments of slurm_tiny.yaml."""
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config.update(yaml.safe_load(SLURM_CONFIG.read_text()))
    return config


def pytest_collection_modifyitems(config, items):
    reason = unavailable_reason()
    if reason:
        here = Path(__file__).parent
        for item in items:
            if Path(item.fspath).parent == here:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> SlurmTestCluster:
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()


def write_test_profile(dest: Path, **overrides) -> Path:
    """profiles/slurm with the test cluster's partition and quick status checks."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    profile["default-resources"].update({"slurm_partition": PARTITION, "mem_mb_per_cpu": 500})
    profile.update({
        "jobs": 4,
        "latency-wait": 5,
        "slurm-no-account": True,  # no accounting storage on the test cluster
        "slurm-status-command": "squeue",
        "slurm-init-seconds-before-status-checks": 2,
    })
    profile.setdefault("set-resources", {}).setdefault("train", {})["runtime"] = "10 * attempt"
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(profile.get(key), dict):
            profile[key].update(value)
        else:
            profile[key] = value
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return dest


def snakemake_command(workdir: Path, configfile: Path, profile: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE),
            "--directory", str(workdir), "--configfile", str(configfile),
            "--profile", str(profile), *args]


def _env() -> dict:
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}


def run_slurm_snakemake(workdir: Path, configfile: Path, profile: Path, *args: str,
                        timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(snakemake_command(workdir, configfile, profile, *args),
                          capture_output=True, text=True, timeout=timeout, env=_env())


def shorten_first_attempt(workdir: Path, running: subprocess.Popen, timeout_s: float) -> dict:
    """Give the time-limited run's first Slurm job too short a --time, once it has written
    its first checkpoint: ``scontrol update TimeLimit=1`` (minute). Slurm then ends it with
    TIMEOUT however fast this machine is, and the retry must resume from the checkpoint.
    (A fixed 1-minute --time from the start would, on a loaded machine, end the job before
    Ray is even up: that tests nothing.)"""
    study = Study.from_config(slurm_study_config())
    run_id = next(r for r, s in study.runs.items() if s.seed == TIMEOUT_SEED)
    checkpoints = workdir / "results" / study.name / "runs" / run_id / "work" / "checkpoints"
    slurm_logs = workdir / "logs" / "slurm" / "rule_train" / run_id
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and running.poll() is None:
        manifests = list(checkpoints.glob("iter_*/ddrl_checkpoint.json"))
        jobs = sorted((int(p.stem) for p in slurm_logs.glob("*.log")))
        if manifests and jobs:
            subprocess.run(["scontrol", "update", f"JobId={jobs[0]}", "TimeLimit=1"], check=True,
                           capture_output=True, timeout=30)
            return {"job": jobs[0], "checkpoints": sorted(p.parent.name for p in manifests)}
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} wrote no checkpoint within {timeout_s}s")


@pytest.fixture(scope="session")
def slurm_study(slurm_cluster, tmp_path_factory) -> Path:
    """The Slurm test study, run once through the Slurm executor; returns the workdir."""
    workdir = tmp_path_factory.mktemp("slurm_study")
    config = workdir / "slurm_tiny.yaml"
    config.write_text(yaml.safe_dump(slurm_study_config(), sort_keys=False))
    profile = write_test_profile(workdir / "profile")
    t0 = time.monotonic()
    with subprocess.Popen(snakemake_command(workdir, config, profile), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=_env()) as running:
        reader = ThreadPoolExecutor(2)
        out, err = reader.submit(running.stdout.read), reader.submit(running.stderr.read)
        try:
            cut_short = shorten_first_attempt(workdir, running, timeout_s=900)
            running.wait(timeout=max(60, 1200 - (time.monotonic() - t0)))
        finally:
            if running.poll() is None:
                running.kill()
        proc = subprocess.CompletedProcess(running.args, running.returncode, out.result(),
                                           err.result())
    (workdir / "snakemake.stdout").write_text(proc.stdout)
    (workdir / "snakemake.stderr").write_text(proc.stderr)
    (workdir / "wall_s").write_text(f"{time.monotonic() - t0:.1f}")
    (workdir / "cut_short.json").write_text(json.dumps(cut_short))
    if proc.returncode != 0:
        logs = "\n".join(f"--- {p} ---\n{p.read_text()[-3000:]}"
                         for p in sorted(workdir.glob("logs/slurm/**/*.log")))
        raise AssertionError(f"snakemake --profile slurm failed ({proc.returncode}):\n"
                             f"{proc.stderr[-6000:]}\n{logs}\n{slurm_cluster.logs()}")
    return workdir
