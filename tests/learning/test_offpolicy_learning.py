"""TD3 and SAC learn Pendulum-v1 from the ddrl registry config; checkpoints restore exactly.

Both train through ddrl's transition-buffer loop (the default; ``ddrl.algorithms.offpolicy``).
One training run per algorithm (fixed seed) is shared by the tests in this module:
- the learning test evaluates the deterministic policy on fresh episodes and asserts the
  mean return;
- the restore test loads the checkpoint with ``Algorithm.from_checkpoint`` and checks the
  restored policy gives the live policy's deterministic actions.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from ddrl.algorithms import get_algorithm
from ddrl.agents.policy import default_deterministic_actions
from ddrl.training.runtime import ray_session
from ddrl.config.schema import RESOURCES
from ddrl.runs import RunSpec
from ddrl.training.train import build_algorithm_config

pytestmark = pytest.mark.slow

ENV = "Pendulum-v1"
SEED = 7
TARGET = -250.0  # random policy: about -1200; solved: about -150
EVAL_SEEDS = range(1000, 1010)
COMMON = {
    "gamma": 0.98,
    "num_steps_sampled_before_learning_starts": 1000,
    "timesteps_per_iteration": 1000,
    "rollout_fragment_length": 50,
}
# (env-step budget, hyperparameters) per algorithm.
RUNS = {
    "TD3": (9000, {**COMMON, "actor_hiddens": [64, 64], "critic_hiddens": [64, 64]}),
    "SAC": (8000, {**COMMON, "fcnet_hiddens": [64, 64]}),
}


def _spec(algorithm: str) -> RunSpec:
    resources = {k: v["default"] for k, v in RESOURCES["properties"].items()}
    budget, hyperparameters = RUNS[algorithm]
    return RunSpec(
        algorithm=algorithm, env=ENV, seed=SEED, resources=resources,
        budget={"env_steps": budget},
        hyperparameters=get_algorithm(algorithm).resolve(hyperparameters),
        fault_tolerance={"max_env_runner_restarts": 0, "restart_delay_s": 1},
    )


def _actions(module, obs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.as_tensor(obs, dtype=torch.float32)})
        return default_deterministic_actions(module, out).numpy()


def _evaluate(module) -> list[float]:
    """Deterministic returns on fresh episodes; actions rescaled from [-1, 1] like RLlib does."""
    env = gym.make(ENV)
    low, high = env.action_space.low, env.action_space.high
    returns = []
    for seed in EVAL_SEEDS:
        obs, _ = env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            a = np.clip(_actions(module, obs[None])[0], -1.0, 1.0)
            obs, r, term, trunc, _ = env.step(low + (a + 1.0) * (high - low) / 2.0)
            total += float(r)
            done = term or trunc
        returns.append(total)
    env.close()
    return returns


@pytest.fixture(scope="module", params=sorted(RUNS))
def trained(request, tmp_path_factory):
    from ray.rllib.algorithms.algorithm import Algorithm

    spec = _spec(request.param)
    budget = spec.budget["env_steps"]
    ckpt = tmp_path_factory.mktemp(request.param.lower()) / "checkpoint"
    probe = np.random.default_rng(0).uniform(-1, 1, size=(64, 3)).astype(np.float32)
    torch.manual_seed(SEED)
    with ray_session(num_cpus=spec.cpus):
        algo = build_algorithm_config(spec).build_algo()
        try:
            steps = 0
            while steps < budget:
                steps = int(algo.train()["num_env_steps_sampled_lifetime"])
            live = algo.learner_group._learner.module["default_policy"]
            returns = _evaluate(live)
            live_actions = _actions(live, probe)
            algo.save_to_path(str(ckpt))
        finally:
            algo.stop()
        restored = Algorithm.from_checkpoint(str(ckpt))
        try:
            restored_actions = _actions(restored.get_module("default_policy"), probe)
            restored_learner_actions = _actions(
                restored.learner_group._learner.module["default_policy"], probe)
        finally:
            restored.stop()
    return {"algorithm": spec.algorithm, "steps": steps, "returns": returns, "live": live_actions,
            "restored": restored_actions, "restored_learner": restored_learner_actions}


def test_learns_pendulum(trained):
    mean = float(np.mean(trained["returns"]))
    print(f"{trained['algorithm']} {ENV}: deterministic mean return {mean:.1f} over {len(EVAL_SEEDS)} episodes "
          f"after {trained['steps']} env steps")
    assert math.isfinite(mean)
    assert mean > TARGET, f"mean return {mean:.1f} <= {TARGET} after {trained['steps']} steps"


def test_restored_checkpoint_acts_like_live_policy(trained):
    # The env runner's (inference-only) module and the learner's module both restore.
    np.testing.assert_array_equal(trained["restored"], trained["live"])
    np.testing.assert_array_equal(trained["restored_learner"], trained["live"])
    # The policy is not trivially constant.
    assert np.ptp(trained["live"]) > 0.1
