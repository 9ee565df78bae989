"""The default study (`make run`, config/config.yaml) learns what it says it learns.

Runs on the real outputs of `make run`: point ``DDRL_DEFAULT_STUDY_DIR`` at the directory
`make run` ran in (the repository root), e.g. ``make run && DDRL_DEFAULT_STUDY_DIR=. make test
PYTEST_ARGS=tests/learning/test_default_study.py``. Without it the two tests on the outputs
skip, saying why (the study takes ~15 minutes on 2 cores; the suite shares the tiny study).

Each learning experiment's final deterministic evaluation must clear a floor for its task:
well above a random policy's return, well below what the runs reach (InvertedPendulum: random
~20-40, the default runs 1000; Pendulum-v1: random ~-1200, TD3's runs ~-180), so a regression
in learning fails CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO
from ddrl.study.study import Study

CONFIG = REPO / "config" / "config.yaml"
FLOORS = {"InvertedPendulumBulletEnv-v0": 300.0, "Pendulum-v1": -500.0}
RANDOM_RETURN = {"InvertedPendulumBulletEnv-v0": 40.0, "Pendulum-v1": -1200.0}
BEST_RETURN = {"InvertedPendulumBulletEnv-v0": 1000.0, "Pendulum-v1": -150.0}


@pytest.fixture(scope="module")
def default_study(tmp_path_factory) -> Path:
    given = os.environ.get("DDRL_DEFAULT_STUDY_DIR")
    if given:
        workdir = Path(given).resolve()
        if not (workdir / "results" / "default").is_dir():
            raise AssertionError(f"DDRL_DEFAULT_STUDY_DIR={given}: no results/default there; "
                                 "run `make run` first")
        return workdir
    pytest.skip("DDRL_DEFAULT_STUDY_DIR is not set: run `make run` and point it at its "
                "directory to check the default study's returns")


def learning_runs():
    study = Study.from_file(CONFIG)
    return [(rid, study.runs[rid]) for rid in study.experiment_runs("learning")]


def test_floors_sit_between_random_play_and_the_maximum():
    assert {spec.env for _, spec in learning_runs()} <= set(FLOORS)
    for env, floor in FLOORS.items():
        span = BEST_RETURN[env] - RANDOM_RETURN[env]
        assert RANDOM_RETURN[env] + 0.25 * span <= floor <= RANDOM_RETURN[env] + 0.75 * span


@pytest.mark.slow
def test_every_learning_run_of_make_run_clears_its_tasks_floor(default_study):
    runs = learning_runs()
    assert {spec.algorithm for _, spec in runs} == {"PPO", "SAC", "TD3"}
    root = default_study / "results" / "default"
    finals = {}
    for rid, spec in runs:
        ev = json.loads((root / "runs" / rid / "eval.json").read_text())
        finals[rid] = ev["return_mean"]
        assert ev["return_mean"] >= FLOORS[spec.env], (
            f"{rid}: final evaluation {ev['return_mean']:.1f} < floor {FLOORS[spec.env]} "
            f"on {spec.env} ({len(ev['returns'])} episodes: {ev['returns']})")
    print("make run final evaluations:", json.dumps(finals, indent=1))


@pytest.mark.slow
def test_returns_table_shows_each_learning_configuration_once(default_study):
    table = pd.read_csv(default_study / "results" / "default" / "tables" / "returns.csv")
    runs = learning_runs()
    for algo in ("PPO", "SAC", "TD3"):
        (env,) = {spec.env for _, spec in runs if spec.algorithm == algo}
        rows = table[(table["algorithm"] == algo) & (table["env"] == env)]
        ids = sorted(rid for rid, spec in runs if spec.algorithm == algo)
        seeds = sorted(spec.seed for _, spec in runs if spec.algorithm == algo)
        assert len(rows) == 1, rows  # one configuration: its seeds pooled, nothing else
        assert sorted(str(rows["runs"].iloc[0]).split()) == ids
        assert [int(s) for s in str(rows["seeds"].iloc[0]).split()] == seeds
        assert float(rows["return_mean"].iloc[0]) >= FLOORS[env]
