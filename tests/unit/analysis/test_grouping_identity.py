"""Runs are seeds of one configuration only when they differ in nothing but the seed (the
run id's hash inputs without the seed: ``config_id``). Two experiments that differ in one
hyperparameter and ran the same seed are two rows of 1 seed each in every table, with the
experiment named, and two series in the figures (issue 37). Without experiment names, runs
that differ in a setting no table shows still get rows of their own and a Config column."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ddrl.agents.evaluate import write_returns_table
from ddrl.analysis.results import load_progress
from ddrl.analysis.scaling_stage import cost_stage, scaling_stage
from ddrl.analysis.thesis_returns import learning_returns_stage
from ddrl.figures import scaling as figs
from ddrl.figures.learning import reward_curves
from ddrl.runs import config_identity, resource_tag
from helpers.scaling_fixtures import HP, write_run

ENV = "HumanoidBulletEnv-v0"
# Two experiments of one study: the same algorithm, env, seed and resources; lr differs.
LR = {"lr-small": 0.0003, "lr-large": 0.001}


def _write_eval(run_dir, return_mean: float, with_config_id: bool = True) -> None:
    """The run's eval.json, as ddrl.agents.evaluate writes it (before config_id: without)."""
    record = json.loads((run_dir / "run.json").read_text())
    spec = record["spec"]
    ev = {"run_id": record["run_id"], "algorithm": spec["algorithm"], "env": spec["env"],
          "seed": spec["seed"], "resources": resource_tag(spec["resources"]), "episodes": 10,
          "return_mean": return_mean, "return_std": 1.0}
    if with_config_id:
        ev["config_id"] = config_identity(spec)
    (run_dir / "eval.json").write_text(json.dumps(ev))


def _study(root, workers=(1, 2)):
    """Both experiments at each worker count, seed 1 only; run dirs and run id -> experiment."""
    dirs, experiments = [], {}
    for i, (name, lr) in enumerate(LR.items()):
        for n in workers:
            run_dir = write_run(root, algorithm="TD3", seed=1, workers=n, hp={**HP, "lr": lr},
                                times=[50.0] + [10.0 / n] * 5, returns=[10, 20, 30, 40, 50, 60 + i],
                                tag=f"-{name}", started=f"2026-01-01T{2 * i + n:02d}:00:00+00:00",
                                finished=f"2026-01-01T{2 * i + n:02d}:30:00+00:00")
            _write_eval(run_dir, 100.0 + 100 * i)
            dirs.append(run_dir)
            experiments[run_dir.name] = name
    return dirs, experiments


def _one_seed_per_experiment(table: pd.DataFrame, seeds: str = "seeds") -> None:
    assert table["experiment"].value_counts().to_dict() == {name: len(table) // 2 for name in LR}
    assert (table[seeds] == 1).all(), table[["experiment", seeds]]


def test_returns_table_has_a_row_of_one_seed_per_experiment(tmp_path):
    dirs, experiments = _study(tmp_path, workers=(1,))
    rows = write_returns_table([d / "eval.json" for d in dirs], tmp_path / "returns.csv",
                               tmp_path / "returns.md", experiments)
    assert [(r["experiment"], r["seeds"], r["return_mean"]) for r in rows] == [
        ("lr-large", "1", 200.0), ("lr-small", "1", 100.0)]
    md = (tmp_path / "returns.md").read_text()
    body = [line for line in md.splitlines() if line.startswith("| ") and "TD3" in line]
    assert len(body) == 2 and all("(1 seed)" in line for line in body)
    assert any("lr-small" in line for line in body) and any("lr-large" in line for line in body)
    assert not any("±" in line for line in body)  # nothing averaged across the two
    csv = pd.read_csv(tmp_path / "returns.csv")
    assert csv["config_id"].nunique() == 2


def test_returns_table_takes_the_config_id_of_older_evals_from_run_json(tmp_path):
    dirs, experiments = _study(tmp_path, workers=(1,))
    for i, d in enumerate(dirs):
        _write_eval(d, 100.0 + 100 * i, with_config_id=False)
    rows = write_returns_table([d / "eval.json" for d in dirs], tmp_path / "returns.csv",
                               tmp_path / "returns.md")  # not even experiment names
    assert [r["seeds"] for r in rows] == ["1", "1"]
    # Without experiment names only the config id tells the rows apart: it is shown.
    header = (tmp_path / "returns.md").read_text().splitlines()[0]
    assert "| Config |" in header


def test_learning_returns_have_a_row_of_one_seed_per_experiment(tmp_path):
    dirs, experiments = _study(tmp_path, workers=(1,))
    table = learning_returns_stage(dirs, tmp_path / "learning_returns", experiments)
    assert len(table) == 2
    _one_seed_per_experiment(table)
    assert sorted(table["final_return"]) == [60.0, 61.0]  # each its own run's, not their mean
    md = (tmp_path / "learning_returns.md").read_text()
    assert "lr-small" in md and "lr-large" in md and "| Config |" not in md


def test_scaling_and_cost_tables_have_rows_of_one_seed_per_experiment(tmp_path):
    dirs, experiments = _study(tmp_path)
    tables = scaling_stage(dirs, tmp_path / "tables", {"bootstrap": 50}, experiments)
    speedup = tables["speedup"]
    assert len(speedup) == 4  # 2 experiments x 2 worker counts
    _one_seed_per_experiment(speedup)
    assert not speedup["run_ids"].str.contains(" ").any()  # one run per row
    assert speedup.loc[speedup["workers"] == 2, "speedup"].tolist() == pytest.approx([2.0, 2.0])
    assert len(tables["amdahl"]) == 2 and set(tables["amdahl"]["experiment"]) == set(LR)
    assert len(tables["breakdown"]) == 4
    cost = cost_stage(dirs, tmp_path / "tables" / "cost", {"return_threshold": 50}, experiments)
    assert len(cost) == 4
    _one_seed_per_experiment(cost)


def test_runs_differing_outside_the_hyperparameters_are_not_pooled(tmp_path):
    """No experiment names, and a budget (not a hyperparameter) that differs: still apart."""
    dirs = []
    for k, tag in ((6, "-short"), (8, "-long")):  # budget.env_steps: 6 or 8 iterations
        for n in (1, 2):
            dirs.append(write_run(tmp_path, seed=1, workers=n, times=[50.0] + [10.0 / n] * (k - 1),
                                  tag=tag))
    tables = scaling_stage(dirs, tmp_path / "tables", {"bootstrap": 50})
    speedup = tables["speedup"]
    assert len(speedup) == 4 and (speedup["seeds"] == 1).all()
    assert sorted(speedup["iterations"]) == [5, 5, 7, 7]  # each row holds one run's iterations
    assert "| Config |" in (tmp_path / "tables" / "speedup.md").read_text().splitlines()[2]
    assert "| Series id |" in (tmp_path / "tables" / "amdahl.md").read_text().splitlines()[2]


def _captured_figures(monkeypatch, module) -> list:
    """Every figure ``module`` saves (saved as usual, then kept for inspection)."""
    saved = []

    def keep(fig, pdf, png, *args, **kwargs):
        original(fig, pdf, png, *args, **kwargs)
        saved.append(fig)

    original = module.save_figure
    monkeypatch.setattr(module, "save_figure", keep)
    return saved


def test_figures_draw_one_series_per_experiment(tmp_path, monkeypatch):
    dirs, experiments = _study(tmp_path)
    data = reward_curves(load_progress([d for d in dirs if "-r1g0-" in d.name], experiments),
                         tmp_path / "r.pdf", tmp_path / "r.png")
    assert data["series"].nunique() == 2
    assert data.groupby("series")["run_id"].nunique().eq(1).all()
    assert {s.split(" | ")[-1] for s in data["series"]} == set(LR)

    tables = scaling_stage(dirs, tmp_path / "tables", {"bootstrap": 50}, experiments)
    saved = _captured_figures(monkeypatch, figs)
    drawn = figs.speedup_figure(tables["speedup"], tables["amdahl"], tmp_path / "s.pdf",
                                tmp_path / "s.png")
    titles = [ax.get_title() for ax in saved[0].axes if ax.get_visible()]
    assert len(titles) == 2 and {t.splitlines()[-1] for t in titles} == set(LR)
    assert len(drawn) == 4
