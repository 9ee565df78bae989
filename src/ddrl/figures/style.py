"""Figure style, one place for every figure: a headless backend, PDF (papers) and PNG
(report) written atomically at one resolution, the shared look (greyscale-readable
series, light grids), and tick labels that never overlap (:func:`thin_tick_labels`, applied
by :func:`save_figure`; :func:`overlapping_tick_labels` checks a drawn figure)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.backend_bases import RendererBase  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import FixedFormatter, FixedLocator  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from ddrl import atomic  # noqa: E402

DPI = 150
GRID_ALPHA = 0.3
# Space kept between two tick labels (points): PDF and PNG text metrics differ slightly.
TICK_LABEL_GAP_PT = 2.0


def _drawn(fig: plt.Figure) -> RendererBase:
    """Draw ``fig`` with Agg (a closed figure too) and return the renderer: tick positions and
    label texts are then those of the saved figure."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _drawn_tick_labels(axis: Axis, renderer: RendererBase,
                       minor: bool = False) -> list[tuple[int, Text, Bbox]]:
    """``(tick index, label, its box in pixels)`` of every label ``axis`` draws: visible, not
    empty, at a tick inside the view interval (the figure must have been drawn)."""
    if not (axis.axes.get_visible() and axis.get_visible()):
        return []
    locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
    ticks = axis.get_minor_ticks(len(locs)) if minor else axis.get_major_ticks(len(locs))
    lo, hi = sorted(axis.get_view_interval())
    slack = 1e-9 * (hi - lo)
    out = []
    for i, (loc, tick) in enumerate(zip(locs, ticks)):
        if not lo - slack <= loc <= hi + slack:
            continue
        for label in (tick.label1, tick.label2):
            if label.get_visible() and label.get_text().strip():
                out.append((i, label, label.get_window_extent(renderer)))
    return out


def _overlap(a: Bbox, b: Bbox, gap: float = 0.0) -> bool:
    """Whether boxes ``a`` and ``b`` come closer than ``gap`` pixels (overlap when 0)."""
    return (a.x0 < b.x1 + gap and b.x0 < a.x1 + gap
            and a.y0 < b.y1 + gap and b.y0 < a.y1 + gap)


def overlapping_tick_labels(fig: plt.Figure) -> list[tuple[str, str, str]]:
    """``(axes title and axis, label, label)`` for every two tick labels of one axis of
    ``fig`` whose rendered boxes overlap; empty when every axis is readable."""
    renderer = _drawn(fig)
    found = []
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _drawn_tick_labels(axis, renderer) + _drawn_tick_labels(axis, renderer, True)
            for j, (_, a, box_a) in enumerate(labels):
                for _, b, box_b in labels[j + 1:]:
                    if _overlap(box_a, box_b):
                        found.append((f"{ax.get_title()!r} {name}", a.get_text(), b.get_text()))
    return found


def _label_priority(text: str) -> int:
    """0 for a power of two (the usual worker grid: 1, 2, 4, ...), else 1."""
    try:
        value = float(text.replace("\N{MINUS SIGN}", "-"))
    except ValueError:
        return 1
    return 0 if value > 0 and math.log2(value).is_integer() else 1


def thin_tick_labels(fig: plt.Figure, gap_pt: float = TICK_LABEL_GAP_PT) -> None:
    """Blank the labels of fixed ticks (``set_xticks``) that would overlap another label,
    e.g. 15 beside 16 workers on a log axis: the tick stays, its label goes. Powers of two
    keep their labels first, then the others from the axis start. Call after the layout
    is final (``tight_layout``); :func:`save_figure` does."""
    renderer = _drawn(fig)
    gap = gap_pt * fig.dpi / 72
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not isinstance(axis.get_major_locator(), FixedLocator):
                continue
            labels = sorted(_drawn_tick_labels(axis, renderer),
                            key=lambda t: (_label_priority(t[1].get_text()), t[0]))
            kept: list[Bbox] = []
            dropped = set()
            for i, _, box in labels:
                if any(_overlap(box, k, gap) for k in kept):
                    dropped.add(i)
                else:
                    kept.append(box)
            if dropped:
                locs = axis.get_majorticklocs()
                texts = axis.get_major_formatter().format_ticks(locs)
                axis.set_major_formatter(FixedFormatter(
                    ["" if i in dropped else t for i, t in enumerate(texts)]))


def save_figure(fig: plt.Figure, pdf: str | Path, png: str | Path, dpi: int = DPI) -> None:
    """Write ``fig`` as PDF and PNG, each atomically, and close it. Tick labels that would
    overlap are thinned first (:func:`thin_tick_labels`)."""
    try:
        thin_tick_labels(fig)
        for target, fmt in ((pdf, "pdf"), (png, "png")):
            with atomic.atomic_path(target) as tmp:
                try:
                    fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight")
                except Exception as err:
                    # On a full disk matplotlib's PDF writer fails again in its cleanup
                    # (AttributeError: 'Stream' object has no attribute 'pos'), hiding
                    # the OSError; raise that one, which names the disk's problem.
                    if not isinstance(err, OSError) and isinstance(err.__context__, OSError):
                        raise err.__context__ from None
                    raise
    finally:
        plt.close(fig)
