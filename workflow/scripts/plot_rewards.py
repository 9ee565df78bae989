"""Snakemake script for rule plot_rewards."""

from pathlib import Path

from ddrl.figures.learning import reward_curves
from ddrl.analysis.results import load_progress
from ddrl.atomic import write_text
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    progress = load_progress([Path(p).parent for p in snakemake.input.runs],  # noqa: F821
                             snakemake.params.experiments)  # noqa: F821
    drawn = reward_curves(progress, snakemake.output.pdf, snakemake.output.png)  # noqa: F821
    write_text(snakemake.output.csv, drawn.to_csv(index=False))  # noqa: F821
