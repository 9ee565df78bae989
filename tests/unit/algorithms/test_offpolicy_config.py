"""Settings of ddrl's off-policy loop and the driver's learner threads: bad values are
refused with errors naming them; the registry maps replay_buffer_type to the right path."""

from __future__ import annotations

import pytest
import torch

from ddrl.algorithms.sac.sac import ConcatQSACTorchRLModule, FastSACConfig
from ddrl.algorithms.td3.td3 import TD3Config
from ddrl.algorithms.threads import learner_threads
from harness.sampling import run_spec
from ddrl.training.train import build_algorithm_config


def _sac(**training) -> FastSACConfig:
    return FastSACConfig().environment("Pendulum-v1").training(**training)


@pytest.mark.parametrize("training, message", [
    ({"n_step": 3}, "`n_step` must be 1"),
    ({"updates_per_step": 0}, "`updates_per_step` must be > 0"),
    ({"grad_clip": 1.0}, "`grad_clip` is not applied"),
    ({"replay_buffer_config": {"type": "ReservoirBuffer"}}, "'ReservoirBuffer' is not supported"),
    ({"lr": 1e-3}, "set `lr` to None"),
    ({"critic_loss": "l1"}, "`critic_loss` must be one of"),
    ({"critic_loss": "mse", "replay_buffer_config": {"type": "EpisodeReplayBuffer"}},
     "applied by the TransitionReplayBuffer path only"),
    ({"warmup_actions": "random"}, "`warmup_actions` must be one of"),
    ({"warmup_actions": "uniform", "replay_buffer_config": {"type": "EpisodeReplayBuffer"}},
     "`warmup_actions: uniform` is applied by the TransitionReplayBuffer path only"),
])
def test_fast_sac_refuses_settings_its_loop_cannot_honour(training, message):
    with pytest.raises(ValueError, match=message):
        _sac(**training).validate()


def test_episode_buffers_run_rllibs_own_training_step_and_checks():
    # n-step returns are fine with RLlib's episode buffer (RLlib's training step) ...
    config = _sac(n_step=3, replay_buffer_config={"type": "EpisodeReplayBuffer"})
    config.rollout_fragment_length = 3
    config.validate()
    assert not config.uses_transition_buffer
    # ... where RLlib's SACConfig.validate runs (it refuses an `lr`).
    with pytest.raises(ValueError, match="Basic learning rate parameter `lr` is not `None`"):
        _sac(lr=1e-3, replay_buffer_config={"type": "EpisodeReplayBuffer"}).validate()


def test_td3_shares_the_loop_and_keeps_its_own_checks():
    TD3Config().environment("Pendulum-v1").validate()
    with pytest.raises(ValueError, match="`policy_delay` must be >= 1"):
        TD3Config().environment("Pendulum-v1").training(policy_delay=0).validate()
    with pytest.raises(ValueError, match="TransitionReplayBuffer path trains on a single learner"):
        TD3Config().environment("Pendulum-v1").learners(num_learners=2).validate()


@pytest.mark.parametrize("buffer, fragment", [("TransitionReplayBuffer", 64),
                                              ("PrioritizedEpisodeReplayBuffer", 1)])
def test_registry_sac_selects_the_loop_from_replay_buffer_type(buffer, fragment):
    spec = run_spec("SAC", "Pendulum-v1", 0,
                    {"replay_buffer_type": buffer, "rollout_fragment_length": fragment})
    config = build_algorithm_config(spec)
    assert config.replay_buffer_config["type"] == buffer
    assert config.uses_transition_buffer == (buffer == "TransitionReplayBuffer")
    assert config.get_rollout_fragment_length() == fragment
    assert config.get_default_rl_module_spec().module_class is ConcatQSACTorchRLModule
    config.validate()


def test_learner_threads_sets_and_restores_torch_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("DDRL_LEARNER_THREADS", "1")
    with learner_threads() as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    for bad in ("0", "two"):
        monkeypatch.setenv("DDRL_LEARNER_THREADS", bad)
        with pytest.raises(ValueError, match=r"\$DDRL_LEARNER_THREADS must be an integer >= 1"):
            with learner_threads():
                pass


def test_fast_sac_refuses_discrete_actions_with_a_named_error():
    from ddrl.training.runtime import ray_session

    spec = run_spec("SAC", "CartPole-v1", 0, {}, {"num_env_runners": 0})
    with ray_session(num_cpus=1):
        with pytest.raises(ValueError, match=r"trains continuous \(Box\) actions.*Discrete\(2\)"):
            build_algorithm_config(spec).build_algo()


def test_sac_critic_loss_default_leaves_run_ids_alone():
    # critic_loss came after SAC runs existed: at its default (huber, what they trained
    # with) it is left out of the spec, so their run ids and results stay valid.
    default = run_spec("SAC", "Pendulum-v1", 0, {})
    explicit = run_spec("SAC", "Pendulum-v1", 0, {"critic_loss": "huber"})
    mse = run_spec("SAC", "Pendulum-v1", 0, {"critic_loss": "mse"})
    assert "critic_loss" not in default.hyperparameters
    assert explicit.run_id == default.run_id
    assert mse.run_id != default.run_id and mse.hyperparameters["critic_loss"] == "mse"
    assert build_algorithm_config(default).critic_loss == "huber"
    assert build_algorithm_config(mse).critic_loss == "mse"


def test_sac_warmup_actions_default_leaves_run_ids_alone():
    default = run_spec("SAC", "Pendulum-v1", 0, {})
    uniform = run_spec("SAC", "Pendulum-v1", 0, {"warmup_actions": "uniform"})
    assert "warmup_actions" not in default.hyperparameters
    assert run_spec("SAC", "Pendulum-v1", 0, {"warmup_actions": "policy"}).run_id == default.run_id
    assert uniform.run_id != default.run_id
    assert build_algorithm_config(default).warmup_actions == "policy"
    assert build_algorithm_config(uniform).warmup_actions == "uniform"
