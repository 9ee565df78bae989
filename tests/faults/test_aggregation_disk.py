"""The aggregation rules on a hostile disk: a full one and a read-only results folder.

Each stage the scaling, cost, returns-table and plot rules run (ddrl.analysis.scaling_stage,
ddrl.agents.evaluate, ddrl.figures) writes into a small tmpfs that is full, or mounted read-only. It
must fail with one ``OutputError`` naming the output it could not write and why, and leave
nothing (not even a temporary) in the folder. Synthetic finished runs (tests/
scaling_fixtures.py) stand in for trained ones, so this takes seconds. Needs root (mount).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.scaling_fixtures import amdahl_study  # noqa: E402

import atomic_writer  # noqa: E402
from ddrl import atomic  # noqa: E402
from ddrl.errors import OutputError  # noqa: E402
from ddrl.agents.evaluate import write_returns_table  # noqa: E402
from ddrl.figures.scaling import FIGURES  # noqa: E402
from ddrl.figures.learning import reward_curves  # noqa: E402
from ddrl.analysis.results import load_progress  # noqa: E402
from ddrl.analysis.scaling_stage import cost_stage, provenance_table, scaling_stage  # noqa: E402
from ddrl.figures.stage import figures_stage  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Finished runs, their eval.json files, and healthy tables (the figures' input)."""
    root = tmp_path_factory.mktemp("agg")
    dirs = amdahl_study(root, workers=(1, 2), iters=4)
    evals = []
    for seed, run_dir in enumerate(dirs, 1):
        atomic.write_json(run_dir / "eval.json", atomic_writer.eval_record(seed))
        evals.append(run_dir / "eval.json")
    tables = root / "tables"
    scaling_stage(dirs, tables, {"bootstrap": 50})
    cost_stage(dirs, tables / "cost", {"return_threshold": 50})
    return {"dirs": dirs, "evals": evals, "tables": tables}


STAGES = {
    "scaling": lambda r, out: scaling_stage(r["dirs"], out, {"bootstrap": 50}),
    "provenance table": lambda r, out: provenance_table(r["dirs"], out / "runs"),
    "cost": lambda r, out: cost_stage(r["dirs"], out / "cost", {"return_threshold": 50}),
    "returns table": lambda r, out: write_returns_table(r["evals"], out / "returns.csv",
                                                        out / "returns.md"),
    "reward curves": lambda r, out: reward_curves(load_progress(r["dirs"]),
                                                  out / "reward_curves.pdf",
                                                  out / "reward_curves.png"),
    "scaling figures": lambda r, out: figures_stage(
        r["dirs"], r["tables"], {n: (out / f"{n}.pdf", out / f"{n}.png") for n in FIGURES}),
}


def _mount(path: Path, *options: str) -> None:
    path.mkdir(parents=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=256k", *options)),
                           "tmpfs", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")


@pytest.fixture(params=["full", "read-only"])
def hostile(request, tmp_path):
    """An output folder on a full tmpfs, or on a read-only one; yields (folder, reason)."""
    mount = tmp_path / "disk"
    _mount(mount)
    out = mount / "results"
    out.mkdir()
    try:
        if request.param == "full":
            fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
            try:  # fill every block
                while os.write(fd, b"\0" * 4096):
                    pass
            except OSError as err:
                assert err.errno == errno.ENOSPC
            finally:
                os.close(fd)
            reason = "No space left on device"
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
            reason = "Read-only file system"
        yield out, reason
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("stage", STAGES)
def test_aggregation_on_a_hostile_disk_fails_clearly_and_writes_nothing(runs, hostile, stage):
    out, reason = hostile
    with pytest.raises(OutputError) as err:
        STAGES[stage](runs, out)
    message = str(err.value)
    assert f"cannot write {out}/" in message and reason in message, message
    assert "\n" not in message
    assert list(out.iterdir()) == [], "something was left in the output folder"
