"""harness.sampling (bench/sampling.py's measurements) on a local PPO env runner, without Ray."""

from __future__ import annotations

import pytest

from harness.sampling import run_spec, time_env_runner, time_plain_loop
from ddrl.training.train import build_algorithm_config

ENV = "InvertedPendulumBulletEnv-v0"


@pytest.fixture(scope="module")
def runner():
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    spec = run_spec("PPO", ENV, seed=3,
                    hyperparameters={"train_batch_size": 300, "fcnet_hiddens": [16, 16]},
                    resources={"num_env_runners": 0, "num_envs_per_env_runner": 3})
    r = SingleAgentEnvRunner(config=build_algorithm_config(spec))
    yield r
    r.stop()


def test_env_runner_measurement_counts_whole_sample_calls(runner):
    out = time_env_runner(runner, steps=500, warmup_steps=50)
    # sample() returns train_batch_size (300) steps per call: two calls cover 500.
    assert out["calls"] == 2 and 600 <= out["env_steps"] < 600 + 3
    assert out["num_envs"] == 3 and out["steps_per_s"] > 0 and out["steps_per_cpu_s"] > 0
    assert out["episodes"] > 0 and 1 <= out["mean_episode_len"] <= 1000


def test_plain_loop_uses_the_runner_module_and_the_env_terminations(runner):
    out = time_plain_loop(runner.module, ENV, steps=400, seed=3, warmup_steps=20)
    assert out["env_steps"] == 400 and out["num_envs"] == 1
    # An untrained policy drops the pendulum within a few dozen steps, as in the runner.
    assert out["episodes"] > 0 and 1 <= out["mean_episode_len"] < 200
    assert out["seconds"] > 0 and out["cpu_s"] > 0


def test_profile_rows_come_back(runner):
    out = time_env_runner(runner, steps=1, warmup_steps=0, profile_top=5)
    assert "sample" in out["profile"] and out["calls"] == 1


def test_run_spec_rejects_unknown_resources():
    with pytest.raises(ValueError, match="num_runners"):
        run_spec("PPO", ENV, resources={"num_runners": 1})
