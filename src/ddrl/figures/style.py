"""Figure style, one place for every figure: a headless backend, PDF (papers) and PNG
(report) written atomically at one resolution, and the shared look (greyscale-readable
series, light grids)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: jobs run without a display
import matplotlib.pyplot as plt  # noqa: E402

from ddrl import atomic  # noqa: E402

DPI = 150
GRID_ALPHA = 0.3


def save_figure(fig: plt.Figure, pdf: str | Path, png: str | Path, dpi: int = DPI) -> None:
    """Write ``fig`` as PDF and PNG, each atomically, and close it."""
    try:
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
