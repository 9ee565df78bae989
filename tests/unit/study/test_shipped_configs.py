"""Every study config shipped in config/ expands, and the humanoid SAC study says what its
header promises: the thesis's Table 4 settings, its budget and its evaluation rhythm."""

from __future__ import annotations

import pytest

from ddrl.study.study import Study

from conftest import REPO

SHIPPED = sorted((REPO / "config").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_config_expands_into_runs(path):
    assert Study.from_file(path).runs, path


def test_humanoid_sac_study_runs_the_thesis_table_4_settings():
    study = Study.from_file(REPO / "config" / "thesis-humanoid-sac.yaml")
    per_step, thesis_rhythm = study.runs.values()
    # The thesis's update rate (16 rollout workers under RLlib 1.1's round robin) is the
    # second experiment's only difference.
    assert thesis_rhythm.hyperparameters == {**per_step.hyperparameters,
                                             "updates_per_step": 0.0625}
    assert thesis_rhythm.budget == per_step.budget
    spec = per_step
    assert (spec.algorithm, spec.env, spec.seed) == ("SAC", "HumanoidBulletEnv-v0", 1)
    hp = spec.hyperparameters
    # Thesis Table 4 (ddrl sizes policy and Q-nets alike: the Q-nets' [256, 256]).
    assert {k: hp[k] for k in ("tau", "actor_lr", "critic_lr", "gamma", "train_batch_size",
                               "initial_alpha", "fcnet_hiddens", "fcnet_activation")} == {
        "tau": 0.005, "actor_lr": 0.001, "critic_lr": 0.001, "gamma": 0.99,
        "train_batch_size": 256, "initial_alpha": 1.0, "fcnet_hiddens": [256, 256],
        "fcnet_activation": "relu"}
    # The repository's learning start and iteration length; SB3 can run the same settings.
    assert hp["num_steps_sampled_before_learning_starts"] == 10000
    assert hp["alpha_lr"] == hp["actor_lr"] and hp["critic_loss"] == "mse"
    # One update per env step, ddrl's default rhythm.
    assert hp["updates_per_step"] == 1.0 and hp["update_schedule"] == "fixed_ratio"
    assert spec.budget["env_steps"] == 600000 and spec.budget["return_threshold"] == 2200
    # A deterministic evaluation every 20k env steps, on 2 cores.
    assert spec.checkpoint_every * hp["timesteps_per_iteration"] == 20000
    assert study.config["evaluation"]["intermediate"] is True
    assert spec.cpus <= 2
