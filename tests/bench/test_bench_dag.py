"""bench/dag.py: its generated studies have exactly the runs asked for, and a tiny run of the
benchmark itself (dry run + no-op jobs) reports sane figures."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddrl.study.study import Study

BENCH = Path(__file__).resolve().parents[2] / "bench" / "dag.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_dag", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("n_runs", [1, 7, 60, 61, 500])
def test_generated_study_has_exactly_n_distinct_runs(n_runs):
    study = Study.from_config(_bench().study_config(n_runs))
    assert len(study.runs) == n_runs
    if n_runs >= 60:  # one full grid: every algorithm, env and resource shape
        runs = study.runs.values()
        assert {r.algorithm for r in runs} == {"PPO", "SAC", "TD3"}
        assert len({r.env for r in runs}) == 5 and len({r.resource_label for r in runs}) == 4


def test_study_config_rejects_no_runs():
    with pytest.raises(ValueError, match="n_runs"):
        _bench().study_config(0)


def test_tiny_benchmark_run(tmp_path):
    out = tmp_path / "dag.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "3", "--repeats", "1", "--noop-jobs", "2",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last == json.loads(out.read_text())
    (row,) = last["dry_run"]
    # Each run is at least trained, evaluated, rendered and exported; plus the study's tables.
    assert row["runs"] == 3 and row["jobs"] > 4 * 3
    assert 0 < row["median_s"] and 0 < row["median_cpu_s"]
    noop = last["noop"]
    # (bench/dag.py itself fails unless the no-op jobs made their outputs.)
    assert noop["jobs"] == 2 and noop["total_s"] > 0 and noop["startup_s"] > 0
