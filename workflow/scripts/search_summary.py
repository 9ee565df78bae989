"""Snakemake script for rule search_summary: leaderboard, best.yaml and figure of a search."""

from pathlib import Path

from ddrl.search.grid import grid_results, write_summary
from ddrl.snakemake_io import log_to
from ddrl.study.study import Study
from ddrl.search.tune import read_trials

with log_to(snakemake.log[0]) as echo:  # noqa: F821
    study = Study.from_config(snakemake.config)  # noqa: F821
    search = next(s for s in study.searches if s.id == snakemake.wildcards.search_id)  # noqa: F821
    if search.kind == "tune":
        results = read_trials(search, snakemake.input.trials)  # noqa: F821
    else:
        runs = {Path(p).parent.name: Path(p).parent for p in snakemake.input.runs}  # noqa: F821
        results = grid_results(search, runs)
    out = snakemake.output  # noqa: F821
    board = write_summary(search, results, csv=out.csv, md=out.md, best=out.best,
                          pdf=out.pdf, png=out.png)
    echo(board.to_string(index=False))
