"""Test helper: rewrite ddrl's outputs in a loop until killed.

``python atomic_writer.py OUT`` writes once; ``--serve`` forks writers on request (below). It writes, through the library's own writers,
progress.csv (ProgressLog), eval.json (atomic.write_json), returns.csv/.md (the returns
table) and curve.pdf/.png (plots.save_figure), over and over. The content is the same
every round, so a reader can tell a whole file from a torn one.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ddrl import atomic  # noqa: E402
from ddrl.agents.evaluate import write_returns_table  # noqa: E402
from ddrl.figures.style import save_figure  # noqa: E402
from ddrl.training.progress import COLUMNS, ProgressLog  # noqa: E402

ROWS = 4000


def progress_rows() -> list[dict]:
    return [{c: (i if c == "iteration" else round(math.sin(i + j), 6))
             for j, c in enumerate(COLUMNS)} for i in range(1, ROWS + 1)]


def eval_record(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    returns = rng.normal(100, 10, 500).round(4).tolist()
    return {"run_id": f"ppo-x-s{seed}", "algorithm": "PPO", "env": "CartPole-v1",
            "resources": "r1x1c1g0", "seed": seed, "episodes": len(returns),
            "return_mean": float(np.mean(returns)), "returns": returns}


def figure() -> plt.Figure:
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots(figsize=(8, 6))
    for k in range(20):
        ax.plot(np.cumsum(rng.normal(size=2000)), lw=0.5)
    return fig


_LOG: ProgressLog | None = None


def write_all(out: Path) -> None:
    global _LOG
    if _LOG is None:  # the same rows every round; only the writes repeat
        _LOG = ProgressLog(out / "unused.csv")
        _LOG.rows = progress_rows()
    _LOG.flush(out / "progress.csv")
    atomic.write_json(out / "eval.json", eval_record(1))
    write_returns_table([out / "eval.json"], out / "returns.csv", out / "returns.md")
    save_figure(figure(), out / "curve.pdf", out / "curve.png")


def serve() -> None:
    """Read target folders from stdin; for each, fork a child that writes there until killed.

    Prints the child's pid. Forking after the imports keeps each round cheap.
    """
    import os

    for line in sys.stdin:
        target = Path(line.strip())
        target.mkdir(parents=True, exist_ok=True)
        pid = os.fork()
        if pid == 0:
            while True:
                write_all(target)
        print(pid, flush=True)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve()
    else:
        write_all(Path(sys.argv[1]))
