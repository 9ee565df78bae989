"""The data path between the env and the replay buffer (issue #34): the transitions that the
off-policy loop stores are the env's own. The env runner's episode chunks, turned into
transitions by :func:`ddrl.algorithms.replay.episode_transitions`, are replayed action by
action in a plain gymnasium loop on a fresh env with the runner's seed: every observation,
reward and termination flag must agree, episodes must end where the env ends them, and
consecutive chunks of one episode must chain (one chunk's last ``next_obs`` is the next
chunk's first ``obs``)."""

from __future__ import annotations

import numpy as np

from ddrl.algorithms.replay import COLUMNS, episode_transitions
from ddrl.envs import make_env
from ddrl.training.runtime import ray_session
from ddrl.training.train import build_algorithm_config
from helpers.specs import unit_spec

ENV, SEED, FRAGMENTS, FRAGMENT = "HopperBulletEnv-v0", 3, 12, 64


def _runner_episodes() -> list[dict[str, np.ndarray]]:
    """The local env runner's chunks (uniform warm-up actions), joined per episode, in the
    order the episodes started."""
    spec = unit_spec("SAC", {"num_steps_sampled_before_learning_starts": 10 ** 6,
                             "warmup_actions": "uniform", "fcnet_hiddens": [16]},
                     env=ENV, seed=SEED, env_steps=1, num_env_runners=0)
    with ray_session(num_cpus=1):
        algo = build_algorithm_config(spec).build_algo()
        try:
            chunks = [c for _ in range(FRAGMENTS)
                      for c in algo.env_runner.sample(num_timesteps=FRAGMENT, random_actions=True)]
        finally:
            algo.stop()
    parts: dict[str, list[dict]] = {}
    for chunk in chunks:
        parts.setdefault(chunk.id_, []).append(episode_transitions(chunk))
    episodes = []
    for chunk_parts in parts.values():
        for a, b in zip(chunk_parts, chunk_parts[1:]):
            np.testing.assert_array_equal(a["next_obs"][-1], b["obs"][0])
        episodes.append({name: np.concatenate([p[name] for p in chunk_parts]) for name in COLUMNS})
    return episodes


def test_stored_transitions_replay_identically_in_a_plain_env_loop():
    episodes = _runner_episodes()
    assert len(episodes) > 20 and sum(len(e["rewards"]) for e in episodes) == FRAGMENTS * FRAGMENT
    env = make_env(ENV)
    finished = 0
    for k, episode in enumerate(episodes):
        obs, _ = env.reset(seed=SEED) if k == 0 else env.reset()
        np.testing.assert_allclose(obs, episode["obs"][0], atol=1e-5)
        steps = len(episode["rewards"])
        for i in range(steps):
            obs, reward, terminated, truncated, _ = env.step(episode["actions"][i])
            np.testing.assert_allclose(obs, episode["next_obs"][i], atol=1e-5)
            assert abs(reward - episode["rewards"][i]) < 1e-4, (k, i)
            assert terminated == episode["terminateds"][i] and truncated == episode["truncateds"][i]
            if i < steps - 1:
                assert not (terminated or truncated), f"episode {k} went on past the env's end"
        finished += bool(episode["terminateds"][-1] or episode["truncateds"][-1])
    assert finished >= len(episodes) - 1  # only the last episode may be unfinished
