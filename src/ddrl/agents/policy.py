"""A run's trained policy, restored from its checkpoint without an Algorithm or Ray cluster.

RLlib (new API stack) splits a policy over three places in a checkpoint:

- the RLModule (``learner_group/learner/rl_module/default_policy``): the networks;
- the env-to-module connector (``env_runner/env_to_module_connector``): observation
  preprocessing, e.g. the running mean/std of a ``MeanStdFilter``;
- the module-to-env connector (``env_runner/module_to_env_connector``): how the module's
  actions in [-1, 1] are rescaled (``normalize_actions``) or clipped to the env's bounds.

Restoring only the RLModule silently drops the filter state, and the policy then scores far
below what training reported. :func:`load_policy` restores all three and folds them into one
torch module, :class:`PolicyNet`, that maps a batch of raw env observations to a batch of
deterministic env actions. Evaluation, rendering and the TorchScript export
(:mod:`ddrl.agents.export`) all run this same module, so what is evaluated is what is served.

The deterministic action of an algorithm
---------------------------------------
- modules whose ``forward_inference`` returns ``actions`` (TD3) use them as they are;
- a Gaussian policy (PPO) uses the mean;
- a tanh-squashed Gaussian (SAC) uses the squashed mean, ``tanh(mu)`` rescaled to the
  bounds: the mode of the policy. (RLlib 2.60's ``TorchSquashedGaussian.to_deterministic()``
  returns the *unsquashed* mean, which the env runner then clips; ddrl does not copy that.)

An algorithm can override this with a function in its registry entry,
``AlgorithmSpec.extra["deterministic_actions"]``: ``f(module, fwd_out) -> actions`` in the
module's action space (normalised to [-1, 1] when ``normalize_actions`` is on). It must be
traceable by ``torch.jit.trace`` (tensor operations only).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ddrl.agents.restore import (ObsFilter, component_dirs, expected_env_and_algorithm,
                                 normalizes_actions, observation_filter, read_checkpoint_manifest,
                                 restore_component)
from ddrl.errors import CheckpointError, ConfigError, DdrlError
from ddrl.runs import RunFolder, RunSpec

log = logging.getLogger(__name__)


# What an exported policy file (policy.pt, policy.onnx) says it is, in its ddrl.json metadata.
FORMAT = "ddrl-policy"
VERSION = 1
EXTRA_FILE = "ddrl.json"


class ExportError(DdrlError):
    """The traced policy does not reproduce the restored one."""


def sample_observations(shape: tuple[int, ...], n: int, seed: int = 0) -> np.ndarray:
    """Observations spread over several scales (the raw env ranges are not known)."""
    rng = np.random.default_rng(seed)
    scale = rng.choice([0.1, 1.0, 5.0], size=(n, 1)).astype(np.float32)
    return (rng.standard_normal((n, *shape)).astype(np.float32)
            * scale.reshape((n,) + (1,) * len(shape)))


def _squashed_gaussian_mode(module: Any, fwd_out: dict) -> Any:
    dist_cls = module.get_inference_action_dist_cls()
    dist = dist_cls.from_logits(fwd_out["action_dist_inputs"])
    return dist._squash(dist.loc)


def default_deterministic_actions(module: Any, fwd_out: dict) -> Any:
    """The deterministic action from a module's ``forward_inference`` output (see top)."""
    from ray.rllib.core.distribution.torch.torch_distribution import TorchSquashedGaussian

    if "actions" in fwd_out:
        return fwd_out["actions"]
    if "action_dist_inputs" not in fwd_out:
        raise CheckpointError(
            f"{type(module).__name__}.forward_inference returned {sorted(fwd_out)}; "
            "expected 'actions' or 'action_dist_inputs'"
        )
    dist_cls = module.get_inference_action_dist_cls()
    if isinstance(dist_cls, type) and issubclass(dist_cls, TorchSquashedGaussian):
        return _squashed_gaussian_mode(module, fwd_out)
    return dist_cls.from_logits(fwd_out["action_dist_inputs"]).to_deterministic().sample()


def _torch():
    import torch

    return torch


def _policy_net_class():
    torch = _torch()

    class PolicyNet(torch.nn.Module):
        """Raw observations ``[B, *obs_shape]`` -> deterministic env actions ``[B, *act_shape]``."""

        def __init__(self, module: Any, obs_filter: ObsFilter | None, low: np.ndarray,
                     high: np.ndarray, normalize_actions: bool,
                     actions_fn: Callable[[Any, dict], Any]) -> None:
            super().__init__()
            self.module = module
            self.actions_fn = actions_fn
            self.normalize_actions = bool(normalize_actions)
            self.has_filter = obs_filter is not None
            f = obs_filter
            self.demean = bool(f and f.demean)
            self.destd = bool(f and f.destd)
            self.clip = float(f.clip) if f and f.clip else 0.0
            shape = module.observation_space.shape
            self.register_buffer("obs_mean", torch.as_tensor(
                f.mean if f else np.zeros(shape), dtype=torch.float64))
            self.register_buffer("obs_denom", torch.as_tensor(
                f.denom if f else np.ones(shape), dtype=torch.float64))
            self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

        def preprocess(self, obs):
            if not self.has_filter:
                return obs.float()
            x = obs.double()
            if self.demean:
                x = x - self.obs_mean
            if self.destd:
                x = x / self.obs_denom
            if self.clip:
                x = torch.clamp(x, -self.clip, self.clip)
            return x.float()

        def forward(self, obs):
            fwd_out = self.module.forward_inference({"obs": self.preprocess(obs)})
            actions = self.actions_fn(self.module, fwd_out).float()
            if self.normalize_actions:
                actions = self.low + (actions + 1.0) * (self.high - self.low) / 2.0
            # Always inside the env's bounds (RLlib clips too when normalize_actions is on).
            return torch.maximum(torch.minimum(actions, self.high), self.low)

    return PolicyNet


@dataclass
class RestoredPolicy:
    """A run's policy, ready to act; see :func:`load_policy`."""

    run_id: str
    algorithm: str
    env: str
    checkpoint: Path
    iteration: int
    env_steps: int
    module: Any
    obs_filter: ObsFilter | None
    action_low: np.ndarray
    action_high: np.ndarray
    normalize_actions: bool
    actions_fn: Callable[[Any, dict], Any]
    _net: Any = None

    @property
    def net(self) -> Any:
        """The torch module (eval mode) that evaluation, rendering and export share."""
        if self._net is None:
            self._net = _policy_net_class()(
                self.module, self.obs_filter, self.action_low, self.action_high,
                self.normalize_actions, self.actions_fn,
            ).eval()
        return self._net

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Deterministic env action(s) for one observation or a batch."""
        torch = _torch()
        obs = np.asarray(obs, dtype=np.float32)
        single = obs.shape == tuple(self.module.observation_space.shape)
        batch = obs[None] if single else obs
        with torch.no_grad():
            out = self.net(torch.from_numpy(batch)).numpy()
        return out[0] if single else out

    def metadata(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "algorithm": self.algorithm,
            "env": self.env,
            "checkpoint_iteration": self.iteration,
            "checkpoint_env_steps": self.env_steps,
            "observation_shape": list(self.module.observation_space.shape),
            "action_shape": list(self.action_low.shape),
            "action_low": self.action_low.tolist(),
            "action_high": self.action_high.tolist(),
            "observation_filter": (
                {"type": "MeanStdFilter", "count": self.obs_filter.count,
                 "clip": self.obs_filter.clip}
                if self.obs_filter else None
            ),
        }


def _env_spaces(env_id: str, env_config: dict[str, Any]) -> tuple[Any, Any]:
    from ddrl.envs import make_env

    env = make_env(env_id, **env_config)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _check_spaces_fit_module(module: Any, obs_space: Any, act_space: Any, env: str,
                             run_id: str) -> None:
    if tuple(obs_space.shape) != tuple(module.observation_space.shape):
        raise ConfigError(
            f"run {run_id}: env {env!r} has observations of shape {obs_space.shape}, but the "
            f"checkpoint's policy takes {module.observation_space.shape}; it was trained on "
            "another env"
        )
    if tuple(getattr(act_space, "shape", ()) or ()) != tuple(module.action_space.shape or ()):
        raise ConfigError(
            f"run {run_id}: env {env!r} has actions of shape {act_space.shape}, but the "
            f"checkpoint's policy outputs {module.action_space.shape}"
        )
    if not (np.all(np.isfinite(act_space.low)) and np.all(np.isfinite(act_space.high))):
        raise ConfigError(f"run {run_id}: env {env!r} has an unbounded action space; "
                          "ddrl exports policies for bounded Box actions")


def _deterministic_actions_fn(algorithm: str | None) -> Callable[[Any, dict], Any]:
    """The registry entry's ``deterministic_actions`` override, else the default."""
    if algorithm:
        from ddrl.algorithms import ALGORITHMS

        spec = ALGORITHMS.get(algorithm)
        if spec is not None and spec.extra.get("deterministic_actions"):
            return spec.extra["deterministic_actions"]
    return default_deterministic_actions


def load_policy(checkpoint: str | Path, *, run_id: str, env: str | None = None,
                algorithm: str | None = None,
                env_config: dict[str, Any] | None = None) -> RestoredPolicy:
    """Restore the deterministic policy in ``checkpoint`` (a ddrl checkpoint directory).

    ``env`` and ``algorithm`` are what the caller expects (normally the run spec's); a
    checkpoint trained on something else is an error, as is a missing, incomplete or
    corrupt checkpoint. Needs RLlib installed but starts no Ray.
    """
    checkpoint = Path(checkpoint).resolve()
    manifest = read_checkpoint_manifest(checkpoint, run_id)
    env, algorithm = expected_env_and_algorithm(manifest, checkpoint, run_id, env, algorithm)

    from ray.rllib.connectors.connector_v2 import ConnectorV2
    from ray.rllib.core.rl_module.rl_module import RLModule

    module_dir, e2m_dir, m2e_dir = component_dirs()
    module = restore_component("RLModule", checkpoint / module_dir, RLModule.from_checkpoint,
                               run_id)
    e2m = restore_component("env-to-module connector", checkpoint / e2m_dir,
                            ConnectorV2.from_checkpoint, run_id)
    m2e = restore_component("module-to-env connector", checkpoint / m2e_dir,
                            ConnectorV2.from_checkpoint, run_id)
    module.eval()

    obs_space, act_space = _env_spaces(env, dict(env_config or {}))
    _check_spaces_fit_module(module, obs_space, act_space, env, run_id)
    return RestoredPolicy(
        run_id=run_id,
        algorithm=algorithm or type(module).__name__,
        env=env,
        checkpoint=checkpoint,
        iteration=int(manifest.get("iteration", -1)),
        env_steps=int(manifest.get("env_steps", -1)),
        module=module,
        obs_filter=observation_filter(e2m, run_id),
        action_low=np.asarray(act_space.low, dtype=np.float32),
        action_high=np.asarray(act_space.high, dtype=np.float32),
        normalize_actions=normalizes_actions(m2e),
        actions_fn=_deterministic_actions_fn(algorithm),
    )


def load_run_policy(spec: RunSpec, run_dir: str | Path, checkpoint: str | Path | None = None
                    ) -> RestoredPolicy:
    """:func:`load_policy` for a run spec: its final ``checkpoint/`` unless one is given."""
    path = Path(checkpoint) if checkpoint else RunFolder(run_dir).checkpoint
    return load_policy(path, run_id=spec.run_id, env=spec.env, algorithm=spec.algorithm,
                       env_config=dict(spec.env_config))
