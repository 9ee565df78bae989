"""Snakemake script for rule plot_scaling: the scaling study's figures, from its tables."""

from pathlib import Path

from ddrl.figures.catalog import SCALING_FIGURES, output_key
from ddrl.figures.stage import figures_stage
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    out = snakemake.output  # noqa: F821
    figures_stage([], Path(snakemake.input.speedup).parent,  # noqa: F821
                  {n: (getattr(out, output_key(n, "pdf")), getattr(out, output_key(n, "png")))
                   for n in SCALING_FIGURES})
