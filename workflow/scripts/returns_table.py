"""Snakemake script for rule returns_table. All logic is in ddrl.agents.evaluate."""

from ddrl.agents.evaluate import write_returns_table
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    write_returns_table(snakemake.input.evals, snakemake.output.csv, snakemake.output.md,  # noqa: F821
                        snakemake.params.experiments)  # noqa: F821
