"""PPO's policy head: ``free_log_std`` (a state-independent learned log std, what issue #17's
locomotion study sets) versus RLlib's default state-dependent log std (ddrl's default)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ddrl.algorithms import get_algorithm
from ddrl.runs import RunSpec
from ddrl.training.train import build_algorithm_config
from helpers.specs import unit_spec


def _spec(env: str, **hp) -> RunSpec:
    return unit_spec("PPO", hp, env=env)


def _module(spec: RunSpec):
    import gymnasium as gym

    env = gym.make(spec.env)
    module_spec = build_algorithm_config(spec).get_rl_module_spec(env=env)
    env.close()
    return module_spec.build()


def _log_std(module, obs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.as_tensor(obs)})
    loc, log_std = out["action_dist_inputs"].chunk(2, dim=-1)
    return log_std.numpy()


def test_free_log_std_is_off_by_default_and_part_of_the_run_id():
    assert get_algorithm("PPO").defaults()["free_log_std"] is False
    assert _spec("Pendulum-v1").run_id != _spec("Pendulum-v1", free_log_std=True).run_id


def test_free_log_std_is_one_parameter_starting_at_std_one():
    module = _module(_spec("Pendulum-v1", free_log_std=True))
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    log_std = _log_std(module, obs)
    np.testing.assert_array_equal(log_std, np.zeros_like(log_std))
    names = [n for n, _ in module.named_parameters() if n.endswith("log_std")]
    assert len(names) == 1, names


def test_rllib_default_log_std_depends_on_the_state():
    module = _module(_spec("Pendulum-v1", free_log_std=False))
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    log_std = _log_std(module, obs)
    assert np.ptp(log_std[:, 0]) > 0
    assert not [n for n, _ in module.named_parameters() if n.endswith("log_std")]


@pytest.mark.parametrize("free_log_std", [True, False])
def test_discrete_actions_ignore_free_log_std(free_log_std):
    module = _module(_spec("CartPole-v1", free_log_std=free_log_std))
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.zeros(2, 4)})
    assert out["action_dist_inputs"].shape == (2, 2)


def test_the_free_log_std_head_traces_at_any_batch_size():
    """ddrl's export traces the policy (torch.jit.trace); RLlib's own free-log-std head
    records its batch size as a constant there."""
    module = _module(_spec("Pendulum-v1", free_log_std=True))
    head = module.pi

    class DistInputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self, obs):
            return self.module.forward_inference({"obs": obs})["action_dist_inputs"]

    dist_inputs = DistInputs()
    with torch.no_grad():
        traced = torch.jit.trace(dist_inputs, torch.randn(8, 3), check_trace=False)
        for n in (1, 33):
            obs = torch.randn(n, 3)
            torch.testing.assert_close(traced(obs), dist_inputs(obs))
    assert type(head).__name__ == "TraceableFreeLogStdHead"


def _linear(module, prefix: str) -> list[torch.nn.Linear]:
    return [m for n, m in module.named_modules()
            if n.startswith(prefix) and isinstance(m, torch.nn.Linear)]


def test_initialization_default_leaves_run_ids_alone():
    # Added after PPO runs existed: at its default (RLlib's, what they trained with) it stays
    # out of the spec, so their run ids and results stay valid.
    default = _spec("Pendulum-v1")
    assert "initialization" not in default.hyperparameters
    assert _spec("Pendulum-v1", initialization="rllib").run_id == default.run_id
    ortho = _spec("Pendulum-v1", initialization="orthogonal")
    assert ortho.run_id != default.run_id
    assert ortho.hyperparameters["initialization"] == "orthogonal"


@pytest.mark.parametrize("free_log_std", [True, False])
def test_orthogonal_initialization_has_sb3s_gains(free_log_std):
    spec = _spec("HopperBulletEnv-v0", initialization="orthogonal", free_log_std=free_log_std,
                 vf_share_layers=False)
    module = _module(spec)
    expected = {"encoder.": 2 ** 0.5, "pi.": 0.01, "vf.": 1.0}
    for prefix, gain in expected.items():
        layers = _linear(module, prefix)
        assert layers, prefix
        for layer in layers:
            w = layer.weight.detach().double()
            # Orthogonal: the shorter side's vectors are orthonormal, times the gain.
            gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
            torch.testing.assert_close(gram, gain ** 2 * torch.eye(len(gram), dtype=w.dtype),
                                       atol=1e-5 * gain ** 2, rtol=0)
            assert not layer.bias.detach().any()
    # Separate actor and critic encoders (vf_share_layers false), both initialised.
    assert len(_linear(module, "encoder.")) == 4
    # Initial action means near 0 (SB3's near-zero policy layer); RLlib 2's default is not.
    obs = torch.as_tensor(np.random.default_rng(0).normal(size=(64, 15)), dtype=torch.float32)
    with torch.no_grad():
        mean = module.forward_inference({"obs": obs})["action_dist_inputs"][:, :3]
        default_mean = _module(_spec("HopperBulletEnv-v0", free_log_std=free_log_std,
                                     vf_share_layers=False)).forward_inference(
            {"obs": obs})["action_dist_inputs"][:, :3]
    assert mean.abs().max() < 0.05 < default_mean.abs().max()


def test_rllib1_normc_initialization_is_the_thesis_rllibs():
    # RLlib 1.x's FullyConnectedNetwork: every unit's incoming weights have norm 1.0 (hidden
    # layers, value output) or 0.01 (policy output); biases 0.
    module = _module(_spec("HopperBulletEnv-v0", initialization="rllib1_normc",
                           free_log_std=True, vf_share_layers=False))
    for prefix, gain in {"encoder.": 1.0, "pi.": 0.01, "vf.": 1.0}.items():
        layers = _linear(module, prefix)
        assert layers, prefix
        for layer in layers:
            norms = layer.weight.detach().norm(dim=1)
            torch.testing.assert_close(norms, torch.full_like(norms, gain))
            assert not layer.bias.detach().any()
            # Gaussian directions, not orthogonal ones: rows of a square layer overlap.
            if layer.weight.shape[0] == layer.weight.shape[1]:
                gram = layer.weight.detach() @ layer.weight.detach().T
                assert (gram - torch.diag(torch.diag(gram))).abs().max() > 0.1 * gain ** 2
