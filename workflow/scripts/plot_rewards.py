"""Snakemake script for rule plot_rewards: thesis Figs 12-14 from the learning runs."""

from pathlib import Path

from ddrl.figures.catalog import LEARNING_FIGURES, output_key
from ddrl.figures.stage import reward_stage
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    out = snakemake.output  # noqa: F821
    reward_stage([Path(p).parent for p in snakemake.input.runs],  # noqa: F821
                 {n: (getattr(out, output_key(n, "pdf")), getattr(out, output_key(n, "png")))
                  for n in LEARNING_FIGURES},
                 snakemake.params.experiments)  # noqa: F821
