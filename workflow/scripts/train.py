"""Snakemake script for rule train: one run, resumable, here or as a SageMaker job.
All logic is in ddrl.training.train and ddrl.aws.sagemaker. A run with ``nodes > 1`` (Slurm
profile) first gets a Ray cluster over its job's nodes (ddrl.cluster.ray_nodes.ray_cluster)."""

from pathlib import Path

from ddrl.cluster.ray_nodes import ray_cluster
from ddrl.snakemake_io import log_to
from ddrl.runs import RunSpec
from ddrl.training.train import keep_checkpoints, train_run
from ddrl.training.tracking import tracking_settings

config = snakemake.config  # noqa: F821
with log_to(snakemake.log[0]) as echo:  # noqa: F821
    spec = RunSpec.from_dict(snakemake.params.spec)  # noqa: F821
    run_dir = Path(snakemake.output.run).parent  # noqa: F821
    if config.get("train_backend", "local") == "sagemaker":
        from ddrl.aws.sagemaker import train_on_sagemaker
        from ddrl.aws.settings import SageMakerSettings

        settings = SageMakerSettings.from_config(config.get("sagemaker"))
        train_on_sagemaker(spec, run_dir, settings, config["study"], print_fn=echo)
    else:
        with ray_cluster(spec, run_dir / "work", print_fn=echo) as address:
            train_run(spec, run_dir, ray_address=address, print_fn=echo,
                      keep_checkpoints=keep_checkpoints(config),
                      tracking=tracking_settings(config))
