"""Snakemake script for rule tune: one adaptive search (resumes a killed one). Logic: ddrl.tune."""

from pathlib import Path

from ddrl.snakemake_io import log_to
from ddrl.study import Study
from ddrl.tune import run_tune

with log_to(snakemake.log[0]) as echo:  # noqa: F821
    study = Study.from_config(snakemake.config)  # noqa: F821
    search = next(s for s in study.searches if s.id == snakemake.wildcards.search_id)  # noqa: F821
    run_tune(search, Path(snakemake.output.trials).parent, snakemake.output.trials,  # noqa: F821
             print_fn=echo)
