"""The off-policy fast path (issue #18): SAC's lean update against RLlib's own module and
distribution code, the device replay buffer, and the CUDA-graph capture logic, on CPU."""

from __future__ import annotations

import copy
from contextlib import contextmanager

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT

from ddrl.algorithms.fastpath import CapturedSteps, prefer_fused_adam
from ddrl.algorithms.replay import DeviceReplayBuffer
from ddrl.algorithms.sac import losses as sac_losses
from ddrl.algorithms.sac.sac import FastSACConfig
from ddrl.algorithms.td3.td3 import TD3Config
from helpers.offpolicy import perturb_targets, random_transitions

OBS_DIM, ACT_DIM, N = 3, 2, 8
SPACES = (gym.spaces.Box(-5.0, 5.0, (OBS_DIM,), np.float32),
          gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32))


def _sac_learner(**training):
    config = (
        FastSACConfig()
        .environment(observation_space=SPACES[0], action_space=SPACES[1])
        .training(gamma=0.9, tau=0.05, actor_lr=1e-2, critic_lr=2e-2, alpha_lr=3e-2,
                  initial_alpha=0.5, num_steps_sampled_before_learning_starts=0, **training)
        .rl_module(model_config={"fcnet_hiddens": [16, 16], "fcnet_activation": "relu"})
        .debugging(seed=5)
    )
    torch.manual_seed(5)
    learner = config.build_learner(spaces={"default_policy": SPACES})
    module = learner.module["default_policy"].unwrapped()
    perturb_targets(module)
    return learner, module


def _batch(seed=0, n=N):
    return random_transitions(n, OBS_DIM, ACT_DIM, seed)


def _reference_sac_update(module, log_alpha, target_entropy, batch, lrs, gamma, tau,
                          critic_loss="huber"):
    """One SAC update the way ddrl computed it before the fast path: RLlib's module API
    (encoders, heads, ``forward_target``) and its ``TorchSquashedGaussian``, torch's default
    (per-parameter) Adam with RLlib's eps."""
    b = {k: torch.as_tensor(v) for k, v in batch.items()}
    dist_cls = module.get_train_action_dist_cls()
    adam = lambda params, lr: torch.optim.Adam(params, lr=lr, eps=1e-7)  # noqa: E731
    q_opts = [adam(list(module.qf_encoder.parameters()) + list(module.qf.parameters()), lrs[1]),
              adam(list(module.qf_twin_encoder.parameters()) + list(module.qf_twin.parameters()),
                   lrs[1])]
    actor_params = list(module.pi_encoder.parameters()) + list(module.pi.parameters())
    actor_opt, alpha_opt = adam(actor_params, lrs[0]), adam([log_alpha], lrs[2])

    def policy(obs):
        return dist_cls.from_logits(module.pi(module.pi_encoder({Columns.OBS: obs})[ENCODER_OUT]))

    def q_values(obs, actions):
        batch_ = {Columns.OBS: obs, Columns.ACTIONS: actions}
        return [module._qf_forward_train_helper(batch_, enc, head) for enc, head in
                [(module.qf_encoder, module.qf), (module.qf_twin_encoder, module.qf_twin)]]

    alpha = log_alpha.detach().exp()
    with torch.no_grad():
        next_actions, next_logp = policy(b["next_obs"]).sample_and_logp()
        next_q = module.forward_target({Columns.OBS: b["next_obs"], Columns.ACTIONS: next_actions})
        target = sac_losses.critic_targets(b["rewards"], b["terminateds"], next_q, next_logp,
                                           alpha, gamma)
    critic_loss = sac_losses.critic_loss(q_values(b["obs"], b["actions"]), target, critic_loss)
    critic_loss.backward()
    for opt in q_opts:
        opt.step()
    new_actions, logp = policy(b["obs"]).rsample_and_logp()
    actor_loss = sac_losses.actor_loss(logp, q_values(b["obs"], new_actions), alpha)
    for p, g in zip(actor_params, torch.autograd.grad(actor_loss, actor_params)):
        p.grad = g
    actor_opt.step()
    alpha_opt.zero_grad()
    sac_losses.alpha_loss(log_alpha, logp, target_entropy).backward()
    alpha_opt.step()
    with torch.no_grad():
        for source, target_net in module.get_target_network_pairs():
            for s, t in zip(source.parameters(), target_net.parameters()):
                t.mul_(1 - tau).add_(tau * s)
    return float(critic_loss) / 2, float(actor_loss)


@pytest.mark.parametrize("critic_loss", ["huber", "mse"])
def test_sac_fast_update_matches_rllibs_module_and_distribution_code(critic_loss):
    learner, module = _sac_learner(critic_loss=critic_loss)
    ref_module = copy.deepcopy(module)
    ref_log_alpha = learner.curr_log_alpha["default_policy"].detach().clone().requires_grad_(True)
    target_entropy = learner.target_entropy["default_policy"]
    batch = _batch()
    batch["rewards"] = batch["rewards"] * 10  # TD errors beyond 1: the two losses differ there
    other = "mse" if critic_loss == "huber" else "huber"
    other_critic, _ = _reference_sac_update(copy.deepcopy(module), ref_log_alpha.detach().clone()
                                            .requires_grad_(True), target_entropy, batch,
                                            (1e-2, 2e-2, 3e-2), 0.9, 0.05, other)

    torch.manual_seed(11)
    ref_critic, ref_actor = _reference_sac_update(ref_module, ref_log_alpha, target_entropy,
                                                  batch, (1e-2, 2e-2, 3e-2), 0.9, 0.05,
                                                  critic_loss)
    assert abs(ref_critic - other_critic) > 0.1 * abs(ref_critic)
    torch.manual_seed(11)  # the same random stream: next actions first, then new actions
    stats = learner.update_from_transitions(batch, num_updates=1, batch_size=N)

    assert stats["critic_loss"] == pytest.approx(ref_critic, rel=1e-5)
    assert stats["actor_loss"] == pytest.approx(ref_actor, rel=1e-5, abs=1e-6)
    for (name, p), q in zip(module.named_parameters(), ref_module.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)
    torch.testing.assert_close(learner.curr_log_alpha["default_policy"].detach(),
                               ref_log_alpha.detach())
    # The optimisers run torch's fused kernel; the reference ran the per-parameter loop.
    for _, opt in learner.get_optimizers_for_module("default_policy"):
        assert all(g["fused"] for g in opt.param_groups)


def test_prefer_fused_adam_leaves_other_optimisers_and_dtypes_alone():
    w32 = torch.nn.Parameter(torch.zeros(3))
    w64 = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    adam32, adam64 = torch.optim.Adam([w32]), torch.optim.Adam([w64])
    sgd = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    prefer_fused_adam([adam32, adam64, sgd], capturable=True)
    assert adam32.param_groups[0]["fused"] is True
    assert adam32.param_groups[0]["capturable"] is False  # CPU: nothing to capture
    assert not adam64.param_groups[0]["fused"]
    assert "fused" not in sgd.param_groups[0] or not sgd.param_groups[0]["fused"]


def test_device_buffer_keeps_the_newest_and_samples_only_filled_rows():
    buffer = DeviceReplayBuffer(capacity=10, device="cpu")
    with pytest.raises(ValueError, match="empty"):
        buffer.minibatch_slots(4)
    first = _batch(n=6)
    first["rewards"] = np.arange(6, dtype=np.float32)
    buffer.add_transitions(first)
    slots = buffer.minibatch_slots(4096)
    buffer.sample_into(slots)
    assert set(slots["rewards"].tolist()) == set(range(6))  # rows 6..9 are empty: never drawn
    assert slots["terminateds"].dtype == torch.bool
    # Each sampled row is one whole transition (columns drawn with the same index).
    rows = {float(r): i for i, r in enumerate(first["rewards"])}
    for r, o in zip(slots["rewards"][:50], slots["obs"][:50]):
        np.testing.assert_array_equal(o.numpy(), first["obs"][rows[float(r)]])

    second = _batch(seed=1, n=7)
    second["rewards"] = np.arange(100, 107, dtype=np.float32)
    buffer.add_transitions(second)  # 13 added, capacity 10: rows 0-2 of the first are gone
    assert len(buffer) == 10 and buffer.num_added == 13
    buffer.sample_into(slots)
    assert set(slots["rewards"].tolist()) == {3.0, 4.0, 5.0, *range(100, 107)}
    with pytest.raises(ValueError, match="differ in length"):
        buffer.add_transitions({**second, "rewards": second["rewards"][:3]})


class FakeCuda:
    """Stands in for ``torch.cuda``: recording a graph collects the steps run inside it
    (instead of running them, as CUDA capture does), and a replay runs them."""

    def __init__(self):
        self.recording = None  # the graph being recorded
        self.side_stream_runs = 0
        self.pools = []

    class Stream:
        def __init__(self, device=None):
            pass

        def wait_stream(self, other):
            pass

    def current_stream(self, device=None):
        return FakeCuda.Stream()

    @contextmanager
    def stream(self, s):
        self.side_stream_runs += 1
        yield

    class CUDAGraph:
        def __init__(self):
            self.steps = []

        def replay(self):
            for step in self.steps:
                step()

        def pool(self):
            return ("pool", id(self))

    @contextmanager
    def graph(self, graph, pool=None):
        self.pools.append(pool)
        self.recording = graph
        yield
        self.recording = None


def test_captured_steps_warm_up_then_record_once_per_key_and_replay():
    cuda = FakeCuda()
    steps = CapturedSteps("cpu", capture=True, warmup=2, cuda=cuda)
    assert steps.capture
    calls = {"a": 0, "b": 0}

    def make(key):
        def step():
            if cuda.recording is not None:
                cuda.recording.steps.append(step)
            else:
                calls[key] += 1
        return step

    step_a, step_b = make("a"), make("b")
    for _ in range(5):
        steps.run("a", step_a)
    assert cuda.side_stream_runs == 2 and len(cuda.pools) == 1 and steps.num_graphs == 1
    assert calls["a"] == 5  # 2 warm-up runs, the replay right after capture, 2 replays
    for _ in range(3):
        steps.run("b", step_b)
    assert len(cuda.pools) == 2 and steps.num_graphs == 2 and calls["b"] == 3
    assert cuda.pools[0] is None and cuda.pools[1] is not None  # graphs share one pool
    eager = CapturedSteps("cpu", capture=True)  # a CPU device without a CUDA stand-in: eager
    eager.run("a", step_a)
    assert not eager.capture and eager.num_graphs == 0 and calls["a"] == 6


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_learner_side_buffer_update_trains_on_cpu_tensors(algo):
    """update_from_device_buffer: transitions go into the learner's DeviceReplayBuffer and
    minibatches are sampled there; with the same minibatches it equals the host path."""
    def build():
        if algo == "SAC":
            return _sac_learner(replay_on_learner=True, train_batch_size=N)[0]
        config = (TD3Config().environment(observation_space=SPACES[0], action_space=SPACES[1])
                  .training(actor_hiddens=[8], critic_hiddens=[8, 8], policy_delay=2,
                            target_noise=0.0, train_batch_size=N, replay_on_learner=True,
                            num_steps_sampled_before_learning_starts=0)
                  .debugging(seed=3))
        torch.manual_seed(3)
        return config.build_learner(spaces={"default_policy": SPACES})

    learner, host = build(), build()  # identical networks (same seeds)
    module = learner.module["default_policy"].unwrapped()
    data = _batch(n=64)
    before = [p.detach().clone() for p in module.parameters()]

    torch.manual_seed(1)
    stats = learner.update_from_device_buffer(data, num_updates=3, batch_size=N)
    buffer = learner._device_replay_buffer
    assert len(buffer) == 64 and buffer.num_added == 64
    assert stats["critic_loss"] > 0 and np.isfinite(stats["critic_loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, module.parameters()))

    # The host path on the minibatches the device buffer drew gives the same parameters.
    torch.manual_seed(1)
    slots = buffer.minibatch_slots(N)
    drawn = {k: [] for k in slots}
    for _ in range(3):
        buffer.sample_into(slots)
        for k, v in slots.items():
            drawn[k].append(v.clone())
        if algo == "SAC":  # SAC draws its actions' noise between two minibatch draws
            torch.randn(N, ACT_DIM), torch.randn(N, ACT_DIM)
    if algo == "SAC":
        torch.manual_seed(1)
        for i in range(3):
            torch.rand(N)  # the device buffer's index draw for minibatch i
            host.update_from_transitions({k: v[i].numpy() for k, v in drawn.items()}, 1, N)
    else:
        host.update_from_transitions({k: torch.cat(v).numpy() for k, v in drawn.items()}, 3, N)
    host_module = host.module["default_policy"].unwrapped()
    for p, q in zip(module.parameters(), host_module.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_sac_twin_critics_on_two_threads_give_the_sequential_update():
    sequential, seq_module = _sac_learner(learner_num_threads=1)
    threaded, thr_module = _sac_learner(learner_num_threads=2)
    assert threaded._twin_threads and not sequential._twin_threads
    assert torch.get_num_threads() == 1  # 2 threads = 2 twin threads of 1 torch thread each
    batch = _batch(n=4 * N)
    for learner in (sequential, threaded):
        torch.manual_seed(4)
        stats = learner.update_from_transitions(batch, num_updates=4, batch_size=N)
        assert np.isfinite(stats["critic_loss"])
    assert thr_module is not seq_module
    for (name, p), q in zip(thr_module.named_parameters(), seq_module.parameters()):
        # Same maths; autograd may add the two critics' gradients w.r.t. the actions in the
        # other order (node order is per thread), so equal to float rounding.
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)
    assert threaded.fast_step("default_policy").twins.enabled


def test_sac_temperature_survives_a_learner_checkpoint(tmp_path):
    """RLlib's SAC learner state leaves log(alpha) out; a resumed run restarted at
    initial_alpha (0.5 here) with the old Adam moments. ddrl's learner saves it."""
    learner, _ = _sac_learner()
    learner.update_from_transitions(_batch(seed=1, n=4 * N), 4, N)
    trained = float(learner.curr_log_alpha["default_policy"])
    assert trained != pytest.approx(float(np.log(0.5)))  # the temperature did move
    learner.save_to_path(tmp_path / "learner")

    restored, _ = _sac_learner()
    restored.restore_from_path(tmp_path / "learner")
    assert float(restored.curr_log_alpha["default_policy"]) == pytest.approx(trained)
    # Same tensor object as before (the alpha optimiser steps it in place).
    alpha_opt = dict(restored.get_optimizers_for_module("default_policy"))["alpha"]
    assert alpha_opt.param_groups[0]["params"][0] is restored.curr_log_alpha["default_policy"]
    # Weight syncs to env runners ask for the module only and do not carry it.
    assert "ddrl_log_alpha" not in learner.get_state(components="rl_module")


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_target_updates_leave_no_autograd_history(algo):
    """The Polyak step is not recorded by autograd: recorded, every update chained a node onto
    the target networks' history (never freed; ~8 KB per SAC update, 7.6 GB in a 75k-step
    Hopper run of issue #17)."""
    if algo == "SAC":
        learner = _sac_learner()[0]
    else:
        learner = (TD3Config().environment(observation_space=SPACES[0], action_space=SPACES[1])
                   .training(actor_hiddens=[8], critic_hiddens=[8], policy_delay=1,
                             num_steps_sampled_before_learning_starts=0)
                   .build_learner(spaces={"default_policy": SPACES}))
    module = learner.module["default_policy"].unwrapped()
    targets = [p for _, target in module.get_target_network_pairs() for p in target.parameters()]
    before = [p.detach().clone() for p in targets]
    learner.update_from_transitions(_batch(n=4 * N), 4, N)
    assert any(not torch.equal(a, b) for a, b in zip(before, targets))  # they did move
    assert all(p.grad_fn is None and not p.requires_grad for p in targets)
