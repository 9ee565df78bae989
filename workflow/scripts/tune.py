"""Snakemake script for rule tune: one adaptive search (resumes a killed one). Logic: ddrl.search.tune.
A search with ``tune: {nodes: N > 1}`` (Slurm profile) first gets a Ray cluster over its
job's nodes (ddrl.search.tune.tune_cluster)."""

from pathlib import Path

from ddrl.snakemake_io import log_to
from ddrl.study.study import Study
from ddrl.search.tune import run_tune, tune_cluster

with log_to(snakemake.log[0]) as echo:  # noqa: F821
    study = Study.from_config(snakemake.config)  # noqa: F821
    search = next(s for s in study.searches if s.id == snakemake.wildcards.search_id)  # noqa: F821
    search_dir = Path(snakemake.output.trials).parent  # noqa: F821
    with tune_cluster(search, search_dir, print_fn=echo) as address:
        run_tune(search, search_dir, snakemake.output.trials,  # noqa: F821
                 ray_address=address, print_fn=echo)
