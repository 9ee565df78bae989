"""Shared test helpers: running the workflow in a temporary directory, and one tiny study
that the end-to-end tests of every stage share (it is trained once per session)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "workflow" / "Snakefile"
TINY_CONFIG = REPO / "tests" / "data" / "tiny.yaml"

# bench/harness (measurement code the benchmarks share) is not part of the ddrl package;
# the tests that check it import it the way the bench scripts do, from bench/.
sys.path.insert(0, str(REPO / "bench"))
# The one-off investigations (bench/investigations/) are imported by module name too.
sys.path.insert(0, str(REPO / "bench" / "investigations"))
# Test-only envs named by module (search_env:TargetBandit-v0) must import in this process
# too: validation builds each env once to read its spaces before any job starts.
sys.path.insert(0, str(REPO / "tests" / "helpers"))

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def run_snakemake(workdir: Path, configfile: Path, *args: str, check: bool = True,
                  timeout: float = 1200, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the workflow with the local profile in ``workdir``; return the finished process."""
    cmd = [
        sys.executable, "-m", "snakemake",
        "--snakefile", str(SNAKEFILE),
        "--directory", str(workdir),
        "--configfile", str(configfile),
        "--profile", str(REPO / "profiles" / "local"),
        "--cores", "2",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-8000:]}"
        )
    return proc


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory) -> Path:
    """The whole workflow run once on tests/data/tiny.yaml; returns the work directory.

    Tests read its outputs; tests that change files must copy it first.
    """
    workdir = tmp_path_factory.mktemp("tiny_study")
    config = shutil.copy(TINY_CONFIG, workdir / "tiny.yaml")
    proc = run_snakemake(workdir, Path(config))
    (workdir / "snakemake.stderr").write_text(proc.stderr)
    return workdir


@pytest.fixture(autouse=True)
def _no_ray_left_running():
    """Tests that start Ray in-process must not leak it into the next test."""
    yield
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()
