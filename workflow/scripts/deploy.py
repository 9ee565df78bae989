"""Snakemake script for rule deploy: all logic is in ddrl.aws.deploy."""

from pathlib import Path

from ddrl.aws.deploy import deploy
from ddrl.aws.settings import SageMakerSettings
from ddrl.snakemake_io import log_to

config = snakemake.config  # noqa: F821
with log_to(snakemake.log[0]) as echo:  # noqa: F821
    deploy(
        Path(snakemake.input.run).parent,  # noqa: F821
        SageMakerSettings.from_config(config.get("sagemaker")),
        config["study"],
        snakemake.output[0],  # noqa: F821
        print_fn=echo,
    )
