"""The scaling study's figures, named after the thesis figures they reproduce.

Every figure reads in greyscale: series differ by marker, fill and line style, not only by
colour; bars differ by hatch. Axes carry units. Inputs are the tables of
:mod:`ddrl.analysis.scaling` and :mod:`ddrl.analysis.cost` (DataFrames), so a figure can be redrawn from the
CSVs alone.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from matplotlib.ticker import NullFormatter, ScalarFormatter

# The figure names live in ddrl.figures.catalog: the workflow imports them without matplotlib.
from ddrl.figures.catalog import CATEGORY, FIGURES, output_key  # noqa: F401
from ddrl.figures.style import plt, save_figure
from ddrl.analysis.scaling import PARTS, amdahl_curve


SERIES_STYLE = {  # gpu flag -> style
    0: {"color": "black", "marker": "o", "linestyle": "-", "mfc": "black", "label": "CPU only"},
    1: {"color": "0.45", "marker": "s", "linestyle": "--", "mfc": "white", "label": "GPU learner"},
}
PART_STYLE = {  # breakdown part -> (grey level, hatch)
    "sampling": ("0.25", "///"),
    "learning": ("0.55", "..."),
    "weight sync": ("0.8", "xx"),
    "replay buffer": ("0.95", "\\\\"),
    "other": ("1.0", ""),
}


# What makes one scaling series (one panel): the experiment and the settings but resources
# (ddrl.analysis.scaling.BASELINE_KEYS); tables without a series id fall back to ``hp``.
SERIES_COLUMNS = ("experiment", "series_id")


def _series_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in SERIES_COLUMNS if c in table] or [c for c in ("hp",) if c in table]


def _panels(table: pd.DataFrame, keys=("algorithm", "env")) -> list[tuple[tuple, pd.DataFrame]]:
    """One panel per series, keyed ``(algorithm, env, experiment, tag)``: ``tag`` is the series
    id (or hp key) where algorithm, env and experiment do not tell two panels apart, else ""."""
    series = _series_columns(table)
    tag_column = next((c for c in series if c != "experiment"), None)
    panels = []
    for _, group in table.groupby([*keys, *series], sort=True, dropna=False):
        first = group.iloc[0]
        experiment = first.get("experiment", "")
        panels.append(((*(first[k] for k in keys), "" if pd.isna(experiment) else experiment),
                       str(first[tag_column]) if tag_column else "", group))
    shared = Counter(base for base, _, _ in panels)
    return [((*base, tag if shared[base] > 1 else ""), group) for base, tag, group in panels]


def _title(key: tuple, group: pd.DataFrame | None = None, suffix: str = "") -> str:
    """``algo on env[, schedule]suffix``; the experiment and, where needed, the series tag
    on a second line."""
    algo, env, experiment, tag = key
    title = f"{algo} on {env}"
    schedules = sorted(set(group["update_schedule"])) if group is not None and \
        "update_schedule" in group else []
    if len(schedules) == 1 and schedules[0] != "on_policy":
        title += f", {schedules[0]}"
    second = _series_label(experiment, tag)
    return title + suffix + (f"\n{second}" if second else "")


def _series_label(experiment: str, tag: str) -> str:
    """Which series a panel shows: its experiment, and its series tag where one is needed."""
    return ", ".join(filter(None, [experiment, f"series {tag}" if tag else ""]))


def _grid(n: int, width: float = 5.0, height: float = 4.0):
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _panel_figure(panels: list, draw, suptitle: str, pdf, png, **grid) -> None:
    """One figure, a panel per ``(key, group)`` of ``panels``: ``draw(ax, key, group)`` plots
    a panel and returns how to label it (:func:`_label_panel`'s keywords); the title over
    all panels, the layout and the saved files are the same for every scaling figure."""
    fig, axes = _grid(len(panels), **grid)
    for ax, (key, group) in zip(axes, panels):
        _label_panel(ax, **draw(ax, key, group))
    fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    save_figure(fig, pdf, png)


def _label_panel(ax, *, xlabel: str, ylabel: str, title: str, loglog: bool = False,
                 ticks=None, title_size: float | None = None, grid: dict | None = None,
                 legend_size: float = 7) -> None:
    """A panel's axes: log-log with worker-count ``ticks`` where asked, labels, title, grid
    (all ticks unless ``grid`` says otherwise) and legend."""
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    if ticks is not None:
        _worker_ticks(ax, ticks)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    ax.grid(alpha=0.3, **({"which": "both"} if grid is None else grid))
    ax.legend(fontsize=legend_size)


def empty_figure(pdf, png, message: str) -> None:
    """A figure that says, in words, why there is nothing to plot."""
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontsize=10)
    save_figure(fig, pdf, png)


def _worker_ticks(ax, workers) -> None:
    """Worker counts as plain x labels; plain numbers on a log y axis too."""
    ticks = sorted({int(w) for w in workers})
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.minorticks_off()
    if ax.get_yscale() == "log":
        formatter = ScalarFormatter()
        formatter.set_scientific(False)
        ax.yaxis.set_major_formatter(formatter)
        ax.yaxis.set_minor_formatter(NullFormatter())


def _fit_row(amdahl: pd.DataFrame, group: pd.DataFrame, gpu: int):
    """The Amdahl fit of ``group``'s series (a panel of the speedup table) and ``gpu``."""
    if amdahl is None or amdahl.empty:
        return None
    m = amdahl[amdahl["gpu"] == gpu]
    for k in ["algorithm", "env", *_series_columns(group)]:
        if k in m:
            value = group[k].iloc[0]  # a table read back without fillna has NaN for ""
            m = m[m[k].isna()] if pd.isna(value) else m[m[k] == value]
    m = m[np.isfinite(m["serial_s"].astype(float))]
    return m.iloc[0] if len(m) else None


def iteration_time_figure(speedup: pd.DataFrame, amdahl: pd.DataFrame, pdf, png) -> pd.DataFrame:
    """Median steady-state iteration time vs workers, log-log, IQR bars, ideal 1/n, Amdahl fit."""
    data = speedup[np.isfinite(speedup["iter_time_s"].astype(float))]
    if data.empty:
        empty_figure(pdf, png, "No configuration has steady-state iterations to plot.")
        return pd.DataFrame()

    def draw(ax, key, group) -> dict:
        top = group["workers"].max()
        for gpu, series in group.groupby("gpu"):
            series = series.sort_values("workers")
            st = SERIES_STYLE[int(gpu)]
            yerr = np.vstack([series["iter_time_s"] - series["iter_time_q1_s"],
                              series["iter_time_q3_s"] - series["iter_time_s"]])
            ax.errorbar(series["workers"], series["iter_time_s"], yerr=yerr, color=st["color"],
                        marker=st["marker"], mfc=st["mfc"], linestyle="none", capsize=3,
                        label=f"{st['label']} (median, IQR)")
            fit = _fit_row(amdahl, group, int(gpu))
            if fit is not None:
                n = np.geomspace(1, 4 * top, 100)
                ax.plot(n, amdahl_curve(fit, n), color=st["color"], linestyle=st["linestyle"],
                        lw=1, label=f"{st['label']} Amdahl fit, f = {fit['serial_fraction']:.2f}")
        base = group[(group["workers"] == 1) & (group["gpu"] == 0)]
        if len(base):
            n = np.geomspace(1, 4 * top, 50)
            ax.plot(n, base["iter_time_s"].iloc[0] / n, color="0.6", linestyle=":", lw=1.2,
                    label="ideal 1/n (from 1 runner, CPU)")
        return dict(loglog=True, ticks=list(group["workers"]) + [2 * top, 4 * top],
                    xlabel="env runners (workers)", ylabel="iteration time (s), steady state",
                    title=_title(key, group))

    _panel_figure(_panels(data), draw,
                  "Training iteration time by number of workers (thesis Figs 15-20)", pdf, png)
    return data


def speedup_figure(speedup: pd.DataFrame, amdahl: pd.DataFrame, pdf, png) -> pd.DataFrame:
    """Speedup vs workers with its 95% bootstrap interval, the ideal line and the Amdahl fit."""
    data = speedup[np.isfinite(speedup["speedup"].astype(float))]
    if data.empty:
        notes = sorted(set(speedup["note"].dropna()) - {""})
        empty_figure(pdf, png, "No speedup to plot.\n" + "\n".join(notes[:4]))
        return pd.DataFrame()
    # A series measured at one worker count has no speedup curve: no panel for it.
    panels = [(key, group) for key, group in _panels(data) if group["workers"].nunique() > 1]
    if not panels:
        empty_figure(pdf, png, "No speedup to plot: every series ran with a single worker count.")
        return pd.DataFrame()
    data = pd.concat([group for _, group in panels])

    def draw(ax, key, group) -> dict:
        top = group["workers"].max()
        base = group[(group["workers"] == 1) & (group["gpu"] == 0)]["iter_time_s"]
        for gpu, series in group.groupby("gpu"):
            series = series.sort_values("workers")
            st = SERIES_STYLE[int(gpu)]
            yerr = np.vstack([series["speedup"] - series["speedup_ci_low"],
                              series["speedup_ci_high"] - series["speedup"]])
            yerr = np.nan_to_num(np.clip(yerr, 0, None))
            ax.errorbar(series["workers"], series["speedup"], yerr=yerr, color=st["color"],
                        marker=st["marker"], mfc=st["mfc"], linestyle="none", capsize=3,
                        label=f"{st['label']} (95% CI)")
            fit = _fit_row(amdahl, group, int(gpu))
            if fit is not None and len(base):
                n = np.geomspace(1, 4 * top, 100)
                ax.plot(n, base.iloc[0] / amdahl_curve(fit, n), color=st["color"],
                        linestyle=st["linestyle"], lw=1, label=f"{st['label']} Amdahl fit")
        n = np.geomspace(1, 4 * top, 20)
        ax.plot(n, n, color="0.6", linestyle=":", lw=1.2, label="ideal (speedup = workers)")
        return dict(loglog=True, ticks=list(group["workers"]) + [2 * top, 4 * top],
                    xlabel="env runners (workers)", ylabel="speedup vs 1 runner, CPU (x)",
                    title=_title(key, group))

    _panel_figure(panels, draw, "Speedup by number of workers", pdf, png)
    return data


def breakdown_figure(breakdown: pd.DataFrame, pdf, png) -> pd.DataFrame:
    """Stacked bars: median seconds per iteration by task, per worker count, CPU and GPU."""
    data = breakdown[np.isfinite(breakdown["sampling_share"].astype(float))]
    if data.empty:
        notes = sorted(set(breakdown["note"].dropna()) - {""})
        empty_figure(pdf, png, "No timer breakdown to plot.\n" + "\n".join(notes[:4]))
        return pd.DataFrame()
    panels = [((*k, gpu), g) for k, grp in _panels(data) for gpu, g in grp.groupby("gpu")]
    parts = [p for p in list(PARTS.values()) + ["other"]]

    def draw(ax, key, group) -> dict:
        group = group.sort_values("workers")
        x = np.arange(len(group))
        bottom = np.zeros(len(group))
        for part in parts:
            col = part.replace(" ", "_")
            # Shares of the summed steady-state time, scaled to the median iteration time.
            secs = np.clip(group[f"{col}_share"].to_numpy(float), 0, None) * group["iter_time_s"].to_numpy(float)
            if not np.any(secs > 0):
                continue
            grey, hatch = PART_STYLE[part]
            ax.bar(x, secs, bottom=bottom, color=grey, hatch=hatch, edgecolor="black",
                   linewidth=0.6, label=part)
            bottom += secs
        ax.set_xticks(x)
        ax.set_xticklabels(group["workers"].astype(int).astype(str))
        return dict(xlabel="env runners (workers)", ylabel="time per iteration (s)",
                    title=_title(key[:-1], suffix=", GPU learner" if key[-1] else ", CPU only"),
                    title_size=10, grid={"axis": "y"})

    _panel_figure(panels, draw, "Training iteration time by task (thesis Figs 21-22)", pdf, png,
                  width=5.0, height=4.0)
    return data


def cost_pareto_figure(cost: pd.DataFrame, pdf, png) -> pd.DataFrame:
    """Time against cost to reach each env's return threshold; the Pareto front joined."""
    ok = cost[np.isfinite(cost["time_to_threshold_s"].astype(float))]
    if ok.empty:
        lines = [f"{r.algorithm} {r.env} {r.config}: {r.note}" for r in cost.itertuples()][:6]
        empty_figure(pdf, png, "No configuration reached its return threshold.\n" + "\n".join(lines))
        return pd.DataFrame()
    currency = cost["currency"].iloc[0]

    def draw(ax, key, group) -> dict:
        for gpu, series in group.groupby("gpu"):
            st = SERIES_STYLE[int(gpu)]
            ax.scatter(series["time_to_threshold_s"], series["cost_to_threshold"],
                       color=st["color"], marker=st["marker"], facecolors=st["mfc"],
                       edgecolors=st["color"], s=40, label=st["label"], zorder=3)
        front = group[group["pareto"]].sort_values("time_to_threshold_s")
        ax.plot(front["time_to_threshold_s"], front["cost_to_threshold"], color="black",
                lw=1, linestyle="-", label="Pareto front", zorder=2)
        for r in group.itertuples():
            ax.annotate(r.config, (r.time_to_threshold_s, r.cost_to_threshold), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
        thr = group["return_threshold"].iloc[0]
        return dict(xlabel=f"training time to mean return {thr:g} (s)",
                    ylabel=f"cost to reach it ({currency}, example prices)",
                    title=_title(key, group), grid={})

    _panel_figure(_panels(ok), draw, "Time and cost to reach the return threshold", pdf, png)
    return ok


def thesis_comparison_figure(comparison: pd.DataFrame, pdf, png) -> pd.DataFrame:
    """Per algorithm: the thesis's speedups (open) and ours (filled), CPU and GPU."""
    panels = [(algo, comparison[comparison["algorithm"] == algo])
              for algo in sorted(comparison["algorithm"].unique())]

    def draw(ax, algo, group) -> dict:
        for gpu, series in group.groupby("gpu"):
            series = series.sort_values("workers")
            st = SERIES_STYLE[int(gpu)]
            ax.plot(series["workers"], series["thesis_speedup"], color=st["color"],
                    marker=st["marker"], mfc="white", linestyle=st["linestyle"], lw=0.8,
                    label=f"thesis, {st['label']}")
            ours = series[np.isfinite(series["speedup"].astype(float))]
            if len(ours):
                ax.plot(ours["workers"], ours["speedup"], color=st["color"], marker=st["marker"],
                        mfc=st["color"], ms=8, linestyle="none", label=f"ddrl, {st['label']}")
        top = group["workers"].max()
        n = np.geomspace(1, top, 20)
        ax.plot(n, n / group["reference"].str.extract(r"(\d+)")[0].astype(float).iloc[0],
                color="0.6", linestyle=":", lw=1.2, label="ideal")
        return dict(loglog=True, ticks=group["workers"], xlabel="workers",
                    ylabel=f"speedup vs {group['reference'].iloc[0]} (x)",
                    title=f"{algo}: this study vs the thesis")

    _panel_figure(panels, draw, "Speedups compared with the thesis (hardware differs: compare "
                  "curves, not seconds)", pdf, png)
    return comparison


SCHEDULE_STYLE = {  # update_schedules.csv column -> (label, style)
    "rr_speedup": ("thesis semantics (rllib1_round_robin): iteration-time speedup",
                   {"color": "black", "marker": "o", "mfc": "black", "linestyle": "-"}),
    "fewer_updates": ("  of which: fewer updates per iteration",
                      {"color": "0.5", "marker": "v", "mfc": "white", "linestyle": "--"}),
    "per_update_speedup": ("  of which: parallel sampling and learning",
                           {"color": "0.5", "marker": "^", "mfc": "0.5", "linestyle": "-."}),
    "fixed_speedup": ("fixed_ratio (ddrl): env steps/s speedup",
                      {"color": "black", "marker": "s", "mfc": "white", "linestyle": ":"}),
}


def update_schedule_figure(schedules: pd.DataFrame, comparison: pd.DataFrame, pdf,
                           png) -> pd.DataFrame:
    """Per algorithm, env and learner: the speedup under the thesis's update schedule, its
    two factors, the fixed-ratio speedup of the same grid and the thesis's published one.

    Returns the points drawn (panel, series, workers, speedup), so tests can check them."""
    drawn: list[dict] = []
    data = schedules[np.isfinite(schedules["rr_speedup"].astype(float))]
    if data.empty:
        empty_figure(pdf, png, "No off-policy grid was measured under the rllib1_round_robin "
                         "update schedule with its 1-runner baseline.")
        return pd.DataFrame(drawn, columns=["panel", "series", "workers", "speedup"])
    # One panel per series (its experiment and settings) and learner.
    panels = [((*key, gpu), g) for key, grp in _panels(data) for gpu, g in grp.groupby("gpu")]
    names = Counter((algo, env, gpu) for (algo, env, _, _, gpu), _ in panels)

    def draw(ax, key, group) -> dict:
        algo, env, experiment, tag, gpu = key
        group = group.sort_values("workers")
        panel = f"{algo} on {env}" + (", GPU learner" if gpu else "")
        if names[algo, env, gpu] > 1:  # several series of this task: name which one
            panel += f" ({_series_label(experiment, tag)})"
        drawn.extend(_schedule_series(ax, panel, group))
        thesis = comparison[(comparison["algorithm"] == algo) & (comparison["gpu"] == gpu)]
        if len(thesis) and env == "HumanoidBulletEnv-v0":
            ax.plot(thesis["workers"], thesis["thesis_speedup"], color="0.3", marker="D",
                    mfc="none", linestyle="none", label="thesis, published (RLlib 1.1)")
            drawn.extend({"panel": panel, "series": "thesis", "workers": int(w), "speedup": float(v)}
                         for w, v in zip(thesis["workers"], thesis["thesis_speedup"]))
        top = max(group["workers"].max(), thesis["workers"].max() if len(thesis) else 1)
        n = np.geomspace(1, top, 20)
        ax.plot(n, n, color="0.7", linestyle=":", lw=1, label="ideal (speedup = workers)")
        return dict(loglog=True, ticks=list(group["workers"])
                    + list(thesis["workers"]) * (env == "HumanoidBulletEnv-v0"),
                    xlabel="env runners (workers)", ylabel="speedup vs 1 runner (x)",
                    title=_title((algo, env, experiment, tag), suffix=", GPU learner" if gpu else ""),
                    legend_size=6)

    _panel_figure(panels, draw, "Off-policy speedup: the thesis's update schedule vs a fixed "
                  "update ratio", pdf, png)
    return pd.DataFrame(drawn)


def _schedule_series(ax, panel: str, group: pd.DataFrame) -> list[dict]:
    """The schedule comparison's series (:data:`SCHEDULE_STYLE`) in one panel, with their
    intervals where the table has them; returns the points drawn."""
    drawn = []
    for col, (label, st) in SCHEDULE_STYLE.items():
        y = group[col].astype(float)
        ok = np.isfinite(y)
        if not ok.any():
            continue
        yerr = None
        if f"{col}_ci_low" in group:
            lo, hi = group[f"{col}_ci_low"].astype(float), group[f"{col}_ci_high"].astype(float)
            yerr = np.nan_to_num(np.clip(np.vstack([y - lo, hi - y])[:, ok], 0, None))
        ax.errorbar(group["workers"][ok], y[ok], yerr=yerr, capsize=3, lw=1, label=label, **st)
        drawn += [{"panel": panel, "series": col, "workers": int(w), "speedup": float(v)}
                  for w, v in zip(group["workers"][ok], y[ok])]
    return drawn
