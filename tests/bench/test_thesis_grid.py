"""bench/thesis_grid.py: the study's own timing runs, chosen and ordered for a short GPU lease,
timed end to end (on CPU here), and tabled beside the thesis's published iteration times."""

from __future__ import annotations

import json

import pytest
import thesis_grid

from ddrl.study.study import Study
from ddrl.errors import ConfigError


def test_grid_takes_the_studys_timing_runs_in_priority_order():
    specs = thesis_grid.grid_specs("config/thesis.yaml", thesis_grid.DEFAULT_EXPERIMENTS,
                                   runners=[1, 2], gpus=[0, 1], learning_starts=500)
    order = [(e, s.algorithm, s.resources["num_env_runners"], s.resources["num_gpus_per_learner"])
             for e, s in specs]
    ppo, off = "scaling-ppo", "scaling-offpolicy-thesis-schedule"
    assert order == [(ppo, "PPO", 1, 0), (ppo, "PPO", 1, 1), (ppo, "PPO", 2, 0), (ppo, "PPO", 2, 1),
                     (off, "TD3", 1, 0), (off, "TD3", 1, 1), (off, "TD3", 2, 0), (off, "TD3", 2, 1),
                     (off, "SAC", 1, 0), (off, "SAC", 1, 1), (off, "SAC", 2, 0), (off, "SAC", 2, 1)]
    assert {s.seed for _, s in specs} == {1}
    study = Study.from_file("config/thesis.yaml")
    originals = {(s.algorithm, s.resources["num_env_runners"], s.resources["num_gpus_per_learner"],
                  study.experiment_of[s.run_id]): s
                 for s in study.runs.values() if s.seed == 1}
    for experiment, spec in specs:
        res = spec.resources
        original = originals[(spec.algorithm, res["num_env_runners"],
                              res["num_gpus_per_learner"], experiment)]
        changed = {k for k in original.hyperparameters
                   if original.hyperparameters[k] != spec.hyperparameters[k]}
        if spec.algorithm == "PPO":  # untouched: 4000 steps, 30 epochs, [256, 256]
            assert spec == original and spec.hyperparameters["num_epochs"] == 30
        else:  # only the untimed warm-up is shorter
            assert changed == {"num_steps_sampled_before_learning_starts"}
            assert spec.hyperparameters["num_steps_sampled_before_learning_starts"] == 500
            assert spec.hyperparameters["update_schedule"] == "rllib1_round_robin"
            assert thesis_grid.warmup_steps(spec) == 1500


def test_grid_filters_algorithms_and_rejects_unknown_experiments():
    specs = thesis_grid.grid_specs("config/thesis.yaml", ["scaling-offpolicy-fixed-ratio"],
                                   runners=[16], gpus=[1], learning_starts=0, algorithms=["SAC"])
    assert [(s.algorithm, s.resources["num_env_runners"], s.hyperparameters["update_schedule"])
            for _, s in specs] == [("SAC", 16, "fixed_ratio")]
    with pytest.raises(ConfigError, match="no experiment.*scaling-typo.*expected"):
        thesis_grid.grid_specs("config/thesis.yaml", ["scaling-typo"], [1], [0], 0)


def test_table_sets_speedups_beside_the_thesis():
    base = {"experiment": "scaling-offpolicy-thesis-schedule", "algorithm": "TD3",
            "learner_device": "cpu", "iterations": 1, "steps_per_s": 1.0}
    rows = [{**base, "runners": 1, "gpus": 0, "seconds_per_iter": 20.0, "updates": 1000},
            {**base, "runners": 2, "gpus": 0, "seconds_per_iter": 8.0, "updates": 500},
            {**base, "runners": 2, "gpus": 1, "learner_device": "cuda:0",
             "seconds_per_iter": 5.0, "updates": 500},
            {**base, "runners": 4, "gpus": 1, "error": "ConfigTimeout: no result within 100 s"}]
    lines = thesis_grid.table(rows).splitlines()
    assert "| 1 | 0 | cpu | 20.00 | 1.00 | 1 | 1000 | 25.56 | 1.00 |" in lines[2]
    assert "| 2 | 0 | cpu | 8.00 | 2.50 | 1 | 500 | 14.38 | 1.78 |" in lines[3]
    assert "| 2 | 1 | cuda:0 | 5.00 | 4.00 | 1 | 500 | 11.58 | 2.21 |" in lines[4]
    assert "failed: ConfigTimeout" in lines[5] and "| 10.09 | 2.53 |" in lines[5]


@pytest.mark.slow
def test_timing_run_end_to_end_writes_rows_as_it_goes(tmp_path, capsys):
    rows_file = tmp_path / "grid.jsonl"
    assert thesis_grid.main(["--config", "config/thesis-mini.yaml", "--experiments",
                             "scaling-offpolicy-thesis-schedule", "--algorithms", "TD3",
                             "--runners", "1", "2", "--gpus", "0", "--iters", "1",
                             "--learning-starts", "100", "--jsonl", str(rows_file)]) == 0
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert [(r["algorithm"], r["runners"], r["gpus"]) for r in rows] == [("TD3", 1, 0), ("TD3", 2, 0)]
    for r in rows:
        assert "error" not in r and r["learner_device"] == "cpu"
        assert r["iterations"] == 1 and r["env_steps"] == 100 and r["seconds_per_iter"] > 0
    # The thesis's round robin: one update per round of one step from every runner.
    assert [r["updates"] for r in rows] == [100, 50]
    out = capsys.readouterr().out
    assert "| scaling-offpolicy-thesis-schedule | TD3 | 2 | 0 | cpu |" in out
    assert thesis_grid.main(["--table", str(rows_file)]) == 0
    assert "| 25.56 | 1.00 |" in capsys.readouterr().out


def test_bad_arguments_are_named():
    with pytest.raises(SystemExit):
        thesis_grid.main(["--runners", "0"])


def test_runner_counts_are_timed_in_the_order_given_and_tabled_in_order():
    specs = thesis_grid.grid_specs("config/thesis.yaml", ["scaling-ppo"], runners=[1, 16, 4],
                                   gpus=[0], learning_starts=0)
    assert [s.resources["num_env_runners"] for _, s in specs] == [1, 16, 4]
    rows = [{"experiment": "scaling-ppo", "algorithm": "PPO", "runners": n, "gpus": 0,
             "learner_device": "cpu", "seconds_per_iter": 40.0 / n, "steps_per_s": 100.0 * n,
             "iterations": 2, "updates": float("nan")} for n in (1, 16, 4)]
    lines = thesis_grid.table(rows).splitlines()[2:]
    assert [line.split(" | ")[2] for line in lines] == ["1", "4", "16"]
    # No 2-runner row measured, so no base: PPO's speedups are relative to 2 runners, as the
    # thesis has no 1-worker CPU PPO run; the thesis's own: 34.54 / 11.34.
    assert "| 16 | 0 | cpu | 2.50 | - | 1600 | - | 11.34 | 3.05 |" in lines[2]
    rows.append({**rows[0], "runners": 2, "seconds_per_iter": 20.0})
    lines = thesis_grid.table(rows).splitlines()[2:]
    assert "| 16 | 0 | cpu | 2.50 | 8.00 | 1600 | - | 11.34 | 3.05 |" in lines[3]
    assert "| 1 | 0 | cpu | 40.00 | 0.50 |" in lines[0]


def test_a_configuration_past_its_time_limit_is_named_as_such():
    with pytest.raises(thesis_grid.ConfigTimeout):
        with thesis_grid.time_limit(0.05) as limit:
            import time
            time.sleep(1)
    assert limit["expired"]
    with thesis_grid.time_limit(0) as limit:
        pass
    assert not limit["expired"]


def test_figure_shows_the_measured_rows_beside_the_thesis(tmp_path, capsys):
    rows_file, png = tmp_path / "grid.jsonl", tmp_path / "grid.png"
    base = {"experiment": "scaling-offpolicy-thesis-schedule", "algorithm": "TD3",
            "learner_device": "cpu", "iterations": 1, "steps_per_s": 1.0, "updates": 1.0}
    rows = [{**base, "runners": 4, "gpus": 0, "seconds_per_iter": 9.0},
            {**base, "runners": 1, "gpus": 0, "seconds_per_iter": 30.0},
            {**base, "runners": 1, "gpus": 1, "seconds_per_iter": 15.0},
            {**base, "runners": 16, "gpus": 1, "error": "ConfigTimeout: no result within 90 s"}]
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    series = thesis_grid.plot_series(rows)
    assert series[("TD3", 0, "ddrl")] == [(1, 30.0), (4, 9.0)]
    assert series[("TD3", 1, "ddrl")] == [(1, 15.0)]  # the failed row is left out
    assert series[("TD3", 0, "thesis")][:3] == [(1, 25.56), (2, 14.38), (4, 13.10)]
    assert not any(algo in ("PPO", "SAC") for algo, _, _ in series)  # not measured, not drawn
    assert thesis_grid.main(["--table", str(rows_file), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| TD3 | 4 | 0 | cpu | 9.00 | 3.33 |" in capsys.readouterr().out


def test_configurations_measured_by_an_earlier_lease_are_skipped(tmp_path, capsys):
    specs = thesis_grid.grid_specs("config/thesis-mini.yaml", ["scaling-ppo"], runners=[1, 2],
                                   gpus=[0], learning_starts=0)
    ids = [s.run_id for _, s in specs]
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text(json.dumps({"run_id": ids[0], "seconds_per_iter": 1.0}) + "\n"
                       + json.dumps({"run_id": ids[1], "error": "ConfigTimeout: ..."}) + "\n")
    assert thesis_grid.measured_run_ids([str(earlier), str(tmp_path / "missing.jsonl")]) == {ids[0]}
    earlier.write_text("".join(json.dumps({"run_id": i, "seconds_per_iter": 1.0}) + "\n" for i in ids))
    rows_file = tmp_path / "grid.jsonl"
    assert thesis_grid.main(["--config", "config/thesis-mini.yaml", "--experiments", "scaling-ppo",
                             "--runners", "1", "2", "--gpus", "0", "--skip-measured", str(earlier),
                             "--jsonl", str(rows_file)]) == 0
    assert "2 configuration(s) measured already" in capsys.readouterr().out
    assert not rows_file.exists()  # nothing left to time, nothing started
