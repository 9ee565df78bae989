"""Snakemake script for rule learning_returns: training returns against the thesis's."""

from pathlib import Path

from ddrl.analysis.thesis_returns import learning_returns_stage
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    learning_returns_stage([Path(p).parent for p in snakemake.input.runs],  # noqa: F821
                           Path(snakemake.output.learning_returns).with_suffix(""),  # noqa: F821
                           snakemake.params.experiments)  # noqa: F821
