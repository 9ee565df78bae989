"""ddrl's lean PPO learner (ddrl.algorithms.ppo.learner) against RLlib's PPOTorchLearner: same
batch, same weights, shuffling off -> same parameters and logged loss terms after an update."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from ddrl.algorithms.ppo.learner import LeanPPOTorchLearner
from ddrl.algorithms.ppo.minibatches import minibatch_index_stream

OBS_DIM, ACT_DIM = 3, 2
LOGGED = ("policy_loss", "vf_loss", "vf_loss_unclipped", "vf_explained_var", "entropy",
          "mean_kl_loss", "curr_kl_coeff", "curr_entropy_coeff", "total_loss",
          "num_module_steps_trained")


def _config(learner_class=None, **training):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    settings = dict(lr=1e-3, clip_param=0.2, vf_clip_param=10.0, entropy_coeff=0.01,
                    use_kl_loss=True, kl_coeff=0.2, kl_target=0.01, grad_clip=None)
    settings.update(training)
    config = (PPOConfig().framework("torch")
              .environment(observation_space=gym.spaces.Box(-1, 1, (OBS_DIM,), np.float32),
                           action_space=gym.spaces.Box(-1, 1, (ACT_DIM,), np.float32))
              .training(**settings)
              .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[16, 16],
                                                         fcnet_activation="tanh")))
    if learner_class is not None:
        config = config.learners(learner_class=learner_class)
    return config


def _batch(n: int, seed: int = 0):
    """A PPO train batch as the learner connector leaves it (GAE columns, loss mask)."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    rng = np.random.default_rng(seed)
    f32 = np.float32
    dist_inputs = np.concatenate([rng.normal(0, 0.3, (n, ACT_DIM)),
                                  rng.normal(-0.5, 0.2, (n, ACT_DIM))], axis=1).astype(f32)
    mask = np.ones(n, dtype=bool)
    mask[::7] = False  # the artificial last timestep of each episode
    columns = {
        Columns.OBS: rng.normal(size=(n, OBS_DIM)).astype(f32),
        Columns.ACTIONS: rng.normal(size=(n, ACT_DIM)).astype(f32),
        Columns.ACTION_DIST_INPUTS: dist_inputs,
        Columns.ACTION_LOGP: rng.normal(-2.0, 0.5, n).astype(f32),
        Postprocessing.ADVANTAGES: rng.normal(size=n).astype(f32),
        Postprocessing.VALUE_TARGETS: rng.normal(1.0, 2.0, n).astype(f32),
        Columns.LOSS_MASK: mask,
    }
    return MultiAgentBatch({"default_policy": SampleBatch(columns)}, env_steps=n)


def _learners(**training):
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    stock = _config(PPOTorchLearner, **training).build_learner()
    lean = _config(LeanPPOTorchLearner, **training).build_learner()
    lean.module.set_state(stock.module.get_state())
    return stock, lean


def _params(learner):
    return [p.detach().clone() for p in learner.module["default_policy"].parameters()]


def _update(learner, batch, **kwargs):
    return learner.update(batch=batch, timesteps={"num_env_steps_sampled_lifetime": 0},
                          shuffle_batch_per_epoch=False, **kwargs)


def _reduced(results):
    module = results["default_policy"]
    return {k: float(v.peek() if hasattr(v, "peek") else v) for k, v in module.items()}


@pytest.mark.parametrize("training, schedule", [
    ({}, {"num_epochs": 1, "minibatch_size": 40}),  # one minibatch step, whole batch
    ({"grad_clip": 0.05, "grad_clip_by": "global_norm"}, {"num_epochs": 1, "minibatch_size": 40}),
    ({}, {"num_epochs": 2, "minibatch_size": 16}),  # 5 minibatches, one spans the epoch wrap
    ({"use_kl_loss": False, "grad_clip": 0.01, "grad_clip_by": "value"},
     {"num_epochs": 3, "minibatch_size": 40}),
])
def test_lean_update_matches_rllibs_ppo_learner(training, schedule):
    stock, lean = _learners(**training)
    batch = _batch(40)
    before = _params(lean)
    assert all(torch.equal(a, b) for a, b in zip(_params(stock), before))
    got_stock = _reduced(_update(stock, batch.copy(), **schedule))
    got_lean = _reduced(_update(lean, batch.copy(), **schedule))
    for a, b in zip(_params(stock), _params(lean)):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert any(not torch.equal(a, b) for a, b in zip(before, _params(lean)))  # it did train
    assert set(got_stock) <= set(got_lean), f"missing: {set(got_stock) - set(got_lean)}"
    kl_terms = {"curr_kl_coeff"} if training.get("use_kl_loss", True) is False else set()
    assert set(LOGGED) - kl_terms <= set(got_lean)
    for key in set(LOGGED) - kl_terms:
        assert got_lean[key] == pytest.approx(got_stock[key], rel=1e-4, abs=1e-6), key


def test_kl_coefficient_adapts_like_rllibs():
    stock, lean = _learners(kl_target=1e-6)  # any step's KL exceeds 2 * target
    for learner in (stock, lean):
        _update(learner, _batch(40), num_epochs=1, minibatch_size=40)
    assert float(lean.curr_kl_coeffs_per_module["default_policy"]) == pytest.approx(0.3)
    assert float(stock.curr_kl_coeffs_per_module["default_policy"]) == pytest.approx(0.3)


def test_minibatch_schedule_follows_rllibs_cyclic_iterator():
    stream = minibatch_index_stream(10, num_epochs=2, minibatch_size=4, shuffle=False)
    assert stream.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5],
                               [6, 7, 8, 9]]
    np.random.seed(0)
    shuffled = minibatch_index_stream(10, num_epochs=2, minibatch_size=4, shuffle=True)
    assert shuffled.shape == (5, 4)
    flat = shuffled.reshape(-1)
    assert flat[:10].tolist() == list(range(10))  # first epoch in batch order
    assert sorted(flat[10:20].tolist()) == list(range(10)) and flat[10:20].tolist() != list(range(10))
    whole = minibatch_index_stream(10, 3, None, True)  # no minibatch_size: whole-batch steps
    assert whole.shape == (3, 10) and all(sorted(row) == list(range(10)) for row in whole.tolist())
