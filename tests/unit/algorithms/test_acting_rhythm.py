"""The acting/training rhythm of the off-policy loop: how many gradient updates the acting
policy lags behind the learner (``acting_policy_lag_updates``), at the default and in
Stable-Baselines3's rhythm, and the study schema's settings for it."""

from __future__ import annotations

import pytest

from ddrl.algorithms import get_algorithm
from ddrl.algorithms.offpolicy import POLICY_LAG_KEY
from ddrl.runs import RunSpec
from ddrl.training.runtime import ray_session
from ddrl.training.train import build_algorithm_config
from helpers.specs import unit_spec


def _spec(runners: int, **hp) -> RunSpec:
    hyper = {"num_steps_sampled_before_learning_starts": 256, "timesteps_per_iteration": 256,
             "fcnet_hiddens": [16], "train_batch_size": 32, **hp}
    return unit_spec("SAC", hyper, seed=0, env_steps=1, num_env_runners=runners)


def _lags(spec: RunSpec, iterations: int = 4) -> list[float]:
    config = build_algorithm_config(spec)
    with ray_session(num_cpus=2):
        algo = config.build_algo()
        try:
            results = [algo.train() for _ in range(iterations)]
        finally:
            algo.stop()
    return [r[POLICY_LAG_KEY[0]][POLICY_LAG_KEY[1]] for r in results]


def test_the_default_rhythm_acts_at_most_one_fragment_of_updates_behind():
    """Default: fragments of 64 steps sampled while the learner trains the last fragment's
    64 updates, so a fragment is sampled with weights at most 64 updates old (the first
    iteration is warm-up: no updates, no lag)."""
    fragment = get_algorithm("SAC").params["rollout_fragment_length"].default
    lags = _lags(_spec(runners=1))
    assert lags[0] == 0
    assert max(lags[1:]) == fragment


def test_sb3s_rhythm_acts_with_the_newest_weights():
    lags = _lags(_spec(runners=1, rollout_fragment_length=1, sample_while_learning=False),
                 iterations=3)
    assert lags == [0, 0, 0]


def test_the_rhythm_settings_are_study_settings():
    sac = get_algorithm("SAC")
    resolved = sac.resolve({"sample_while_learning": False, "rollout_fragment_length": 1})
    assert resolved["sample_while_learning"] is False
    assert build_algorithm_config(_spec(0, sample_while_learning=False)).sample_while_learning is False
    # At its default the setting stays out of run specs, so existing run ids are unchanged.
    assert "sample_while_learning" not in sac.resolve({})
    assert "sample_while_learning" not in get_algorithm("TD3").resolve({})
