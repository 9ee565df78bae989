"""ddrl's transition replay buffer (used by TD3): episodes in, uniform minibatches out."""

from __future__ import annotations

import numpy as np
import pytest

from ddrl.algorithms.replay import TransitionReplayBuffer, episode_transitions


def _episode(start: int, length: int, *, terminated=False, truncated=False):
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    ep = SingleAgentEpisode(observations=[np.array([start, 0.0], np.float32)])
    for t in range(1, length + 1):
        ep.add_env_step(
            observation=np.array([start + t, 0.0], np.float32),
            action=np.array([float(start + t - 1)], np.float32),
            reward=float(start + t - 1),
            terminated=terminated and t == length,
            truncated=truncated and t == length,
        )
    ep.to_numpy()
    return ep


def test_episode_transitions_pair_observations_and_flags():
    done = episode_transitions(_episode(0, 3, terminated=True))
    np.testing.assert_array_equal(done["obs"][:, 0], [0, 1, 2])
    np.testing.assert_array_equal(done["next_obs"][:, 0], [1, 2, 3])
    np.testing.assert_array_equal(done["actions"][:, 0], [0, 1, 2])
    np.testing.assert_array_equal(done["rewards"], [0, 1, 2])
    np.testing.assert_array_equal(done["terminateds"], [False, False, True])
    assert not done["truncateds"].any()
    cut = episode_transitions(_episode(10, 2, truncated=True))
    np.testing.assert_array_equal(cut["truncateds"], [False, True])
    assert not cut["terminateds"].any()
    running = episode_transitions(_episode(20, 2))
    assert not running["terminateds"].any() and not running["truncateds"].any()


def test_buffer_keeps_the_newest_transitions_and_samples_uniformly():
    buf = TransitionReplayBuffer(capacity=5, seed=0)
    assert buf.add([_episode(0, 3), _episode(100, 4, terminated=True)]) == 7
    assert len(buf) == 5 and buf.num_added == 7
    data = buf.sample(batch_size=200, num_batches=3)
    assert data["obs"].shape == (600, 2) and data["actions"].shape == (600, 1)
    # The two oldest transitions (obs 0 and 1) were overwritten.
    assert set(data["obs"][:, 0]) == {2.0, 100.0, 101.0, 102.0, 103.0}
    # Rows stay consistent: next_obs = obs + 1, reward = obs for these episodes.
    np.testing.assert_array_equal(data["next_obs"][:, 0], data["obs"][:, 0] + 1)
    np.testing.assert_array_equal(data["rewards"], data["obs"][:, 0])
    np.testing.assert_array_equal(data["terminateds"], data["obs"][:, 0] == 103.0)
    counts = np.unique(data["obs"][:, 0], return_counts=True)[1]
    assert counts.min() > 80  # 600 draws over 5 rows: about 120 each


def test_buffer_state_round_trip_and_errors():
    buf = TransitionReplayBuffer(capacity=4, seed=1)
    with pytest.raises(ValueError, match="empty"):
        buf.sample(2)
    buf.add([_episode(0, 6)])
    copy = TransitionReplayBuffer(capacity=4, seed=99)
    copy.set_state(buf.get_state())
    assert len(copy) == 4 and copy.num_added == 6
    a, b = buf.sample(8, 2), copy.sample(8, 2)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert set(a["obs"][:, 0]) <= {2.0, 3.0, 4.0, 5.0}
    with pytest.raises(ValueError, match="capacity"):
        TransitionReplayBuffer(capacity=3).set_state(buf.get_state())
    with pytest.raises(ValueError, match=">= 1"):
        TransitionReplayBuffer(capacity=0)
