"""Test-only gymnasium envs that fail on purpose.

Import the module to register them; RLlib gets ``faulty_envs:FaultyCartPole-v0`` so every
env-runner process imports it (``tests/faults`` must be on ``PYTHONPATH``).

A fault is a *token*: a file in ``fault_dir``. At step ``fail_at`` of an episode the env
tries to claim one token by renaming it; whoever wins the rename fails, so the number of
tokens is exactly the number of faults, whichever runner process hits them.

``mode``:
  - ``raise``: ``step`` raises RuntimeError;
  - ``kill``: the process sends itself SIGKILL (a segfaulting simulator);
  - ``construct``: the constructor raises while any token is left, in Ray's processes only (a
    run that passes validation, which builds the env once to read its spaces before any
    job starts, but whose env runners cannot start).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import gymnasium as gym
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

ENV_ID = "FaultyCartPole-v0"


class FaultError(RuntimeError):
    """The injected fault."""


def make_tokens(fault_dir: Path, count: int) -> Path:
    fault_dir.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (fault_dir / f"token_{i}").touch()
    return fault_dir


def claimed(fault_dir: Path) -> int:
    return len(list(Path(fault_dir).glob("claimed_*")))


def _claim(fault_dir: str) -> bool:
    for token in sorted(Path(fault_dir).glob("token_*")):
        try:
            os.rename(token, token.with_name(f"claimed_{token.name}_{os.getpid()}"))
            return True
        except FileNotFoundError:  # another runner took it
            continue
    return False


def _in_ray_process() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


class FaultyCartPole(CartPoleEnv):
    def __init__(self, fault_dir: str = "", fail_at: int = 10, mode: str = "raise", **kwargs):
        if (mode == "construct" and fault_dir and any(Path(fault_dir).glob("token_*"))
                and _in_ray_process()):
            raise FaultError(f"injected fault: {ENV_ID} cannot start (tokens in {fault_dir})")
        super().__init__(**kwargs)
        self.fault_dir, self.fail_at, self.mode = fault_dir, fail_at, mode
        self._steps = 0

    def reset(self, **kwargs):
        self._steps = 0
        return super().reset(**kwargs)

    def step(self, action):
        self._steps += 1
        if self.fault_dir and self.mode != "construct" and self._steps == self.fail_at:
            if _claim(self.fault_dir):
                if self.mode == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise FaultError(f"injected fault in {ENV_ID} at step {self._steps}")
        return super().step(action)


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=FaultyCartPole, max_episode_steps=200)
