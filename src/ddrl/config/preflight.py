"""Checks that need the machine, run before any job starts when jobs run on this machine.

The schema says what a config may ask for; these say whether this machine can give it.
(Cluster executors check their own partitions: see ddrl.cluster.slurm.check_workflow_request.)
"""

from __future__ import annotations

import logging
from typing import Mapping

from ddrl.errors import ConfigError
from ddrl.runs import RunSpec

log = logging.getLogger(__name__)


def visible_gpus() -> int:
    """CUDA devices torch can use here (0 without CUDA)."""
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - a broken CUDA install means no GPU
        return 0


def check_local_gpus(runs: Mapping[str, RunSpec], source: str = "config",
                     gpus: int | None = None) -> list[str]:
    """Fail (or, with ``on_missing_gpu: cpu``, warn) when runs ask for more GPUs than exist.

    Returns the warnings logged. ``gpus`` overrides the detected count (tests).
    """
    wanting = {rid: spec for rid, spec in runs.items() if spec.gpus > 0}
    if not wanting:
        return []
    have = visible_gpus() if gpus is None else gpus
    short = {rid: spec for rid, spec in wanting.items() if spec.gpus > have}
    if not short:
        return []
    strict = sorted(rid for rid, spec in short.items() if spec.on_missing_gpu != "cpu")
    if strict:
        need = max(short[r].gpus for r in strict)
        raise ConfigError(
            f"{source}: resources.num_gpus_per_learner={need} but this machine has {have} "
            f"GPU(s) (runs: {', '.join(strict[:3])}{' ...' if len(strict) > 3 else ''}); "
            f"allowed here: num_gpus_per_learner <= {have}, or set on_missing_gpu: cpu "
            "to train on the CPU with a warning"
        )
    warnings = [
        f"{rid}: resources.num_gpus_per_learner={spec.gpus} but this machine has {have} GPU(s); "
        "on_missing_gpu: cpu, so it trains on the CPU"
        for rid, spec in sorted(short.items())
    ]
    for line in warnings:
        log.warning(line)
    return warnings
