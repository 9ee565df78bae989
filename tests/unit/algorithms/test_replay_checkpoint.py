"""``fault_tolerance.store_buffer_in_checkpoints``: an off-policy checkpoint carries the replay
buffer, so a resumed run continues with its transitions (RLlib's new API stack saves none)."""

from __future__ import annotations

import numpy as np
import pytest

from ddrl.algorithms.offpolicy import REPLAY_BUFFER_STATE
from ddrl.runs import RunSpec
from ddrl.training.runtime import ray_session
from ddrl.training.train import build_algorithm_config
from helpers.specs import unit_spec

SMALL = {"train_batch_size": 32, "num_steps_sampled_before_learning_starts": 64,
         "timesteps_per_iteration": 128, "rollout_fragment_length": 32,
         "replay_buffer_capacity": 1000}


def _spec(algorithm: str, store: bool | None) -> RunSpec:
    ft = {} if store is None else {"store_buffer_in_checkpoints": store}
    hp = {**SMALL, "actor_hiddens": [16], "critic_hiddens": [16]} if algorithm == "TD3" \
        else {**SMALL, "fcnet_hiddens": [16]}
    return unit_spec(algorithm, hp, fault_tolerance=ft, num_env_runners=0)


def test_the_setting_is_absent_by_default_and_keeps_run_ids():
    from ddrl.config.schema import FAULT_TOLERANCE

    assert "default" not in FAULT_TOLERANCE["properties"]["store_buffer_in_checkpoints"]
    assert _spec("SAC", None).run_id != _spec("SAC", True).run_id


@pytest.mark.parametrize("algorithm", ["SAC", "TD3"])
def test_a_restored_algorithm_has_the_saved_transitions(algorithm, tmp_path):
    from ray.rllib.algorithms.algorithm import Algorithm

    with ray_session(num_cpus=1):
        for store in (True, False):
            algo = build_algorithm_config(_spec(algorithm, store)).build_algo()
            try:
                for _ in range(2):
                    algo.train()
                saved = algo.local_replay_buffer.get_state()
                path = tmp_path / f"store-{store}"
                algo.save_to_path(str(path))
            finally:
                algo.stop()
            assert saved["size"] == 256
            restored = Algorithm.from_checkpoint(str(path))
            try:
                state = restored.local_replay_buffer.get_state()
                if not store:  # RLlib's behaviour: a resumed run starts empty
                    assert len(restored.local_replay_buffer) == 0
                    continue
                assert (state["size"], state["next"], state["added"]) == (
                    saved["size"], saved["next"], saved["added"])
                for name, column in saved["arrays"].items():
                    np.testing.assert_array_equal(state["arrays"][name], column, err_msg=name)
                # ...and training goes on from them.
                restored.train()
                assert len(restored.local_replay_buffer) == 384
                # Weight syncs and module exports ask for components and never carry it.
                assert REPLAY_BUFFER_STATE not in restored.get_state(components="learner_group")
            finally:
                restored.stop()


def test_a_device_buffer_is_refused_and_a_gpu_run_stores_on_the_host():
    config = build_algorithm_config(_spec("SAC", True))
    config.num_gpus_per_learner = 1  # what a GPU run's config says (not validated here)
    assert not config.replay_buffer_on_learner
    config.replay_on_learner = True
    with pytest.raises(ValueError, match="store_buffer_in_checkpoints.*replay_on_learner: true"):
        config.validate()


def test_ppo_refuses_the_setting():
    from ddrl.errors import ConfigError

    spec = unit_spec("PPO", fault_tolerance={"store_buffer_in_checkpoints": True})
    with pytest.raises(ConfigError, match="PPO has no replay buffer"):
        build_algorithm_config(spec)


def test_a_study_setting_reaches_off_policy_runs_only():
    from ddrl.study.study import Study

    config = {"study": "s", "fault_tolerance": {"store_buffer_in_checkpoints": True},
              "experiments": [{"name": "e", "purpose": "learning", "algorithms": ["SAC", "PPO"],
                               "envs": ["Pendulum-v1"], "seeds": [1],
                               "budget": {"env_steps": 5000}}]}
    runs = Study.from_config(config).runs.values()
    stored = {s.algorithm: s.fault_tolerance.get("store_buffer_in_checkpoints") for s in runs}
    assert stored == {"SAC": True, "PPO": None}
    plain = {**config, "fault_tolerance": {}}
    ids = {s.algorithm: s.run_id for s in Study.from_config(plain).runs.values()}
    assert {s.algorithm: s.run_id for s in runs}["PPO"] == ids["PPO"]
    # Stated off, it is the default: the same run ids.
    off = {**config, "fault_tolerance": {"store_buffer_in_checkpoints": False}}
    assert {s.algorithm: s.run_id for s in Study.from_config(off).runs.values()} == ids
