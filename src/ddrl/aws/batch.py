"""Job sizes that AWS Batch accepts through snakemake-executor-plugin-aws-batch 0.2.1.

The plugin checks every job's vCPUs and memory against Fargate's table (also on EC2
queues): vCPUs must be 1, 2, 4, 8 or 16, and ``mem_mb = 2048 x vCPUs`` is valid for each.
A training run needs ``env runners x CPUs + 1`` threads (often odd), so on Batch the train
rule rounds up to the next size; the aws profile sets ``mem_mb`` to ``2048 * threads``.
"""

from __future__ import annotations

from typing import Any

from ddrl.errors import ConfigError

BATCH_VCPUS = (1, 2, 4, 8, 16)
EXECUTOR = "aws-batch"


def batch_vcpus(cpus: int) -> int:
    """The smallest Batch vCPU count that holds ``cpus``."""
    for size in BATCH_VCPUS:
        if cpus <= size:
            return size
    raise ConfigError(
        f"a job needs {cpus} CPUs; AWS Batch through the aws profile allows at most "
        f"{BATCH_VCPUS[-1]} vCPUs a job (use fewer env runners, or SageMaker/Slurm)"
    )


def on_aws_batch(workflow: Any) -> bool:
    """Whether Snakemake's executor is AWS Batch (known once jobs are being planned)."""
    plugin = getattr(workflow, "executor_plugin", None)
    return getattr(plugin, "name", None) == EXECUTOR
