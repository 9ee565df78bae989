"""Learning curves: mean episode return against env steps or training time, across seeds.

Saved through :mod:`ddrl.figures.style` (PDF and PNG, atomically)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

from ddrl.analysis.results import IDENTITY_KEYS
from ddrl.figures.style import plt, save_figure

GRID_POINTS = 60
X_LABELS = {
    "env_steps": "env steps",
    # Summed iteration times: training wall-clock without start-up and checkpoint writes.
    "time_total_s": "training wall-clock time (s)",
}


def on_common_grid(df: pd.DataFrame, x: str, y: str, by: list[str]) -> pd.DataFrame:
    """Interpolate each run's ``y`` onto a grid of ``x`` shared by its group.

    Seeds log at different env-step counts; a shared grid lets the mean and CI be taken
    pointwise. The grid ends where the shortest run of the group ends (no extrapolation).
    """
    out = []
    df = df.dropna(subset=[y])
    for keys, group in df.groupby(by, sort=True):
        end = group.groupby("run_id")[x].max().min()
        start = group.groupby("run_id")[x].min().max()
        if not np.isfinite(end) or end <= start:
            grid = np.array([end])
        else:
            grid = np.linspace(start, end, GRID_POINTS)
        for run_id, run in group.groupby("run_id"):
            run = run.sort_values(x)
            values = np.interp(grid, run[x].to_numpy(float), run[y].to_numpy(float))
            frame = pd.DataFrame({x: grid, y: values, "run_id": run_id})
            for k, v in zip(by, keys if isinstance(keys, tuple) else (keys,)):
                frame[k] = v
            out.append(frame)
    return pd.concat(out, ignore_index=True)


def reward_curves(progress: pd.DataFrame, pdf: str | Path, png: str | Path,
                  x: str = "env_steps", panel: str = "env", hue: str = "algorithm") -> pd.DataFrame:
    """Mean episode return against ``x``: mean and 95% CI across seeds.

    One panel per ``panel`` value, ``hue`` as colour and line style (readable in greyscale),
    and each configuration (experiment and ``config_id``: only seeds are pooled) a line of
    its own, labelled with its resources and experiment when there are several, and with
    its config id where those do not tell it apart: each series spans its own runs' full
    length. Returns the plotted data (one row per series and grid point, with ``series``
    and ``run_id``).
    """
    progress = progress.assign(**{k: "" for k in IDENTITY_KEYS if k not in progress})
    by = sorted({panel, hue, "resources", *IDENTITY_KEYS})
    data = on_common_grid(progress, x, "episode_return_mean", by)
    multi_res = data["resources"].nunique() > 1
    multi_exp = data["experiment"].nunique() > 1
    data["series"] = (data[hue] + (" | " + data["resources"] if multi_res else "")
                      + (" | " + data["experiment"] if multi_exp else ""))
    # Configurations that the label so far cannot tell apart: add their config id.
    alike = data.groupby([panel, "series"])["config_id"].transform("nunique") > 1
    data.loc[alike, "series"] += " | config " + data.loc[alike, "config_id"]
    panels = sorted(data[panel].unique())
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    # One colour, marker and dash per series across panels; each legend lists its own panel's.
    series = sorted(data["series"].unique())
    colours = dict(zip(series, sns.color_palette("colorblind", len(series))))
    markers = dict(zip(series, ["o", "X", "s", "P", "D", "^", "v", "*"] * 4))
    dashes = dict(zip(series, [(1, 0), (4, 2), (1, 1), (3, 1, 1, 1), (6, 2), (2, 2)] * 6))
    for ax, name in zip(axes[0], panels):
        sub = data[data[panel] == name]
        sns.lineplot(data=sub, x=x, y="episode_return_mean", hue="series", style="series",
                     hue_order=sorted(sub["series"].unique()),
                     style_order=sorted(sub["series"].unique()),
                     palette=colours, markers=markers, dashes=dashes,
                     errorbar=("ci", 95), n_boot=500, seed=0, markevery=10, ax=ax)
        ax.set_title(name)
        ax.set_xlabel(X_LABELS.get(x, x))
        ax.set_ylabel("mean episode return")
        ax.grid(alpha=0.3)
        ax.legend(title=None, fontsize=8)
    n_seeds = progress.groupby(by)["seed"].nunique().max()
    fig.suptitle(f"Reward curves (mean and 95% CI over up to {n_seeds} seed(s))", fontsize=11)
    fig.tight_layout()
    save_figure(fig, pdf, png)
    return data
