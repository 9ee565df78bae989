"""No two tick labels of a figure overlap (issue 37): rendered with Agg, every visible tick
label's box (``get_window_extent``) is checked against the others of its axis. The study
below has what the default and thesis-mini studies draw (TD3, SAC and PPO at 1 and 2
runners, both update schedules; the thesis's published points, TD3's 15 and 16 workers and
SAC's 12 and 16 among them) and a TD3 grid at 1, 2, 4, 8, 15 and 16 runners."""

from __future__ import annotations

import pandas as pd
import pytest

from ddrl.analysis.scaling_stage import cost_stage, scaling_stage
from ddrl.figures import learning, scaling, style
from ddrl.figures.catalog import FIGURES
from ddrl.figures.stage import figures_stage
from ddrl.figures.style import overlapping_tick_labels
from helpers.scaling_fixtures import amdahl_time, write_run

OFF_POLICY = {"train_batch_size": 256, "timesteps_per_iteration": 1000}
SCHEDULES = {"rr": {**OFF_POLICY, "update_schedule": "rllib1_round_robin",
                    "rollout_fragment_length": 1},
             "fixed": {**OFF_POLICY, "update_schedule": "fixed_ratio"}}
WIDE_GRID = (1, 2, 4, 8, 15, 16)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Run folders and the scaling and cost tables of the study in the module docstring."""
    root = tmp_path_factory.mktemp("study")
    grids = [("TD3", WIDE_GRID), ("SAC", (1, 2))]
    dirs, hour = [], 0
    for algorithm, workers in grids:
        for name, hp in SCHEDULES.items():
            for n in workers:
                hour += 1
                dirs.append(write_run(
                    root, algorithm=algorithm, workers=n, hp=hp, steps_per_iter=1000,
                    times=[50.0] + [amdahl_time(n)] * 4, updates=[0] + [1000 // n] * 4,
                    tag=f"-{name}", started=f"2026-01-{1 + hour // 24:02d}T{hour % 24:02d}:00:00+00:00",
                    finished=f"2026-01-{1 + hour // 24:02d}T{hour % 24:02d}:30:00+00:00"))
    for n in (1, 2):
        dirs.append(write_run(root, workers=n, times=[50.0] + [amdahl_time(n)] * 4,
                              started=f"2026-02-01T0{n}:00:00+00:00",
                              finished=f"2026-02-01T0{n}:30:00+00:00"))
    tables = root / "tables"
    scaling_stage(dirs, tables, {"bootstrap": 50})
    cost_stage(dirs, tables / "cost", {"return_threshold": 50})
    return dirs, tables


def _saved_figures(monkeypatch) -> dict:
    """Every figure the figure modules save, by its PNG's stem (still saved as usual)."""
    saved = {}
    for module in (scaling, learning):
        def keep(fig, pdf, png, *args, _save=module.save_figure, **kwargs):
            _save(fig, pdf, png, *args, **kwargs)
            saved[png.stem] = fig
        monkeypatch.setattr(module, "save_figure", keep)
    return saved


def test_no_figure_has_overlapping_tick_labels(study, tmp_path, monkeypatch):
    dirs, tables = study
    saved = _saved_figures(monkeypatch)
    out = {n: (tmp_path / f"{n}.pdf", tmp_path / f"{n}.png") for n in FIGURES}
    figures_stage(dirs, tables, out)
    assert set(saved) == set(FIGURES)
    for name, fig in saved.items():
        assert overlapping_tick_labels(fig) == [], name
    # The 16-worker points keep their label; 15 (beside it on a log axis) gives its up.
    ticks = {t.get_text() for ax in saved["update_schedules"].axes for t in ax.get_xticklabels()}
    assert {"1", "2", "4", "8", "16"} <= ticks and "15" not in ticks


def test_the_check_sees_the_labels_of_15_and_16_workers_collide(study, tmp_path, monkeypatch):
    """Without thinning the same figures' 15 and 16 overlap: what the check above rules out."""
    _, tables = study
    monkeypatch.setattr(style, "thin_tick_labels", lambda fig: None)
    saved = _saved_figures(monkeypatch)
    schedules = pd.read_csv(tables / "update_schedules.csv", dtype={"note": str}).fillna({"note": ""})
    comparison = pd.read_csv(tables / "thesis_comparison.csv")
    scaling.update_schedule_figure(schedules, comparison, tmp_path / "u.pdf", tmp_path / "u.png")
    scaling.thesis_comparison_figure(comparison, tmp_path / "t.pdf", tmp_path / "t.png")
    for name in ("u", "t"):
        assert ("15", "16") in {(a, b) for _, a, b in overlapping_tick_labels(saved[name])}, name
