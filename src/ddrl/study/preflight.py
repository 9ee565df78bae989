"""Checks that need the machine, run before any job starts when jobs run on this machine.

The schema says what a config may ask for; these say whether this machine can give it.
(Cluster executors check their own partitions: see ddrl.cluster.slurm.check_workflow_request.)
"""

from __future__ import annotations

import logging
import os
from typing import Any, Mapping

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


def usable_cpus() -> int:
    """CPUs this process may run on (taskset/cgroup affinity), else the logical count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_local_cpus(runs: Mapping[str, Any], source: str = "config",
                     cpus: int | None = None, warn_only: bool = False) -> list[str]:
    """Refuse runs whose env runners need more CPUs than this machine has.

    Such a run passes the schema, then its training job waits for env runner actors that
    never all start. The driver/learner's extra CPU is not counted: on a laptop it may share
    a core (ddrl.training.runtime.ray_session gives Ray at least the machine's logical CPUs).
    ``warn_only`` (planning a cluster study on a laptop is fine) logs the message instead
    and returns it.
    """
    have = usable_cpus() if cpus is None else cpus
    def runner_cpus(spec: Any) -> int:
        return spec.resources["num_env_runners"] * spec.resources["num_cpus_per_env_runner"]

    over = {rid: spec for rid, spec in runs.items()
            if spec.resources.get("nodes", 1) <= 1 and runner_cpus(spec) > have}
    if not over:
        return []
    rid, spec = max(over.items(), key=lambda kv: kv[1].cpus)
    r = spec.resources
    message = (
        f"{source}: resources num_env_runners={r['num_env_runners']} x "
        f"num_cpus_per_env_runner={r['num_cpus_per_env_runner']} = "
        f"{r['num_env_runners'] * r['num_cpus_per_env_runner']} CPUs, but this machine has "
        f"{have} (run {rid}{f' and {len(over) - 1} more' if len(over) > 1 else ''}); allowed "
        f"here: num_env_runners x num_cpus_per_env_runner <= {have} (a larger run needs the "
        "Slurm profile)"
    )
    if warn_only:
        log.warning("%s; `snakemake -n` plans it, running it here stops before the first "
                    "job", message)
        return [message]
    raise ConfigError(message)
