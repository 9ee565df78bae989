"""The workflow's scaling-figure stage: run folders and the scaling stage's tables in,
figures out (the drawing is :mod:`ddrl.figures.scaling`)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from ddrl.analysis.results import load_progress
from ddrl.figures import scaling as figs


def figures_stage(run_dirs: Iterable[str | Path], tables_dir: str | Path,
                  outputs: Mapping[str, tuple[str | Path, str | Path]],
                  experiments: Mapping[str, str] | None = None) -> None:
    """Draw every scaling-study figure; ``outputs`` maps a figure stem to (pdf, png).

    ``run_dirs`` are the learning runs (reward curves; ``experiments`` maps their ids to
    experiment names); the scaling figures read the tables in ``tables_dir``."""
    run_dirs = list(run_dirs)
    tables_dir = Path(tables_dir)

    def read(name: str) -> pd.DataFrame:
        return pd.read_csv(tables_dir / f"{name}.csv", keep_default_na=True)

    speedup, breakdown, amdahl = read("speedup"), read("breakdown"), read("amdahl")
    for df in (speedup, breakdown, amdahl):
        if "note" in df:
            df["note"] = df["note"].fillna("")
    reward_outputs = {k: outputs[k] for k in ("fig12-14_reward_curves",
                                              "fig12-14_reward_curves_wallclock")}
    if run_dirs:
        figs.reward_figures(load_progress(run_dirs, experiments), reward_outputs)
    else:
        for pdf, png in reward_outputs.values():
            figs.empty_figure(pdf, png, "No learning experiment in this study "
                                        "(every experiment has purpose: timing).")
    figs.iteration_time_figure(speedup, amdahl, *outputs["fig15-20_iteration_time"])
    figs.speedup_figure(speedup, amdahl, *outputs["fig15-20_speedup"])
    figs.breakdown_figure(breakdown, *outputs["fig21-22_breakdown"])
    cost = read("cost")
    cost["note"] = cost["note"].fillna("")
    figs.cost_pareto_figure(cost, *outputs["cost_pareto"])
    figs.thesis_comparison_figure(read("thesis_comparison"), *outputs["thesis_comparison"])
    schedules = read("update_schedules")
    schedules["note"] = schedules["note"].fillna("")
    figs.update_schedule_figure(schedules, read("thesis_comparison"), *outputs["update_schedules"])
