"""Snakemake script for rule plot_scaling: the scaling study's figures."""

from pathlib import Path

from ddrl.figures.scaling import FIGURES, output_key
from ddrl.figures.stage import figures_stage
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    out = snakemake.output  # noqa: F821
    figures_stage([Path(p).parent for p in snakemake.input.runs],  # noqa: F821
                  Path(snakemake.input.speedup).parent,  # noqa: F821
                  {n: (getattr(out, output_key(n, "pdf")), getattr(out, output_key(n, "png")))
                   for n in FIGURES},
                  snakemake.params.experiments)  # noqa: F821
