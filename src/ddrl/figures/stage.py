"""The workflow's scaling-figure stage: run folders and the scaling stage's tables in,
figures out (the drawing is :mod:`ddrl.figures.scaling`)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from ddrl import atomic

from ddrl.analysis.results import load_progress
from ddrl.figures import scaling as figs
from ddrl.figures.learning import reward_figures
from ddrl.figures.catalog import LEARNING_FIGURES

# Text columns of the tables (experiment names, identity hashes, notes), read back as text.
TEXT_COLUMNS = ("experiment", "config_id", "series_id", "hp", "grid", "note")


def reward_stage(run_dirs: Iterable[str | Path],
                 outputs: Mapping[str, tuple[str | Path, str | Path]],
                 experiments: Mapping[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """Figs 12-14 (rule plot_rewards): reward curves of the learning runs against env steps
    and wall-clock, each figure's plotted data next to it as CSV."""
    run_dirs = list(run_dirs)
    reward_outputs = {name: outputs[name] for name in LEARNING_FIGURES}
    if run_dirs:
        drawn = reward_figures(load_progress(run_dirs, experiments), reward_outputs)
    else:
        drawn = {}
        for name, (pdf, png) in reward_outputs.items():
            figs.empty_figure(pdf, png, "No learning experiment in this study "
                                        "(every experiment has purpose: timing).")
            drawn[name] = pd.DataFrame()
    _write_source_data(drawn, outputs)
    return drawn


def _write_source_data(drawn: Mapping[str, pd.DataFrame],
                       outputs: Mapping[str, tuple[str | Path, str | Path]]) -> None:
    for name, data in drawn.items():
        if data.columns.empty:  # the figure drew a message instead of data
            data = pd.DataFrame({"note": ["nothing to plot: the figure says why"]})
        atomic.write_text(source_data_path(outputs[name][1]), data.to_csv(index=False))


def figures_stage(run_dirs: Iterable[str | Path], tables_dir: str | Path,
                  outputs: Mapping[str, tuple[str | Path, str | Path]],
                  experiments: Mapping[str, str] | None = None) -> None:
    """Draw the figures named in ``outputs`` (a figure stem -> (pdf, png)).

    The scaling figures read the tables in ``tables_dir``; the reward curves, when asked
    for, the learning runs ``run_dirs`` (``experiments`` maps their ids to experiment names;
    see :func:`reward_stage`). Each figure's plotted data goes next to it as ``<name>.csv``
    (its source data)."""
    run_dirs = list(run_dirs)
    drawn: dict[str, pd.DataFrame] = {}
    tables_dir = Path(tables_dir)

    def read(name: str) -> pd.DataFrame:
        table = pd.read_csv(tables_dir / f"{name}.csv", keep_default_na=True,
                            dtype={c: str for c in TEXT_COLUMNS})
        # Text stays text: a hash such as "12345678" is not a number, nor "" a missing value.
        return table.fillna({c: "" for c in TEXT_COLUMNS if c in table})

    speedup, breakdown, amdahl = read("speedup"), read("breakdown"), read("amdahl")
    if any(name in outputs for name in LEARNING_FIGURES):
        reward_stage(run_dirs, outputs, experiments)
    drawn["fig15-20_iteration_time"] = figs.iteration_time_figure(
        speedup, amdahl, *outputs["fig15-20_iteration_time"])
    drawn["fig15-20_speedup"] = figs.speedup_figure(speedup, amdahl, *outputs["fig15-20_speedup"])
    drawn["fig21-22_breakdown"] = figs.breakdown_figure(breakdown, *outputs["fig21-22_breakdown"])
    drawn["cost_pareto"] = figs.cost_pareto_figure(read("cost"), *outputs["cost_pareto"])
    drawn["thesis_comparison"] = figs.thesis_comparison_figure(read("thesis_comparison"),
                                                               *outputs["thesis_comparison"])
    drawn["update_schedules"] = figs.update_schedule_figure(
        read("update_schedules"), read("thesis_comparison"), *outputs["update_schedules"])
    _write_source_data(drawn, outputs)


def source_data_path(png: str | Path) -> Path:
    """Where a figure's plotted data goes: next to its PNG, as CSV."""
    return Path(png).with_suffix(".csv")
