"""Which checkpoint export and render use: the final one, or the best by evaluation return.

``best`` works like RL Zoo's ``best_model``: the checkpoint with the highest ``return_mean``
in the run's ``eval_curve.csv`` (deterministic episodes on the evaluation seeds; written by
rule ``evaluate_curve`` when ``evaluation.intermediate: true``, which also keeps every
intermediate checkpoint). On a tie the earliest checkpoint wins (a later one is not better).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ddrl.errors import CheckpointError, ConfigError

CHOICES = ("final", "best")
CURVE_FILE = "eval_curve.csv"


def best_iteration(curve_csv: str | Path) -> tuple[int, float]:
    """``(iteration, return_mean)`` of the best row of an ``eval_curve.csv``."""
    path = Path(curve_csv)
    try:
        rows = list(csv.DictReader(path.open(newline="")))
    except FileNotFoundError:
        raise CheckpointError(
            f"{path} is missing: checkpoint 'best' needs the evaluation curve "
            "(set evaluation.intermediate: true and run rule evaluate_curve)") from None
    best: tuple[int, float] | None = None
    for n, row in enumerate(rows, start=2):
        try:
            iteration, ret = int(row["iteration"]), float(row["return_mean"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}:{n}: expected integer 'iteration' and numeric "
                                  f"'return_mean' columns, got {row}") from None
        if not math.isnan(ret) and (best is None or ret > best[1]):
            best = (iteration, ret)
    if best is None:
        raise CheckpointError(f"{path} has no evaluated checkpoint (no rows with a return)")
    return best


def select_checkpoint(run_dir: str | Path, run_id: str, which: str | None) -> Path | None:
    """The checkpoint folder for ``which``: None for the final one (``final`` or unset), a
    path for ``best``, or ``which`` itself when it names an existing folder."""
    from ddrl.training.checkpoints import read_manifest
    from ddrl.agents.evaluate import curve_checkpoints

    if which in (None, "final"):
        return None
    if which != "best":
        path = Path(which)
        if not path.is_dir():
            raise ConfigError(f"checkpoint {which!r}: expected 'final', 'best' or an existing "
                              "checkpoint folder")
        return path
    run_dir = Path(run_dir)
    iteration, _ = best_iteration(run_dir / CURVE_FILE)
    final = run_dir / "checkpoint"
    if final.is_dir() and int(read_manifest(final)["iteration"]) == iteration:
        return final
    for path, manifest in curve_checkpoints(run_dir, run_id):
        if int(manifest["iteration"]) == iteration:
            return path
    raise CheckpointError(
        f"run {run_id}: the best checkpoint by {CURVE_FILE} (iteration {iteration}) is no "
        f"longer in {run_dir / 'work' / 'checkpoints'}; with evaluation.intermediate: true "
        "training keeps every checkpoint")
