"""Search spaces: validation, expansion into runs, ranking, best.yaml and hyperparameters_from.

Fast tests (no training). The workflow tests that train are in test_search_workflow.py.
"""

from __future__ import annotations

import copy
import math
import random

import pytest
import yaml

from ddrl.errors import ConfigError
from ddrl.study.search_space import Dimension, Metric
from ddrl.search.grid import TrialResult, leaderboard, write_summary
from ddrl.study.study import Study

ENV = "InvertedPendulumBulletEnv-v0"


def config(space=None, **search):
    entry = {
        "algorithm": "PPO",
        "env": ENV,
        "seeds": [1],
        "budget": {"env_steps": 400},
        "hyperparameters": {"train_batch_size": 200},
        "space": space if space is not None else {"lr": [1e-4, 1e-3], "num_epochs": [2, 4]},
        **search,
    }
    return {
        "study": "s",
        "experiments": [{"algorithms": ["PPO"], "envs": [ENV], "seeds": [1],
                         "budget": {"env_steps": 100}}],
        "search": [entry],
    }


def test_grid_expands_to_ordinary_runs():
    study = Study.from_config(config())
    (search,) = study.searches
    assert search.id == f"ppo-{ENV}"
    trial_runs = study.search_runs[search.id]
    assert len(trial_runs) == 4 and len(set(trial_runs)) == 4
    assert set(trial_runs) <= set(study.runs) and len(study.runs) == 5  # + the experiment's run
    got = {(study.runs[r].hyperparameters["lr"], study.runs[r].hyperparameters["num_epochs"])
           for r in trial_runs}
    assert got == {(1e-4, 2), (1e-4, 4), (1e-3, 2), (1e-3, 4)}
    # Fixed values and defaults reach every trial; each has its own folder.
    for r in trial_runs:
        assert study.runs[r].hyperparameters["train_batch_size"] == 200
        assert study.runs[r].hyperparameters["clip_param"] == 0.2
    assert len({study.run_dir(r) for r in trial_runs}) == 4


def test_ranges_are_sampled_deterministically_within_bounds():
    space = {"lr": {"loguniform": [1e-5, 1e-2]}, "lambda_": {"uniform": [0.9, 1.0]},
             "num_epochs": {"randint": [3, 5]}, "clip_param": [0.1, 0.3]}
    a = Study.from_config(config(space, num_samples=5, seed=3))
    b = Study.from_config(config(space, num_samples=5, seed=3))
    c = Study.from_config(config(space, num_samples=5, seed=4))
    assert list(a.runs) == list(b.runs)  # same config, same trials, same run ids
    assert list(a.runs) != list(c.runs)
    trials = a.searches[0].trials()
    assert len(trials) == 10  # 2 grid points x 5 samples
    assert [t["clip_param"] for t in trials] == [0.1] * 5 + [0.3] * 5
    for t in trials:
        assert 1e-5 <= t["lr"] <= 1e-2 and 0.9 <= t["lambda_"] <= 1.0
        assert t["num_epochs"] in (3, 4, 5) and isinstance(t["num_epochs"], int)
    # Log-uniform: about as many draws per decade, not most of them in the top decade.
    lrs = [Dimension("lr", "loguniform", low=1e-5, high=1e-2).sample(random.Random(i))
           for i in range(300)]
    assert sum(lr < 1e-4 for lr in lrs) > 60


@pytest.mark.parametrize(
    "space, message",
    [
        ({"lrr": [1e-3]}, "unknown PPO hyperparameter(s) ['lrr']"),
        ({"lr": {"uniform": [1e-3, 1e-3]}}, "empty range uniform [0.001, 0.001]"),
        ({"lr": {"uniform": [1e-2, 1e-3]}}, "empty range"),
        ({"lr": {"loguniform": [0, 1e-3]}}, "loguniform needs positive bounds"),
        ({"entropy_coeff": {"loguniform": [-1, 1]}}, "loguniform needs positive bounds"),
        ({"lr": []}, "empty list of choices"),
        ({"num_epochs": {"uniform": [1, 4]}}, "use randint"),
        ({"lr": {"randint": [1, 4]}}, None),  # numeric param, integer draws: allowed
        ({"clip_param": [0.2, -1]}, "clip_param=-1 is not a valid value"),
        ({"fcnet_activation": {"uniform": [0, 1]}}, "list its choices instead"),
    ],
)
def test_bad_space_is_refused_before_any_trial(space, message):
    if message is None:
        Study.from_config(config(space))
        return
    with pytest.raises(ConfigError) as err:
        Study.from_config(config(space))
    assert message in str(err.value)
    assert "search.0" in str(err.value)


def test_metric_the_runs_do_not_record_is_refused():
    with pytest.raises(ConfigError) as err:
        Study.from_config(config(metric={"column": "eval_return"}))
    assert "runs do not record 'eval_return'" in str(err.value)
    assert "episode_return_mean" in str(err.value)  # names what is recorded


def test_schema_refuses_malformed_entries():
    bad = config()
    bad["search"][0]["space"] = {"lr": {"normal": [0, 1]}}
    with pytest.raises(ConfigError, match="search.0.space.lr"):
        Study.from_config(bad)
    bad = config(kind="bayes")
    with pytest.raises(ConfigError, match="'bayes' is not allowed"):
        Study.from_config(bad)


def test_duplicate_search_ids_and_multi_seed_tune_are_refused():
    cfg = config()
    cfg["search"].append(copy.deepcopy(cfg["search"][0]))
    with pytest.raises(ConfigError, match="distinct `name`"):
        Study.from_config(cfg)
    with pytest.raises(ConfigError, match="one seed"):
        Study.from_config(config(kind="tune", seeds=[1, 2]))


def _results(metrics):
    return [TrialResult(trial=f"t{i:03d}", values={"lr": lr}, metric=m, env_steps=400,
                        wall_time_s=1.0, iterations=2, status="complete", runs=[f"r{i}"])
            for i, (lr, m) in enumerate(metrics)]


def test_leaderboard_ranks_by_mode_and_puts_missing_metrics_last():
    study = Study.from_config(config({"lr": [1e-4, 1e-3, 1e-2]}))
    search = study.searches[0]
    results = _results([(1e-4, 5.0), (1e-3, math.nan), (1e-2, 9.0)])
    board = leaderboard(search, results)
    assert list(board["trial"]) == ["t002", "t000", "t001"]
    assert list(board["rank"]) == [1, 2, 3]
    low = Study.from_config(config({"lr": [1e-4, 1e-3, 1e-2]},
                                    metric={"mode": "min"})).searches[0]
    assert list(leaderboard(low, results)["trial"]) == ["t000", "t002", "t001"]


def test_metric_is_the_mean_of_the_last_k_finite_values():
    assert Metric(last=2).of_series([1, 2, "nan", 4, float("nan")]) == 3.0
    assert Metric(last=5).of_series([1, 2]) == 1.5
    assert math.isnan(Metric().of_series([float("nan")]))


def test_summary_writes_best_yaml_that_training_configs_use(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = Study.from_config(config({"lr": [1e-4, 1e-3, 1e-2]}))
    search = study.searches[0]
    out = tmp_path / "results" / "s" / "search" / search.id
    write_summary(search, _results([(1e-4, 5.0), (1e-3, 7.5), (1e-2, 1.0)]),
                  csv=out / "leaderboard.csv", md=out / "leaderboard.md",
                  best=out / "best.yaml", pdf=out / "parameters.pdf", png=out / "parameters.png")
    best = yaml.safe_load((out / "best.yaml").read_text())
    assert best["trial"] == "t001" and best["searched"] == {"lr": 1e-3}
    assert best["metric"]["value"] == 7.5
    assert best["hyperparameters"]["train_batch_size"] == 200  # the fixed ones too
    md = (out / "leaderboard.md").read_text()
    assert md.index("| 1 | t001 |") < md.index("| 2 | t000 |") < md.index("| 3 | t002 |")
    assert (out / "parameters.pdf").stat().st_size > 0 and (out / "parameters.png").exists()

    # A training config takes the winner's hyperparameters; its own ones still win.
    final = {
        "study": "s",
        "experiments": [{"algorithms": ["PPO"], "envs": [ENV], "seeds": [3],
                         "budget": {"env_steps": 100},
                         "hyperparameters_from": str(out / "best.yaml"),
                         "hyperparameters": {"PPO": {"num_epochs": 7}}}],
    }
    (run_id, spec), = Study.from_config(final).runs.items()
    assert spec.hyperparameters["lr"] == 1e-3 and spec.hyperparameters["num_epochs"] == 7
    assert Study.from_config(final).run_inputs == {run_id: [str(out / "best.yaml")]}
    # A different winner is a different run (its id hashes the hyperparameters).
    best["hyperparameters"]["lr"] = 1e-2
    (out / "best.yaml").write_text(yaml.safe_dump(best))
    assert list(Study.from_config(final).runs) != [run_id]


def test_hyperparameters_from_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = config()
    cfg["experiments"][0]["hyperparameters_from"] = "nowhere/best.yaml"
    with pytest.raises(ConfigError, match="nowhere/best.yaml does not exist and no search"):
        Study.from_config(cfg)
    # Written by a search of this study: the experiment waits for it.
    cfg["experiments"][0]["hyperparameters_from"] = f"results/s/search/ppo-{ENV}/best.yaml"
    study = Study.from_config(cfg)
    assert len(study.runs) == 4 and "waits for" in study.deferred[0]


def test_hyperparameters_from_another_algorithm_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "best.yaml").write_text(yaml.safe_dump(
        {"algorithm": "SAC", "hyperparameters": {"tau": 0.01}}))
    cfg = config()
    cfg["experiments"][0]["hyperparameters_from"] = "best.yaml"
    with pytest.raises(ConfigError, match="holds SAC hyperparameters"):
        Study.from_config(cfg)


def test_a_changed_tune_search_does_not_continue_the_old_experiment(tmp_path):
    from ddrl.search.tune import _retire_stale_experiment

    search = Study.from_config(config(kind="tune", num_samples=4)).searches[0]
    exp = tmp_path / "tune"
    lines = []
    _retire_stale_experiment(search, tmp_path, exp, lines.append)  # nothing there yet
    exp.mkdir()
    (exp / "trial").write_text("old")
    _retire_stale_experiment(search, tmp_path, exp, lines.append)  # same search: kept
    assert (exp / "trial").exists() and not lines
    changed = Study.from_config(config(kind="tune", num_samples=8)).searches[0]
    _retire_stale_experiment(changed, tmp_path, exp, lines.append)
    assert not exp.exists() and "the search changed" in lines[0]
    (aside,) = tmp_path.glob("tune.stale-*")
    assert (aside / "trial").read_text() == "old"
