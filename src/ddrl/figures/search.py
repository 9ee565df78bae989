"""A search's figure: the metric of every trial against each searched hyperparameter."""

from __future__ import annotations

import json
from pathlib import Path

from ddrl.study.search_space import Search, is_finite


def parameter_figure(search: Search, board, pdf: str | Path, png: str | Path) -> None:
    """One panel per searched hyperparameter: the metric of every trial against its value."""
    import numpy as np

    from ddrl.figures.style import plt, save_figure

    dims = search.dimensions
    fig, axes = plt.subplots(1, len(dims), figsize=(3.6 * len(dims), 3.4), squeeze=False,
                             sharey=True)
    metric = board["metric"].astype(float)
    best = board.iloc[0]
    for ax, dim in zip(axes[0], dims):
        if dim.is_range:
            x = board[dim.name].astype(float)
            ax.scatter(x, metric, s=28, color="0.35", label="trial")
            if is_finite(best["metric"]):
                ax.scatter([float(best[dim.name])], [best["metric"]], s=90, marker="*",
                           color="tab:red", label="best", zorder=3)
            if dim.kind == "loguniform":
                ax.set_xscale("log")
        else:
            labels = [json.dumps(v) if isinstance(v, (list, dict)) else str(v) for v in dim.values]
            pos = {label: i for i, label in enumerate(labels)}
            col = board[dim.name].map(lambda v: v if isinstance(v, str) and v.startswith("[")
                                      else str(v))
            jitter = np.random.default_rng(0).uniform(-0.08, 0.08, len(board))
            x = col.map(pos).astype(float) + jitter
            ax.scatter(x, metric, s=28, color="0.35", label="trial")
            if is_finite(best["metric"]):
                ax.scatter([x.iloc[0]], [best["metric"]], s=90, marker="*",
                           color="tab:red", label="best", zorder=3)
            ax.set_xticks(range(len(labels)), labels, rotation=30 if len(labels) > 3 else 0,
                          fontsize=8)
            ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_xlabel(dim.name)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(search.metric.label)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{search.id}: {search.kind} search, {len(board)} trials "
                 f"({search.metric.mode} is better)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, pdf, png)
