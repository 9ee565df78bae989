"""Grid search results: each trial's metric from its run folders, the leaderboard and
``best.yaml`` (the search space itself is :mod:`ddrl.study.search_space`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ddrl.study.search_space import Search, is_finite, trial_name
from ddrl.errors import DdrlError
from ddrl.runs import read_run

if TYPE_CHECKING:  # pandas: only when summarising (the workflow imports this to parse)
    from ddrl.analysis.tables import Column


# --------------------------------------------------------------------------- results


@dataclass
class TrialResult:
    """What the leaderboard needs of one trial (all its seeds together)."""

    trial: str
    values: dict[str, Any]
    metric: float
    env_steps: float
    wall_time_s: float
    iterations: int
    status: str
    runs: list[str] = field(default_factory=list)


def grid_results(search: Search, run_dirs: Mapping[str, str | Path]) -> list[TrialResult]:
    """Results of a grid search from its finished run folders (run id -> folder)."""
    by_trial: dict[int, list[tuple[str, Any]]] = {}
    values_of: dict[int, dict[str, Any]] = {}
    for index, values, spec in search.run_specs():
        values_of[index] = values
        by_trial.setdefault(index, []).append((spec.run_id, spec))
    out = []
    for index, members in by_trial.items():
        metrics, steps, wall, iters, runs = [], [], [], [], []
        for run_id, _spec in members:
            if run_id not in run_dirs:
                raise DdrlError(f"search {search.id}: no folder given for run {run_id}")
            record, progress = read_run(run_dirs[run_id])
            if search.metric.column not in progress.columns:
                raise DdrlError(
                    f"search {search.id}: run {run_id} does not record {search.metric.column!r} "
                    f"(its progress.csv has {', '.join(progress.columns)})"
                )
            metrics.append(search.metric.of_series(progress[search.metric.column]))
            result = record.get("result", {})
            steps.append(float(result.get("env_steps", math.nan)))
            wall.append(float(result.get("time_total_s", math.nan)))
            iters.append(int(result.get("iterations", len(progress))))
            runs.append(run_id)
        finite = [m for m in metrics if is_finite(m)]
        out.append(TrialResult(
            trial=trial_name(index), values=values_of[index],
            metric=sum(finite) / len(finite) if finite else math.nan,
            env_steps=sum(steps) / len(steps), wall_time_s=sum(wall),
            iterations=max(iters), status="complete" if finite else "no metric", runs=runs,
        ))
    return out


def leaderboard(search: Search, results: Sequence[TrialResult]):
    """Trials ranked by the metric (best first); trials without a metric come last."""
    import pandas as pd

    if not results:
        raise DdrlError(f"search {search.id}: no trials to rank")
    rows = []
    for r in results:
        row = {"trial": r.trial}
        for name in search.names:
            value = r.values.get(name)
            row[name] = json.dumps(value) if isinstance(value, (list, dict)) else value
        row.update(metric=r.metric, env_steps=r.env_steps, wall_time_s=round(r.wall_time_s, 2),
                   iterations=r.iterations, status=r.status, runs=" ".join(r.runs))
        rows.append(row)
    df = pd.DataFrame(rows)
    ascending = search.metric.mode == "min"
    df = df.sort_values(["metric", "trial"], ascending=[ascending, True], na_position="last",
                        kind="stable").reset_index(drop=True)
    df.insert(0, "rank", range(1, len(df) + 1))
    return df


def best_record(search: Search, board, results: Sequence[TrialResult]) -> dict[str, Any]:
    """The content of ``best.yaml``: the winner's full hyperparameters and how it was chosen."""
    from ddrl.algorithms import get_algorithm

    top = board.iloc[0]
    if not is_finite(top["metric"]):
        raise DdrlError(
            f"search {search.id}: no trial recorded a finite {search.metric.column!r}; "
            "train longer (more iterations with finished episodes) or pick another metric"
        )
    winner = next(r for r in results if r.trial == top["trial"])
    hp = get_algorithm(search.algorithm).resolve({**search.fixed, **winner.values})
    return {
        "search": search.id,
        "kind": search.kind,
        "algorithm": search.algorithm,
        "env": search.env,
        "metric": {"column": search.metric.column, "last": search.metric.last,
                   "mode": search.metric.mode, "value": float(top["metric"])},
        "trial": winner.trial,
        "trials": len(results),
        "runs": winner.runs,
        "searched": {k: _plain(v) for k, v in winner.values.items()},
        "hyperparameters": {k: _plain(v) for k, v in hp.items()},
    }


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def write_summary(search: Search, results: Sequence[TrialResult], *, csv: str | Path,
                  md: str | Path, best: str | Path, pdf: str | Path, png: str | Path) -> Any:
    """Leaderboard (CSV and Markdown), best.yaml and the per-parameter figure."""
    import yaml

    from ddrl import atomic

    from ddrl.analysis.tables import write_formats

    board = leaderboard(search, results)
    record = best_record(search, board, results)
    write_formats(board, leaderboard_columns(search), {"csv": csv, "md": md},
                  caption=leaderboard_caption(search, board))
    header = (f"# Best trial of search {search.id} ({search.kind}, {len(results)} trials), "
              f"by {search.metric.label}.\n# Use it in a training config with "
              f"`hyperparameters_from: <this file>`.\n")
    atomic.write_text(best, header + yaml.safe_dump(record, sort_keys=False))
    from ddrl.figures.search import parameter_figure  # matplotlib: only when summarising

    parameter_figure(search, board, pdf, png)
    return board


def leaderboard_columns(search: Search) -> list[Column]:
    """The leaderboard's shown columns; floats keep four significant digits."""
    from ddrl.analysis.tables import Column
    names = ["rank", "trial", *search.names, "metric", "env_steps", "wall_time_s", "status"]
    return [Column(name, name, float_format=".4g") for name in names]


def leaderboard_caption(search: Search, board) -> str:
    return (f"# Search {search.id}: {search.algorithm} on {search.env}\n\n"
            f"{search.kind} search, {len(board)} trials, ranked by {search.metric.label} "
            f"({search.metric.mode}).")
