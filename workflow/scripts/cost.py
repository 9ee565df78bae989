"""Snakemake script for rule cost: cost per run and to reach the return threshold."""

from pathlib import Path

from ddrl.analysis.scaling_stage import cost_stage
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    cost_stage([Path(p).parent for p in snakemake.input.runs],  # noqa: F821
               Path(snakemake.output.csv).with_suffix(""), snakemake.params.cost,  # noqa: F821
               snakemake.params.experiments)  # noqa: F821
