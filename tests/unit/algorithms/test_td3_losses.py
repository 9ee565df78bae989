"""TD3 loss maths on a fixed small batch, against references written out in the test."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from ddrl.algorithms.td3 import losses
from ddrl.algorithms.td3.td3 import TD3Config
from helpers.offpolicy import perturb_targets, random_transitions

GAMMA = 0.9
TAU = 0.05
OBS_DIM, ACT_DIM, N = 3, 2, 6


def _learner(policy_delay=2, target_noise=0.0, **training):
    obs_space = gym.spaces.Box(-5.0, 5.0, (OBS_DIM,), np.float32)
    act_space = gym.spaces.Box(-2.0, 2.0, (ACT_DIM,), np.float32)
    config = (
        TD3Config()
        .environment(observation_space=obs_space, action_space=act_space)
        .training(gamma=GAMMA, tau=TAU, policy_delay=policy_delay, target_noise=target_noise,
                  actor_hiddens=[8], critic_hiddens=[8, 8], actor_lr=1e-2, critic_lr=1e-2,
                  num_steps_sampled_before_learning_starts=0, **training)
        .debugging(seed=3)
    )
    torch.manual_seed(3)
    learner = config.build_learner(spaces={"default_policy": (obs_space, act_space)})
    module = learner.module["default_policy"].unwrapped()
    perturb_targets(module)
    return learner, module


def _batch(seed=0):
    # row 1: terminated; row 2: truncated (time limit); row 3: both flags.
    return random_transitions(N, OBS_DIM, ACT_DIM, seed,
                              terminateds=[0, 1, 0, 1, 0, 0], truncateds=[0, 0, 1, 1, 0, 0])


def _t(batch):
    return {k: torch.as_tensor(v) for k, v in batch.items()}


def _reference_targets(module, batch, noise, noise_std, noise_clip):
    """y_i = r_i + gamma (1 - terminated_i) min_j Q_j'(s'_i, clip(pi'(s'_i) + clip(eps), -1, 1)),
    one transition at a time."""
    ys = []
    with torch.no_grad():
        for i in range(N):
            s2 = torch.as_tensor(batch["next_obs"][i : i + 1])
            a2 = module.target_actor(s2)[0]
            eps = torch.clamp(noise[i] * noise_std, -noise_clip, noise_clip)
            a2 = torch.clamp(a2 + eps, -1.0, 1.0)[None]
            q = min(module.target_critic1(s2, a2).item(), module.target_critic2(s2, a2).item())
            done = bool(batch["terminateds"][i])
            ys.append(float(batch["rewards"][i]) + (0.0 if done else GAMMA * q))
    return torch.tensor(ys)


def test_critic_target_uses_smoothed_clipped_target_action():
    _, module = _learner()
    batch = _batch()
    # Large noise so that both the noise clip and the action clip are exercised.
    noise = torch.tensor(np.random.default_rng(1).normal(scale=3.0, size=(N, ACT_DIM)),
                         dtype=torch.float32)
    got = losses.critic_targets(module, _t(batch), gamma=GAMMA, noise_std=0.2, noise_clip=0.5,
                                noise=noise)
    want = _reference_targets(module, batch, noise, 0.2, 0.5)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # The smoothing noise matters: without it the targets differ.
    plain = losses.critic_targets(module, _t(batch), gamma=GAMMA, noise_std=0.0, noise_clip=0.5)
    assert not torch.allclose(plain, got)


def test_terminated_stops_bootstrap_truncated_does_not():
    _, module = _learner()
    batch = _batch()
    y = losses.critic_targets(module, _t(batch), gamma=GAMMA, noise_std=0.0, noise_clip=0.5)
    r = torch.as_tensor(batch["rewards"])
    # Terminated rows (1 and 3, whatever the truncated flag says): the target is the reward.
    torch.testing.assert_close(y[[1, 3]], r[[1, 3]])
    # Truncated-only row 2 and ordinary rows bootstrap.
    for i in (0, 2, 4, 5):
        assert abs(float(y[i] - r[i])) > 1e-4
    flipped = dict(batch, truncateds=~batch["truncateds"])
    y2 = losses.critic_targets(module, _t(flipped), gamma=GAMMA, noise_std=0.0, noise_clip=0.5)
    torch.testing.assert_close(y, y2)


def test_critic_and_actor_losses():
    _, module = _learner()
    batch = _t(_batch())
    y = torch.linspace(-1, 1, N)
    loss, q1, q2 = losses.critic_loss(module, batch, y)
    with torch.no_grad():
        sa = torch.cat([batch["obs"], batch["actions"]], dim=1)
        ref_q1 = module.critic1.net(sa).squeeze(-1)
        ref_q2 = module.critic2.net(sa).squeeze(-1)
        ref = ((ref_q1 - y) ** 2).mean() + ((ref_q2 - y) ** 2).mean()
        torch.testing.assert_close(loss, ref)
        pi = torch.tanh(module.actor.net(batch["obs"]))
        ref_actor = -module.critic1.net(torch.cat([batch["obs"], pi], dim=1)).mean()
    torch.testing.assert_close(losses.actor_loss(module, batch["obs"]), ref_actor)


def _params(net):
    return [p.detach().clone() for p in net.parameters()]


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("policy_delay", [2, 3])
def test_delayed_actor_and_target_updates(policy_delay):
    learner, module = _learner(policy_delay=policy_delay)
    batch = _batch()
    online = {n: _params(getattr(module, n)) for n in ("actor", "critic1", "critic2")}
    targets = {n: _params(getattr(module, "target_" + n)) for n in online}
    # The critic step is one Adam step on the critic loss at the reference targets.
    ref = copy.deepcopy(module)
    ref_opt = torch.optim.Adam(list(ref.critic1.parameters()) + list(ref.critic2.parameters()),
                               lr=1e-2)
    y = _reference_targets(ref, batch, torch.zeros(N, ACT_DIM), 0.0, 0.5)
    ref_loss = losses.critic_loss(ref, _t(batch), y)[0]
    ref_loss.backward()
    ref_opt.step()

    for step in range(1, 2 * policy_delay + 1):
        before_actor = _params(module.actor)
        before_targets = {n: _params(getattr(module, "target_" + n)) for n in online}
        before_online = {n: _params(getattr(module, n)) for n in online}
        stats = learner.update_from_transitions(batch, num_updates=1, batch_size=N)
        if step == 1:
            for n in ("critic1", "critic2"):
                for p, q in zip(getattr(module, n).parameters(), getattr(ref, n).parameters()):
                    torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
        assert not _same(before_online["critic1"], _params(module.critic1))
        if step % policy_delay:
            assert stats["num_actor_updates"] == 0
            assert _same(before_actor, _params(module.actor))
            for n in online:
                assert _same(before_targets[n], _params(getattr(module, "target_" + n)))
        else:
            assert stats["num_actor_updates"] == 1
            assert not _same(before_actor, _params(module.actor))
            for n in online:
                new_online = _params(getattr(module, n))
                for t_old, src, t_new in zip(before_targets[n], new_online,
                                             _params(getattr(module, "target_" + n))):
                    torch.testing.assert_close(t_new, (1 - TAU) * t_old + TAU * src)
    assert int(module.num_critic_updates) == 2 * policy_delay
    del online, targets


def test_actor_step_does_not_move_the_critics():
    """The actor's gradient flows through Q1 but only the actor's parameters change."""
    learner, module = _learner(policy_delay=1)
    batch = _batch()
    # Critic step alone (an identical learner whose actor step is far away) vs. both steps.
    critic_only, _ = _learner(policy_delay=10**6)
    critic_only.update_from_transitions(batch, num_updates=1, batch_size=N)
    learner.update_from_transitions(batch, num_updates=1, batch_size=N)
    ref_module = critic_only.module["default_policy"].unwrapped()
    for n in ("critic1", "critic2"):
        assert _same(_params(getattr(module, n)), _params(getattr(ref_module, n)))
    assert not _same(_params(module.actor), _params(ref_module.actor))


def test_generic_rllib_update_path_matches_fast_path():
    """RLlib's Learner.update (episode-buffer path) and the fast path give the same step."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    fast, _ = _learner(policy_delay=1)
    generic, _ = _learner(policy_delay=1)  # same seed: identical networks
    batch = _batch()
    fast.update_from_transitions(batch, num_updates=1, batch_size=N)
    sb = SampleBatch({
        Columns.OBS: batch["obs"], Columns.ACTIONS: batch["actions"],
        Columns.REWARDS: batch["rewards"], Columns.NEXT_OBS: batch["next_obs"],
        Columns.TERMINATEDS: batch["terminateds"], Columns.TRUNCATEDS: batch["truncateds"],
    })
    generic.update(batch=MultiAgentBatch({"default_policy": sb}, env_steps=N))
    a = fast.module["default_policy"].unwrapped()
    b = generic.module["default_policy"].unwrapped()
    for name in ("actor", "critic1", "critic2", "target_actor", "target_critic1",
                 "target_critic2"):
        for p, q in zip(getattr(a, name).parameters(), getattr(b, name).parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert int(a.num_critic_updates) == int(b.num_critic_updates) == 1
