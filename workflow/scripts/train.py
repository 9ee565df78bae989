"""Snakemake script for rule train: one run, resumable. All logic is in ddrl.train."""

from pathlib import Path

from ddrl.snakemake_io import log_to
from ddrl.study import RunSpec
from ddrl.train import train_run

with log_to(snakemake.log[0]) as echo:  # noqa: F821
    train_run(
        RunSpec.from_dict(snakemake.params.spec),  # noqa: F821
        Path(snakemake.output.run).parent,  # noqa: F821
        print_fn=echo,
    )
