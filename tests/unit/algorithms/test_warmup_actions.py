"""Uniform random warm-up actions (SAC's ``warmup_actions: uniform``, TD3's default): the
module explores uniformly in RLlib's normalised action space [-1, 1] until learning starts,
then the learner clears the flag and the weight sync carries that to the env runners."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from ddrl.runs import RunSpec
from ddrl.training.runtime import ray_session
from ddrl.training.train import build_algorithm_config
from helpers.specs import unit_spec

SMALL = {"train_batch_size": 32, "num_steps_sampled_before_learning_starts": 256,
         "timesteps_per_iteration": 128, "rollout_fragment_length": 32,
         "replay_buffer_capacity": 1000}


def _spec(algorithm: str, **hp) -> RunSpec:
    net = {"actor_hiddens": [16], "critic_hiddens": [16]} if algorithm == "TD3" \
        else {"fcnet_hiddens": [16]}
    return unit_spec(algorithm, {**SMALL, **net, **hp}, num_env_runners=0)


def _module(spec: RunSpec):
    import gymnasium as gym

    env = gym.make(spec.env)
    module = build_algorithm_config(spec).get_rl_module_spec(env=env).build()
    env.close()
    return module


def test_sac_explores_uniformly_while_the_flag_is_set():
    from scipy import stats

    module = _module(_spec("SAC", warmup_actions="uniform"))
    obs = torch.zeros(4000, 3)  # one state: the policy's actions would cluster
    torch.manual_seed(0)
    out = module.forward_exploration({Columns.OBS: obs})
    actions = out[Columns.ACTIONS].numpy()
    assert actions.shape == (4000, 1) and Columns.ACTION_DIST_INPUTS not in out
    assert stats.kstest(actions[:, 0], stats.uniform(-1, 2).cdf).pvalue > 1e-3
    module.uniform_warmup.fill_(False)
    assert Columns.ACTION_DIST_INPUTS in module.forward_exploration({Columns.OBS: obs[:4]})
    # The policy's own exploration is what the default warm-up uses: no flag set.
    assert not bool(_module(_spec("SAC")).uniform_warmup)


@pytest.mark.parametrize("algorithm, hp", [("SAC", {"warmup_actions": "uniform"}),
                                           ("TD3", {})])
def test_the_warmup_ends_when_learning_starts_and_stays_ended(algorithm, hp, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    with ray_session(num_cpus=1):
        algo = build_algorithm_config(_spec(algorithm, **hp)).build_algo()
        try:
            flags = []
            for _ in range(3):  # 128, 256 (learning starts, flag cleared), 384 env steps
                algo.train()
                flags.append((bool(algo.env_runner.module.uniform_warmup),
                              algo._on_learner(lambda learner: learner.uniform_warmup())))
            actions = algo.local_replay_buffer.get_state()["arrays"]["actions"][:256]
            algo.save_to_path(str(tmp_path / "ckpt"))
        finally:
            algo.stop()
        assert flags == [(True, True), (False, False), (False, False)]
        # Warm-up actions spread over the whole (normalised) range.
        assert actions.min() < -0.9 and actions.max() > 0.9 and abs(actions.mean()) < 0.15
        restored = Algorithm.from_checkpoint(str(tmp_path / "ckpt"))
        try:
            assert not restored._on_learner(lambda learner: learner.uniform_warmup())
        finally:
            restored.stop()
