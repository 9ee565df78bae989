"""A test-only task for the search tests, made through gymnasium's ``module:EnvId`` form
(``search_env:TargetBandit-v0``), so Ray's env runners import it themselves (the tests put
this folder on PYTHONPATH).

Each step the agent picks a number in [-1, 1] and is rewarded by how close it lies to
TARGET: ``1 - (a - TARGET)^2``. Observations carry no information. Episodes last EPISODE_LEN
steps, so the best return is EPISODE_LEN. A random policy scores well below that, and how
far PPO gets within a few iterations depends on its learning rate: with ``lr`` 1e-6 it
stays where it started, with 3e-2 it moves to the target. That makes the best trial of a
search over ``lr`` known in advance.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

TARGET = 0.8
EPISODE_LEN = 5


class TargetBandit(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, **kwargs):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        a = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        self._t += 1
        reward = 1.0 - (a - TARGET) ** 2
        return np.zeros(1, np.float32), reward, False, self._t >= EPISODE_LEN, {}


if "TargetBandit-v0" not in gym.registry:
    gym.register("TargetBandit-v0", entry_point=TargetBandit)
