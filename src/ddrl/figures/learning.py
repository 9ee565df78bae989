"""Learning curves: mean episode return against env steps or training time, across seeds,
with the thesis's published returns as reference markers (thesis Figs 12-14).

Saved through :mod:`ddrl.figures.style` (PDF and PNG, atomically)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

from ddrl.analysis.results import IDENTITY_KEYS
from ddrl.analysis.thesis_returns import thesis_returns
from ddrl.figures.style import plt, save_figure

GRID_POINTS = 60
# The run_id of the thesis's reference points in a figure's plotted data.
THESIS_RUN_ID = "thesis"
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


def thesis_reference_points(tasks: pd.DataFrame) -> pd.DataFrame:
    """The thesis's published best return (thesis section 6.1) for each ``task`` row of
    ``tasks`` (columns task, algorithm, env) that the thesis trained: one point per task at
    the env steps where the thesis reached it, labelled with its caveat."""
    thesis = thesis_returns()
    points = tasks.drop_duplicates("task").merge(thesis, on=["algorithm", "env"])
    return pd.DataFrame({
        "task": points["task"], "env_steps": points["env_steps_at_best"].astype(float),
        "episode_return_mean": points["best_return"].astype(float),
        "series": "thesis (RLlib 1.1, 1 seed): best return",
        "caveat": points["caveat"]})


def reward_figures(progress: pd.DataFrame,
                   outputs: dict[str, tuple[Path, Path]]) -> dict[str, pd.DataFrame]:
    """Figs 12-14: one panel per algorithm and env, against env steps (with the thesis's
    published best returns as markers) and against training time (the thesis's wall-clock
    is not comparable: no markers). Returns each figure's plotted data by name."""
    # One panel per algorithm and env: returns of different envs do not share a scale.
    progress = progress.assign(task=progress["algorithm"] + " on " + progress["env"])
    reference = thesis_reference_points(progress[["task", "algorithm", "env"]])
    drawn = {}
    for name, x, ref in (("fig12-14_reward_curves", "env_steps", reference),
                         ("fig12-14_reward_curves_wallclock", "time_total_s", None)):
        pdf, png = outputs[name]
        drawn[name] = reward_curves(progress, pdf, png, x=x, panel="task", hue="algorithm",
                                    reference=ref)
    return drawn


def reward_curves(progress: pd.DataFrame, pdf: str | Path, png: str | Path,
                  x: str = "env_steps", panel: str = "env", hue: str = "algorithm",
                  reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean episode return against ``x``: mean and 95% CI across seeds.

    One panel per ``panel`` value, ``hue`` as colour and line style (readable in greyscale),
    and each configuration (experiment and ``config_id``: only seeds are pooled) a line of
    its own, labelled with its resources and experiment when there are several, and with
    its config id where those do not tell it apart: each series spans its own runs' full
    length. ``reference`` (columns ``panel``, ``x``, episode_return_mean, series) adds
    published points as black stars on their panels. Returns the plotted data (one row per
    series and grid point, with ``series`` and ``run_id``; reference points follow with
    ``run_id`` "thesis").
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
        if reference is not None:
            _draw_reference(ax, reference[reference[panel] == name], x)
        ax.set_title(name)
        ax.set_xlabel(X_LABELS.get(x, x))
        ax.set_ylabel("mean episode return")
        ax.grid(alpha=0.3)
        # Rising curves leave the lower right empty; the reference line sits at the top.
        ax.legend(title=None, fontsize=8, loc="lower right" if reference is not None else "best")
    n_seeds = progress.groupby(by)["seed"].nunique().max()
    fig.suptitle(f"Reward curves (mean and 95% CI over up to {n_seeds} seed(s))", fontsize=11)
    fig.tight_layout()
    save_figure(fig, pdf, png)
    if reference is not None and not reference.empty:
        data = pd.concat([data, reference.assign(run_id=THESIS_RUN_ID)], ignore_index=True)
    return data


def _draw_reference(ax, points: pd.DataFrame, x: str) -> None:
    """Each published point as a dotted line at its return, labelled with where the thesis
    reached it, and as a star where it lies on the panel's env-step axis (up to twice the
    runs' length, so that a 3e8-step point does not squash a 1e6-step curve)."""
    x_max = ax.get_xlim()[1]
    for _, row in points.iterrows():
        y = row["episode_return_mean"]
        ax.axhline(y, color="black", linestyle=":", linewidth=1.0, zorder=4,
                   label=f"{row['series']} {y:.0f} at {row[x]:,.0f} env steps")
        if row[x] <= 2 * x_max:
            ax.scatter([row[x]], [y], marker="*", s=160, color="black", zorder=5)
