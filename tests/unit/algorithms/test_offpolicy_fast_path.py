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

from ddrl.algorithms.offpolicy import (CapturedSteps, FusedAdamStep, PlainMLP, SplitBatch,
                                       prefer_fused_adam)
from ddrl.algorithms.replay import DeviceReplayBuffer
from ddrl.algorithms.sac import losses as sac_losses
from ddrl.algorithms.sac.sac import FastSACConfig
from ddrl.algorithms.td3.learner import PlainTD3Networks
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


def _td3_learner(**training):
    training = {"actor_hiddens": [16, 16], "critic_hiddens": [16, 16], "policy_delay": 2,
                "num_steps_sampled_before_learning_starts": 0, **training}
    config = (TD3Config().environment(observation_space=SPACES[0], action_space=SPACES[1])
              .training(**training).debugging(seed=3))
    torch.manual_seed(3)
    learner = config.build_learner(spaces={"default_policy": SPACES})
    return learner, learner.module["default_policy"].unwrapped()


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
        return _td3_learner(actor_hiddens=[8], critic_hiddens=[8, 8], target_noise=0.0,
                            train_batch_size=N, replay_on_learner=True)[0]

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


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
def test_minibatch_parts_on_two_threads_give_the_whole_batch_update(algo):
    """learner_num_threads: 2 in parts mode computes each gradient on two halves of the
    minibatch on two threads and sums them: the same update as the whole batch, to float
    summation order."""
    make = _sac_learner if algo == "SAC" else _td3_learner
    whole, whole_module = make(learner_num_threads=1)
    halves, halves_module = make(learner_num_threads=2, learner_thread_mode="parts")
    assert (whole._batch_parts, halves._batch_parts) == (1, 2)
    assert torch.get_num_threads() == 1  # 2 threads = 2 parts of 1 torch thread each
    assert halves.fast_step("default_policy").split.parts == 2
    initial = [p.detach().clone() for p in whole_module.parameters()]
    batch = _batch(n=4 * N)
    stats = []
    for learner in (whole, halves):
        torch.manual_seed(4)
        stats.append(learner.update_from_transitions(batch, num_updates=4, batch_size=N))
    assert halves_module is not whole_module
    trained = [not torch.equal(p, p0) for p, p0 in zip(whole_module.parameters(), initial)]
    assert sum(trained) >= len(initial) // 2  # the nets (not all targets at tau) moved
    for (name, p), q in zip(halves_module.named_parameters(), whole_module.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)
        # The summed gradients themselves (Adam's first steps hardly see their scale).
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)
    assert sum(p.grad is not None for p in halves_module.parameters()) >= 6
    for key in ("critic_loss", "q_mean", "actor_loss"):
        assert stats[1][key] == pytest.approx(stats[0][key], rel=1e-5, abs=1e-6), key
    # Every optimiser (SAC: 2 critics, actor, temperature; TD3: critics, actor) stepped
    # through FusedAdamStep's direct kernel call once its state existed.
    steppers = list(halves.fast_step("default_policy")._adam_steps.values())
    assert len(steppers) == (4 if algo == "SAC" else 2)
    assert all(s._state_dict is s.optimizer.state for s in steppers)


def test_split_batch_weights_parts_by_their_rows():
    split = SplitBatch(3)
    batch = {"x": torch.arange(10.0)}
    parts = split.map(lambda part, weight: (part["x"].tolist(), weight), batch)
    assert [rows for rows, _ in parts] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0],
                                           [6.0, 7.0, 8.0, 9.0]]
    assert [w for _, w in parts] == pytest.approx([0.3, 0.3, 0.4])
    # Grad mode follows the caller onto the helper threads.
    with torch.no_grad():
        modes = split.map(lambda part, weight: torch.is_grad_enabled(), batch)
    assert modes == [False, False, False]
    assert SplitBatch(1).map(lambda part, weight: (part is batch, weight), batch) == [(True, 1.0)]


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
        learner = _td3_learner(actor_hiddens=[8], critic_hiddens=[8], policy_delay=1)[0]
    module = learner.module["default_policy"].unwrapped()
    targets = [p for _, target in module.get_target_network_pairs() for p in target.parameters()]
    before = [p.detach().clone() for p in targets]
    learner.update_from_transitions(_batch(n=4 * N), 4, N)
    assert any(not torch.equal(a, b) for a, b in zip(before, targets))  # they did move
    assert all(p.grad_fn is None and not p.requires_grad for p in targets)


def test_plain_mlp_equals_the_modules_and_declines_what_it_cannot_call():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(),
                              torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()),
                              torch.nn.Linear(8, 2))
    plain = PlainMLP.of(net)
    x = torch.randn(5, 3)
    assert torch.equal(plain(x), net(x))
    assert [p.data_ptr() for p in plain.parameters()] == [p.data_ptr() for p in net.parameters()]
    # The SAC learner's policy and critics are plain: the update runs without module calls.
    step = _sac_learner()[0].fast_step("default_policy")
    assert all(isinstance(f, PlainMLP) for f in [step.pi, *step.qs, *step.target_qs])
    # Anything else falls back to the modules (mlp_chain) or is refused (PlainMLP.of).
    assert PlainMLP.of(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))) is None
    assert PlainMLP.of(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(3, 4))) is None
    clipping_head = torch.nn.Linear(3, 4)
    clipping_head.clip_log_std = True
    assert PlainMLP.of(clipping_head) is None


def test_td3_step_on_plain_networks_equals_the_module_path():
    plain_learner, plain_module = _td3_learner()
    module_learner, module_module = _td3_learner()
    assert isinstance(plain_learner.fast_step("default_policy").nets, PlainTD3Networks)
    module_learner.fast_step("default_policy").nets = module_module  # the modules' forward
    batch = _batch(n=4 * N)
    for learner in (plain_learner, module_learner):
        torch.manual_seed(2)
        learner.update_from_transitions(batch, num_updates=4, batch_size=N)
    for (name, p), q in zip(plain_module.named_parameters(), module_module.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)
    # A network that is not a plain Actor/Critic MLP keeps the module path.
    plain_module.critic2 = torch.nn.Linear(1, 1)
    assert PlainTD3Networks.of(plain_module) is None


def test_fused_adam_step_is_bitwise_optimizer_step_and_follows_restored_state():
    def make():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        return net, torch.optim.Adam(net.parameters(), lr=1e-2, eps=1e-7, fused=True)

    def grads(net, seed):
        g = torch.Generator().manual_seed(seed)
        for p in net.parameters():
            p.grad = torch.randn(p.shape, generator=g)

    (ref, ref_opt), (net, opt) = make(), make()
    direct = FusedAdamStep(opt)
    for seed in range(4):
        grads(ref, seed), grads(net, seed)
        ref_opt.step()
        direct()  # the first call creates the state through opt.step(), later ones direct
    assert direct._state_dict is opt.state
    for p, q in zip(net.parameters(), ref.parameters()):
        assert torch.equal(p, q)
    assert all(torch.equal(opt.state[p]["step"], torch.tensor(4.0)) for p in net.parameters())

    # Restored optimiser state (a new state dict) is picked up, not the stale tensors.
    opt.load_state_dict(copy.deepcopy(ref_opt.state_dict()))
    grads(ref, 9), grads(net, 9)
    ref_opt.step()
    direct()
    assert direct._state_dict is opt.state
    for p, q in zip(net.parameters(), ref.parameters()):
        assert torch.equal(p, q)

    # With a hook registered, the optimiser's own step runs (and so does the hook).
    calls = []
    opt.register_step_post_hook(lambda *_: calls.append(1))
    direct()
    assert calls == [1]
