"""ddrl's SAC and TD3 updates against Stable-Baselines3's, the baseline of the locomotion
benchmark (issue #17): from the same weights, on the same minibatches, with the same noise,
ddrl's fast learners (SAC with ``critic_loss: mse``, SB3's loss) and SB3's ``train`` take the
same steps: losses, temperature and every weight, target networks included, agree to float
precision.

So what separates the two frameworks' learning curves is outside the update (the data each
collects, SAC's default Huber loss, the warm-up actions), not the update itself."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3  # the test extra installs the bench extra
import torch
from stable_baselines3.common.logger import configure
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from ddrl.algorithms.sac.sac import FastSACConfig
from ddrl.algorithms.td3.td3 import TD3Config
from helpers.offpolicy import random_transitions

OBS_DIM, ACT_DIM, BATCH, HIDDENS = 5, 2, 64, [32, 32]
LR, GAMMA, TAU = 3e-3, 0.98, 0.02
SPACES = (gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32),
          gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32))
# Both frameworks draw their reparameterisation noise from torch's global generator, in a
# different order; a constant draw makes the two updates comparable step by step.
NOISE = 0.5


class _SpacesOnly(gym.Env):
    observation_space, action_space = SPACES

    def reset(self, *, seed=None, options=None):
        return np.zeros(OBS_DIM, np.float32), {}

    def step(self, action):
        return np.zeros(OBS_DIM, np.float32), 0.0, False, False, {}


def _linears(*modules: torch.nn.Module) -> list[torch.nn.Linear]:
    return [m for module in modules for m in module.modules() if isinstance(m, torch.nn.Linear)]


def _copy_linears(sources, targets) -> None:
    assert len(sources) == len(targets)
    for s, t in zip(sources, targets):
        assert s.weight.shape == t.weight.shape, (s, t)
        t.weight.copy_(s.weight)
        t.bias.copy_(s.bias)


def _pair(critic_loss: str = "mse"):
    """An SB3 SAC and a ddrl SAC learner with the same hyperparameters and weights; the
    pairs of (SB3 linear layers, ddrl linear layers) that must stay equal."""
    torch.manual_seed(3)
    theirs = sb3.SAC("MlpPolicy", _SpacesOnly(), learning_rate=LR, batch_size=BATCH, gamma=GAMMA,
                     tau=TAU, learning_starts=0, ent_coef="auto_1.0", device="cpu",
                     policy_kwargs={"net_arch": HIDDENS, "optimizer_kwargs": {"eps": 1e-7}})
    theirs.set_logger(configure(None, []))
    config = (
        FastSACConfig()
        .environment(observation_space=SPACES[0], action_space=SPACES[1])
        .training(gamma=GAMMA, tau=TAU, actor_lr=LR, critic_lr=LR, alpha_lr=LR,
                  initial_alpha=1.0, critic_loss=critic_loss, train_batch_size=BATCH,
                  num_steps_sampled_before_learning_starts=0)
        .rl_module(model_config={"fcnet_hiddens": HIDDENS, "fcnet_activation": "relu"})
    )
    learner = config.build_learner(spaces={"default_policy": SPACES})
    module = learner.module["default_policy"].unwrapped()
    actor = theirs.actor
    pairs = [
        (_linears(actor.latent_pi), _linears(module.pi_encoder)),
        (_linears(theirs.critic.q_networks[0]), _linears(module.qf_encoder, module.qf)),
        (_linears(theirs.critic.q_networks[1]), _linears(module.qf_twin_encoder, module.qf_twin)),
        (_linears(theirs.critic_target.q_networks[0]),
         _linears(module.target_qf_encoder, module.target_qf)),
        (_linears(theirs.critic_target.q_networks[1]),
         _linears(module.target_qf_twin_encoder, module.target_qf_twin)),
    ]
    with torch.no_grad():
        for sources, targets in pairs:
            _copy_linears(sources, targets)
        # RLlib's policy head is one layer with [mean, log std] outputs; SB3 has two.
        (head,) = _linears(module.pi)
        head.weight.copy_(torch.cat([actor.mu.weight, actor.log_std.weight]))
        head.bias.copy_(torch.cat([actor.mu.bias, actor.log_std.bias]))
    return theirs, learner, module, pairs


def _policy_head_matches(theirs, module) -> None:
    (head,) = _linears(module.pi)
    torch.testing.assert_close(head.weight, torch.cat([theirs.actor.mu.weight,
                                                       theirs.actor.log_std.weight]))
    torch.testing.assert_close(head.bias, torch.cat([theirs.actor.mu.bias,
                                                     theirs.actor.log_std.bias]))


@pytest.fixture
def constant_noise(monkeypatch):
    monkeypatch.setattr(torch, "randn_like", lambda x, **kw: torch.full_like(x, NOISE))
    monkeypatch.setattr(torch.distributions.normal, "_standard_normal",
                        lambda shape, dtype, device: torch.full(shape, NOISE, dtype=dtype,
                                                                device=device))


def _sb3_step(theirs, batch) -> dict[str, float]:
    t = {k: torch.as_tensor(v) for k, v in batch.items()}
    samples = ReplayBufferSamples(t["obs"], t["actions"], t["next_obs"],
                                  t["terminateds"].float()[:, None], t["rewards"][:, None], None)
    theirs.replay_buffer.sample = lambda *args, **kwargs: samples
    theirs.train(gradient_steps=1, batch_size=BATCH)
    return dict(theirs.logger.name_to_value)


def test_sac_update_equals_stable_baselines3s_step_for_step(constant_noise):
    theirs, learner, module, pairs = _pair()
    start = [p.detach().clone() for p in module.parameters()]
    for step in range(6):
        batch = random_transitions(BATCH, OBS_DIM, ACT_DIM, seed=step)
        batch["rewards"] = batch["rewards"] * 5 + 1  # TD errors well beyond 1
        logged = _sb3_step(theirs, batch)
        stats = learner.update_from_transitions(batch, num_updates=1, batch_size=BATCH)

        # ddrl logs the critics' mean term, SB3 their sum.
        assert stats["critic_loss"] * 2 == pytest.approx(logged["train/critic_loss"], rel=1e-4)
        assert stats["actor_loss"] == pytest.approx(logged["train/actor_loss"], rel=1e-4)
        # SB3 logs the temperature the step used; ddrl the one it leaves.
        alpha = float(theirs.log_ent_coef.detach().exp())
        assert stats["alpha_value"] == pytest.approx(alpha, rel=1e-5)
        for sources, targets in pairs:
            for s, t in zip(sources, targets):
                torch.testing.assert_close(t.weight, s.weight, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(t.bias, s.bias, rtol=1e-4, atol=1e-5)
        _policy_head_matches(theirs, module)
    moved = [float((p.detach() - s).abs().max()) for p, s in zip(module.parameters(), start)]
    assert min(moved) > 1e-4, "every network (targets included) must have trained"


def test_rllibs_huber_critic_loss_is_where_the_default_update_departs_from_sb3s(constant_noise):
    theirs, learner, module, pairs = _pair(critic_loss="huber")
    batch = random_transitions(BATCH, OBS_DIM, ACT_DIM, seed=0)
    batch["rewards"] = batch["rewards"] * 5 + 1
    logged = _sb3_step(theirs, batch)
    stats = learner.update_from_transitions(batch, num_updates=1, batch_size=BATCH)
    assert stats["critic_loss"] * 2 < 0.5 * logged["train/critic_loss"]
    sources, targets = pairs[1]  # the first critic: a different gradient, different weights
    assert float((targets[0].weight - sources[0].weight).abs().max().detach()) > 1e-4


def _td3_pair(policy_delay: int = 2):
    torch.manual_seed(4)
    theirs = sb3.TD3("MlpPolicy", _SpacesOnly(), learning_rate=LR, batch_size=BATCH, gamma=GAMMA,
                     tau=TAU, learning_starts=0, policy_delay=policy_delay,
                     target_policy_noise=0.2, target_noise_clip=0.5, device="cpu",
                     policy_kwargs={"net_arch": HIDDENS})
    theirs.set_logger(configure(None, []))
    config = (
        TD3Config()
        .environment(observation_space=SPACES[0], action_space=SPACES[1])
        .training(gamma=GAMMA, tau=TAU, actor_lr=LR, critic_lr=LR, policy_delay=policy_delay,
                  target_noise=0.2, target_noise_clip=0.5, actor_hiddens=HIDDENS,
                  critic_hiddens=HIDDENS, train_batch_size=BATCH,
                  num_steps_sampled_before_learning_starts=0)
    )
    learner = config.build_learner(spaces={"default_policy": SPACES})
    module = learner.module["default_policy"].unwrapped()
    pairs = [
        (_linears(theirs.actor.mu), _linears(module.actor)),
        (_linears(theirs.actor_target.mu), _linears(module.target_actor)),
        (_linears(theirs.critic.q_networks[0]), _linears(module.critic1)),
        (_linears(theirs.critic.q_networks[1]), _linears(module.critic2)),
        (_linears(theirs.critic_target.q_networks[0]), _linears(module.target_critic1)),
        (_linears(theirs.critic_target.q_networks[1]), _linears(module.target_critic2)),
    ]
    with torch.no_grad():
        for sources, targets in pairs:
            _copy_linears(sources, targets)
    return theirs, learner, module, pairs


def test_td3_update_equals_stable_baselines3s_step_for_step(monkeypatch):
    theirs, learner, module, pairs = _td3_pair(policy_delay=2)
    # Target-policy smoothing noise: ddrl draws standard normals and scales them, SB3 draws
    # N(0, std) in place; both get the same constant draw.
    monkeypatch.setattr(torch, "randn", lambda shape, **kw: torch.full(
        tuple(shape), NOISE, dtype=torch.float32, device=kw.get("device")))
    monkeypatch.setattr(torch.Tensor, "normal_",
                        lambda self, mean=0.0, std=1.0, **kw: self.fill_(mean + NOISE * std))
    start = [p.detach().clone() for p in module.parameters()]
    for step in range(6):
        batch = random_transitions(BATCH, OBS_DIM, ACT_DIM, seed=10 + step)
        batch["rewards"] = batch["rewards"] * 5 + 1
        logged = _sb3_step(theirs, batch)
        stats = learner.update_from_transitions(batch, num_updates=1, batch_size=BATCH)

        assert stats["critic_loss"] == pytest.approx(logged["train/critic_loss"], rel=1e-4)
        assert stats["num_actor_updates"] == int(step % 2 == 1)
        if stats["num_actor_updates"]:
            assert stats["actor_loss"] == pytest.approx(logged["train/actor_loss"], rel=1e-4)
        for sources, targets in pairs:
            for s, t in zip(sources, targets):
                torch.testing.assert_close(t.weight, s.weight, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(t.bias, s.bias, rtol=1e-4, atol=1e-5)
    moved = [float((p.detach() - s).abs().max()) for p, s in zip(module.parameters(), start)]
    assert min(moved) > 1e-4, "every network (targets included) must have trained"
