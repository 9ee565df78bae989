"""Gymnasium environment ids, including the PyBullet tasks.

``pybullet_envs_gymnasium`` registers the Bullet tasks when imported. RLlib's env runners
are separate processes, so we hand RLlib the ``module:EnvId`` form, which makes gymnasium
import the module inside whichever process builds the env.

An env's observation and action spaces, and which algorithms can train on them:
:mod:`ddrl.envs.spaces`.
"""

from __future__ import annotations

import functools
import importlib

import gymnasium as gym

from ddrl.errors import ConfigError

PYBULLET_MODULE = "pybullet_envs_gymnasium"


@functools.lru_cache(maxsize=1)
def _pybullet_ids() -> frozenset[str]:
    before = set(gym.registry)
    try:
        importlib.import_module(PYBULLET_MODULE)
    except ImportError:  # pragma: no cover - a dependency of the package
        return frozenset()
    after = set(gym.registry)
    # When something imported the module earlier, fall back to the name pattern.
    new = after - before
    return frozenset(new or {e for e in after if "Bullet" in e})


def rllib_env_id(env_id: str) -> str:
    """The id to give RLlib so that any process can make the env."""
    if ":" not in env_id and env_id in _pybullet_ids():
        return f"{PYBULLET_MODULE}:{env_id}"
    return env_id


def check_env_id(env_id: str) -> None:
    """Raise :class:`ConfigError` unless gymnasium can make ``env_id``."""
    module, _, name = env_id.rpartition(":")
    if module:
        if module.startswith("."):
            raise ConfigError(f"env {env_id!r}: module {module!r} must be an absolute module "
                              "name (module:EnvId, e.g. pybullet_envs_gymnasium:HopperBulletEnv-v0)")
        try:
            importlib.import_module(module)
        except (ImportError, ValueError) as err:
            raise ConfigError(f"env {env_id!r}: cannot import module {module!r} ({err})") from None
    else:
        _pybullet_ids()
        name = env_id
    if name not in gym.registry:
        close = sorted(e for e in gym.registry if name.split("-")[0].lower() in e.lower())[:8]
        hint = f"; similar ids: {close}" if close else "; see gymnasium.registry for known ids"
        raise ConfigError(f"unknown env id {env_id!r}{hint}")


def make_env(env_id: str, **kwargs) -> gym.Env:
    """``gym.make`` that also knows the PyBullet ids."""
    check_env_id(env_id)
    return gym.make(rllib_env_id(env_id), **kwargs)
