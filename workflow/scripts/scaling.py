"""Snakemake script for rule scaling: speedup, breakdown, Amdahl, thesis and run tables."""

from pathlib import Path

from ddrl.analysis.scaling_stage import provenance_table, scaling_stage
from ddrl.snakemake_io import log_to

with log_to(snakemake.log[0]):  # noqa: F821
    run_dirs = [Path(p).parent for p in snakemake.input.runs]  # noqa: F821
    scaling_stage(run_dirs, Path(snakemake.output.speedup).parent, snakemake.params.settings,  # noqa: F821
                  snakemake.params.experiments)  # noqa: F821
    provenance_table(run_dirs, Path(snakemake.output.runs).with_suffix(""))  # noqa: F821
