"""A CPU learner's threads (``learner_num_threads``, ``learner_thread_mode``): in ``kernels``
mode torch's threads share each op and a local learner drops to one while its remote env
runners sample (``SharedCores``); in ``parts`` mode the minibatch is split over threads."""

from __future__ import annotations

import pytest
import torch

from ddrl.algorithms.offpolicy import SharedCores
from ddrl.algorithms.sac.sac import FastSACConfig
from ddrl.runs import RunSpec
from ddrl.algorithms.threads import LEARNER_THREAD_MODE_ENV, learner_thread_mode
from ddrl.training.runtime import ray_session
from ddrl.training.train import build_algorithm_config
from helpers.offpolicy import random_transitions
from helpers.specs import unit_spec

pytestmark = pytest.mark.usefixtures("restore_torch_threads")


@pytest.fixture
def restore_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _learner(**training):
    import gymnasium as gym
    import numpy as np

    spaces = (gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
              gym.spaces.Box(-1.0, 1.0, (1,), np.float32))
    config = (FastSACConfig().environment(observation_space=spaces[0], action_space=spaces[1])
              .training(num_steps_sampled_before_learning_starts=0, **training)
              .rl_module(model_config={"fcnet_hiddens": [8], "fcnet_activation": "relu"}))
    return config.build_learner(spaces={"default_policy": spaces})


@pytest.mark.parametrize("mode, parts, torch_threads", [("kernels", 1, 2), ("parts", 2, 1)])
def test_the_mode_decides_between_torch_threads_and_minibatch_parts(mode, parts, torch_threads):
    learner = _learner(learner_num_threads=2, learner_thread_mode=mode)
    assert learner._batch_parts == parts
    assert torch.get_num_threads() == torch_threads


def test_the_mode_defaults_to_kernels_and_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(LEARNER_THREAD_MODE_ENV, raising=False)
    assert learner_thread_mode() == "kernels"
    monkeypatch.setenv(LEARNER_THREAD_MODE_ENV, "parts")
    assert _learner(learner_num_threads=2)._batch_parts == 2
    monkeypatch.setenv(LEARNER_THREAD_MODE_ENV, "halves")
    expected = r"DDRL_LEARNER_THREAD_MODE must be one of \['kernels', 'parts'\], got 'halves'"
    with pytest.raises(ValueError, match=expected):
        learner_thread_mode()


def test_a_bad_mode_or_thread_count_is_refused_by_the_config():
    with pytest.raises(ValueError, match="`learner_thread_mode` must be one of"):
        FastSACConfig().training(learner_thread_mode="halves").validate()
    with pytest.raises(ValueError, match="`learner_num_threads` must be an int >= 1"):
        FastSACConfig().training(learner_num_threads=0).validate()


def test_shared_cores_gives_one_thread_while_sampling_and_all_after():
    sampling = iter([True, True, False])
    shared = SharedCores(3, lambda: next(sampling), every=2)
    seen = []
    for i in range(6):
        shared(i)
        seen.append(torch.get_num_threads())
    assert seen == [1, 1, 1, 1, 3, 3]  # looked at updates 0, 2 and 4 only
    torch.set_num_threads(1)
    shared.restore()
    assert torch.get_num_threads() == 3


def test_the_learner_calls_the_hook_before_every_update():
    learner = _learner()
    calls = []
    learner.update_from_transitions(random_transitions(5 * 16, 3, 1), 5, 16,
                                    before_update=calls.append)
    assert calls == [0, 1, 2, 3, 4]


def _spec(runners: int) -> RunSpec:
    hp = {"train_batch_size": 16, "num_steps_sampled_before_learning_starts": 32,
          "timesteps_per_iteration": 64, "rollout_fragment_length": 8, "updates_per_step": 8.0,
          "replay_buffer_capacity": 10_000, "fcnet_hiddens": [32, 32]}
    return unit_spec("SAC", hp, num_env_runners=runners)


def test_a_local_learner_yields_a_core_while_its_remote_runner_samples(monkeypatch):
    """Real SAC, one remote env runner sampling while the learner trains: the learner trains
    on one thread while the fragment is out and on both once it is back, and every sampled
    fragment still reaches the replay buffer (results fetched early are kept)."""
    seen = []
    call = SharedCores.__call__

    def spy(self, i):
        call(self, i)
        if i % self.every == 0:
            seen.append(torch.get_num_threads())

    monkeypatch.setattr(SharedCores, "__call__", spy)
    config = build_algorithm_config(_spec(runners=1)).training(learner_num_threads=2,
                                                               learner_thread_mode="kernels")
    with ray_session(num_cpus=2):
        algo = config.build_algo()
        try:
            for _ in range(6):
                result = algo.train()
            assert algo._shared_cores() is not None
            sampled = result["env_runners"]["num_env_steps_sampled_lifetime"]
            assert len(algo.local_replay_buffer) == sampled
            assert torch.get_num_threads() == 2  # all threads back between training steps
        finally:
            algo.stop()
    assert 1 in seen and 2 in seen and set(seen) == {1, 2}


def test_no_core_sharing_without_remote_runners_or_in_parts_mode():
    with ray_session(num_cpus=1):
        for config in (build_algorithm_config(_spec(runners=0)).training(learner_num_threads=2),
                       build_algorithm_config(_spec(runners=1)).training(
                           learner_num_threads=2, learner_thread_mode="parts")):
            algo = config.build_algo()
            try:
                assert algo._shared_cores() is None
            finally:
                algo.stop()
