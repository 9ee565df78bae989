"""An env's observation and action spaces, and which algorithms can train on them.

Checked before any job starts: today a TD3 run on a discrete-action task fails minutes into
its job, after Ray has started. Reading the spaces means building the env once
(``gymnasium.make`` + ``close``); PyBullet tasks take ~0.5 s each, so the summary is cached
on disk per env id, env_config and package versions (``$DDRL_CACHE_DIR``, else
``$XDG_CACHE_HOME/ddrl`` or ``~/.cache/ddrl``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping

from ddrl.errors import ConfigError

log = logging.getLogger(__name__)

CACHE_VERSION = 1
# Envs from these distributions are cached: their spaces change only with their version.
# A user's own ``module:EnvId`` is read every time (its code may change between runs).
CACHED_PACKAGES = ("gymnasium", "pybullet_envs_gymnasium")


def cache_dir() -> Path:
    if os.environ.get("DDRL_CACHE_DIR"):
        return Path(os.environ["DDRL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ddrl"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def describe_space(space: Any) -> dict[str, Any]:
    """A JSON summary of a gymnasium space: what the compatibility rules need."""
    import numpy as np
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "bounded": bool(np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)))}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "shape": list(space.shape)}
    return {"type": type(space).__name__, "repr": str(space)[:200]}


def space_text(d: Mapping[str, Any]) -> str:
    if d["type"] == "Box":
        return f"Box(shape={tuple(d['shape'])}{'' if d['bounded'] else ', unbounded'})"
    if d["type"] == "Discrete":
        return f"Discrete({d['n']})"
    if d["type"] == "MultiDiscrete":
        return f"MultiDiscrete(shape={tuple(d['shape'])})"
    return d.get("repr") or d["type"]


def _probe(env_id: str, env_config: Mapping[str, Any]) -> dict[str, Any]:
    from ddrl.envs import make_env

    try:
        env = make_env(env_id, **dict(env_config))
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - any constructor error is the user's to see
        raise ConfigError(
            f"env {env_id!r} cannot be built to read its spaces (env_config={dict(env_config)}): "
            f"{type(err).__name__}: {err}"
        ) from None
    try:
        return {"observation": describe_space(env.observation_space),
                "action": describe_space(env.action_space),
                "entry_point": str(getattr(env.spec, "entry_point", "") or "")}
    finally:
        env.close()


def _cache_key(env_id: str, env_config: Mapping[str, Any]) -> str:
    parts = [CACHE_VERSION, env_id, dict(env_config),
             {d: _version(d) for d in ("gymnasium", "pybullet", "pybullet_envs_gymnasium")}]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _cacheable(entry_point: str) -> bool:
    return entry_point.split(".")[0].split(":")[0] in CACHED_PACKAGES


def env_spaces(env_id: str, env_config: Mapping[str, Any] | None = None,
               use_cache: bool = True) -> dict[str, Any]:
    """``{"observation": ..., "action": ...}`` summaries of ``env_id``'s spaces (cached)."""
    env_config = dict(env_config or {})
    return _env_spaces(env_id, json.dumps(env_config, sort_keys=True, default=str), use_cache)


@functools.lru_cache(maxsize=256)
def _env_spaces(env_id: str, env_config_json: str, use_cache: bool) -> dict[str, Any]:
    env_config = json.loads(env_config_json)
    path = cache_dir() / "spaces" / f"{_cache_key(env_id, env_config)}.json"
    if use_cache:
        try:
            cached = json.loads(path.read_text())
            if cached.get("env") == env_id:
                return cached["spaces"]
        except (OSError, ValueError, KeyError):
            pass
    spaces = _probe(env_id, env_config)
    if use_cache and _cacheable(spaces["entry_point"]):
        from ddrl.atomic import write_json

        try:
            write_json(path, {"env": env_id, "env_config": env_config, "spaces": spaces})
        except OSError as err:  # a read-only home only costs speed
            log.debug("cannot cache the spaces of %s in %s: %s", env_id, path, err)
    return spaces


# What each algorithm trains on. PPO: RLlib's default catalog (Gaussian or categorical head).
# SAC/TD3: squashed/tanh actions rescaled to the Box bounds, so the bounds must be finite.
# ddrl's SAC transition loop trains continuous actions only (ddrl.algorithms.fast_sac).
def check_algorithm_spaces(algorithm: str, env_id: str, spaces: Mapping[str, Any],
                           hyperparameters: Mapping[str, Any], where: str | None = None) -> None:
    """Raise :class:`ConfigError` when ``algorithm`` cannot train on these spaces."""
    obs, act = spaces["observation"], spaces["action"]
    where = where or f"algorithm {algorithm} on env {env_id!r}"
    if obs["type"] != "Box" or len(obs.get("shape", [])) != 1:
        raise ConfigError(
            f"{where}: observation space {space_text(obs)} is not supported; ddrl's networks "
            "take a flat vector: a 1-D Box observation space"
        )
    if algorithm == "PPO":
        if act["type"] not in ("Box", "Discrete", "MultiDiscrete"):
            raise ConfigError(f"{where}: action space {space_text(act)} is not supported; "
                              "PPO accepts Box, Discrete or MultiDiscrete actions")
        return
    continuous = act["type"] == "Box" and len(act["shape"]) == 1
    if algorithm == "SAC" and hyperparameters.get("replay_buffer_type") != "TransitionReplayBuffer":
        if act["type"] == "Discrete" or continuous:  # RLlib's own SAC: discrete or continuous
            if continuous and not act["bounded"]:
                raise ConfigError(f"{where}: action space {space_text(act)} has infinite "
                                  "bounds; SAC needs a Box with finite low and high")
            return
        raise ConfigError(f"{where}: action space {space_text(act)} is not supported; SAC with "
                          f"replay_buffer_type={hyperparameters.get('replay_buffer_type')} "
                          "accepts a 1-D Box or Discrete actions")
    if not continuous:
        hint = ("; for discrete actions use PPO" if algorithm == "TD3" else
                "; for discrete actions use PPO, or SAC with replay_buffer_type: "
                "EpisodeReplayBuffer")
        raise ConfigError(
            f"{where}: action space {space_text(act)} is not supported; {algorithm} "
            f"needs continuous actions: a 1-D Box{hint}"
        )
    if not act["bounded"]:
        raise ConfigError(f"{where}: action space {space_text(act)} has infinite bounds; "
                          f"{algorithm} needs a Box with finite low and high")
