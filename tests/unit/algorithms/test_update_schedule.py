"""Gradient updates per iteration under both off-policy update schedules, SAC and TD3,
with 1 and 2 env runners, through the production training path (``train_run`` writing
``progress.csv``).

- ``rllib1_round_robin`` (the thesis's RLlib 1.x semantics): one update per synchronous
  round of ``rollout_fragment_length`` steps from every runner, so an iteration of
  ``timesteps_per_iteration`` env steps holds ``timesteps_per_iteration / (N x fragment)``
  updates, up to the rounding of its last round.
- ``fixed_ratio``: ``env steps x updates_per_step`` updates, at any worker count.

One Ray session is shared by the eight short runs (tiny networks on Pendulum-v1).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from ddrl.algorithms import get_algorithm
from ddrl.training.runtime import ray_session
from ddrl.config.schema import RESOURCES
from ddrl.runs import RunSpec
from ddrl.training.train import train_run

pytestmark = pytest.mark.slow

ENV = "Pendulum-v1"
STEPS_PER_ITER = 240
FRAGMENT = 4
WARMUP = 100  # learning starts inside iteration 1
FIXED_RATIO = 0.5
NETS = {"SAC": {"fcnet_hiddens": [16, 16]},
        "TD3": {"actor_hiddens": [16, 16], "critic_hiddens": [16, 16]}}
CASES = [(algo, schedule, runners) for algo in ("SAC", "TD3")
         for schedule in ("rllib1_round_robin", "fixed_ratio") for runners in (1, 2)]


def _spec(algorithm: str, schedule: str, runners: int) -> RunSpec:
    resources = {k: v["default"] for k, v in RESOURCES["properties"].items()}
    resources["num_env_runners"] = runners
    hp = {**NETS[algorithm], "update_schedule": schedule, "train_batch_size": 32,
          "timesteps_per_iteration": STEPS_PER_ITER, "rollout_fragment_length": FRAGMENT,
          "num_steps_sampled_before_learning_starts": WARMUP}
    if schedule == "fixed_ratio":
        hp["updates_per_step"] = FIXED_RATIO
    return RunSpec(
        algorithm=algorithm, env=ENV, seed=3, resources=resources,
        budget={"env_steps": 3 * STEPS_PER_ITER},
        hyperparameters=get_algorithm(algorithm).resolve(hp),
        fault_tolerance={"max_env_runner_restarts": 0, "restart_delay_s": 1},
    )


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory) -> dict[tuple, Path]:
    out = {}
    with ray_session(num_cpus=3):
        for case in CASES:
            run_dir = tmp_path_factory.mktemp("-".join(map(str, case)))
            train_run(_spec(*case), run_dir, print_fn=lambda line: None)
            out[case] = run_dir
    return out


@pytest.fixture(scope="module")
def progress(run_dirs) -> dict[tuple, pd.DataFrame]:
    return {case: pd.read_csv(d / "progress.csv") for case, d in run_dirs.items()}


@pytest.mark.parametrize("algorithm", ["SAC", "TD3"])
@pytest.mark.parametrize("runners", [1, 2])
def test_round_robin_trains_one_update_per_sampling_round(progress, algorithm, runners):
    rows = progress[(algorithm, "rllib1_round_robin", runners)]
    per_round = runners * FRAGMENT
    steady = rows[rows["env_steps"] - rows["env_steps_this_iter"] >= WARMUP]
    assert len(steady) >= 2, rows
    for row in steady.itertuples():
        rounds = math.ceil(STEPS_PER_ITER / per_round)
        # Every round of the iteration trained once; its env steps are whole rounds.
        assert row.env_steps_this_iter % per_round == 0
        assert row.gradient_updates == row.env_steps_this_iter // per_round
        assert rounds <= row.gradient_updates <= rounds + 1, row
    # Warm-up rounds train nothing; the lifetime count adds up.
    first = rows.iloc[0]
    assert first.gradient_updates < STEPS_PER_ITER // per_round
    assert rows["gradient_updates_total"].iloc[-1] == rows["gradient_updates"].sum()


@pytest.mark.parametrize("algorithm", ["SAC", "TD3"])
@pytest.mark.parametrize("runners", [1, 2])
def test_fixed_ratio_trains_updates_per_step_times_env_steps(progress, algorithm, runners):
    rows = progress[(algorithm, "fixed_ratio", runners)]
    steady = rows[rows["env_steps"] - rows["env_steps_this_iter"] >= WARMUP]
    assert len(steady) >= 2, rows
    for row in steady.itertuples():
        expected = row.env_steps_this_iter * FIXED_RATIO
        # Fractional updates carry over to the next training step (at most one).
        assert abs(row.gradient_updates - expected) <= 1, row
    assert rows["gradient_updates_total"].iloc[-1] == rows["gradient_updates"].sum()


def test_schedules_differ_by_workers(progress):
    """The thesis's schedule halves the updates per iteration with 2 runners; ddrl's does not."""
    for algorithm in ("SAC", "TD3"):
        rr = [progress[(algorithm, "rllib1_round_robin", n)]["gradient_updates"].iloc[-1]
              for n in (1, 2)]
        fixed = [progress[(algorithm, "fixed_ratio", n)]["gradient_updates"].iloc[-1]
                 for n in (1, 2)]
        assert rr[0] == pytest.approx(2 * rr[1], abs=1)
        assert fixed[0] == pytest.approx(fixed[1], abs=FRAGMENT * 2)


def test_update_schedule_is_part_of_the_run_id():
    a, b = (_spec("TD3", s, 1) for s in ("rllib1_round_robin", "fixed_ratio"))
    assert a.run_id != b.run_id


def test_scaling_tables_from_the_real_runs(run_dirs, tmp_path):
    """The scaling stage on these progress files: each schedule in the speedup table with its
    updates per env step, and the thesis-mode speedup split with "fewer updates" = 2."""
    from ddrl.analysis.scaling_stage import scaling_stage

    tables = scaling_stage(list(run_dirs.values()), tmp_path, {"warmup_iterations": 1,
                                                               "bootstrap": 100})
    speedup = tables["speedup"]
    for algorithm in ("SAC", "TD3"):
        rows = speedup[speedup["algorithm"] == algorithm].set_index(["update_schedule", "workers"])
        assert rows.loc[("rllib1_round_robin", 1), "updates_per_env_step"] == pytest.approx(
            1 / FRAGMENT)
        assert rows.loc[("rllib1_round_robin", 2), "updates_per_env_step"] == pytest.approx(
            1 / (2 * FRAGMENT))
        assert rows.loc[("fixed_ratio", 2), "updates_per_env_step"] == pytest.approx(
            FIXED_RATIO, abs=0.01)
        assert (rows["updates_per_s"] > 0).all()
    sched = tables["update_schedules"].set_index(["algorithm", "workers"])
    for algorithm in ("SAC", "TD3"):
        assert sched.loc[(algorithm, 2), "fewer_updates"] == pytest.approx(2.0)
        assert sched.loc[(algorithm, 2), "fixed_speedup"] > 0
        assert sched.loc[(algorithm, 2), "note"] == ""
