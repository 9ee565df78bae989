"""TD3's RLModule: a deterministic tanh actor and twin Q critics, each with a target copy.

Actions are produced in RLlib's normalised action space [-1, 1] (the env runners rescale
them to the environment's bounds, ``normalize_actions=True``).

- ``forward_inference``: ``pi(s)``, deterministic (evaluation, restored policies).
- ``forward_exploration``: ``clip(pi(s) + N(0, exploration_noise), -1, 1)``; while the
  ``uniform_warmup`` buffer is set (before ``num_steps_sampled_before_learning_starts``),
  uniform random actions instead. The learner clears the flag and the weight sync carries
  it to the env runners; it is part of the checkpointed state, so a resumed run does not
  warm up again.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

import numpy as np
import torch
from torch import nn

from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, TargetNetworkAPI
from ray.rllib.core.rl_module.torch import TorchRLModule

ACTIVATIONS = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "silu": nn.SiLU,
    "linear": nn.Identity,
}

DEFAULT_MODEL_CONFIG = {
    "actor_hiddens": [256, 256],
    "actor_activation": "relu",
    "critic_hiddens": [256, 256],
    "critic_activation": "relu",
    "exploration_noise": 0.1,
    "uniform_warmup": True,
}


def mlp(n_in: int, hiddens: List[int], n_out: int, activation: str) -> nn.Sequential:
    try:
        act = ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(
            f"unknown activation {activation!r}; expected one of {sorted(ACTIVATIONS)}"
        ) from None
    layers: List[nn.Module] = []
    for width in hiddens:
        layers += [nn.Linear(n_in, width), act()]
        n_in = width
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class Actor(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hiddens: List[int], activation: str):
        super().__init__()
        self.net = mlp(obs_dim, hiddens, act_dim, activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(obs))


class Critic(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hiddens: List[int], activation: str):
        super().__init__()
        self.net = mlp(obs_dim + act_dim, hiddens, 1, activation)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, action], dim=-1)).squeeze(-1)


class TD3TorchRLModule(TorchRLModule, TargetNetworkAPI, InferenceOnlyAPI):
    """Deterministic actor + twin critics for continuous (Box) action spaces."""

    def setup(self) -> None:
        cfg = {**DEFAULT_MODEL_CONFIG, **(self.model_config or {})}
        self._cfg = cfg
        obs_space, act_space = self.observation_space, self.action_space
        if getattr(act_space, "shape", None) is None or not np.issubdtype(
            getattr(act_space, "dtype", np.int64), np.floating
        ):
            raise ValueError(f"TD3 needs a continuous Box action space, got {act_space}")
        self.obs_dim = int(np.prod(obs_space.shape))
        self.act_dim = int(np.prod(act_space.shape))
        self.exploration_noise = float(cfg["exploration_noise"])
        self.actor = Actor(self.obs_dim, self.act_dim, list(cfg["actor_hiddens"]),
                           cfg["actor_activation"])
        self.register_buffer("uniform_warmup", torch.tensor(bool(cfg["uniform_warmup"])))
        if not self.inference_only:
            hid, act = list(cfg["critic_hiddens"]), cfg["critic_activation"]
            self.critic1 = Critic(self.obs_dim, self.act_dim, hid, act)
            self.critic2 = Critic(self.obs_dim, self.act_dim, hid, act)
            # Critic updates so far; the actor and targets move every `policy_delay`.
            self.register_buffer("num_critic_updates", torch.zeros((), dtype=torch.int64))
            self.make_target_networks()

    # -- networks -----------------------------------------------------------------------
    def _flat_obs(self, batch: Dict[str, Any]) -> torch.Tensor:
        obs = batch[Columns.OBS]
        return obs.reshape(obs.shape[0], -1).float()

    def q(self, obs: torch.Tensor, action: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.critic1(obs, action), self.critic2(obs, action)

    def q1(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.critic1(obs, action)

    def target_q(self, obs: torch.Tensor, action: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.target_critic1(obs, action), self.target_critic2(obs, action)

    # -- RLModule forward passes --------------------------------------------------------
    def _forward(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        action = self.actor(self._flat_obs(batch))
        return {Columns.ACTIONS: action.reshape((-1,) + tuple(self.action_space.shape))}

    def _forward_exploration(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        with torch.no_grad():
            obs = self._flat_obs(batch)
            if bool(self.uniform_warmup):
                action = torch.rand(obs.shape[0], self.act_dim, device=obs.device) * 2 - 1
            else:
                action = self.actor(obs)
                if self.exploration_noise > 0:
                    action = action + self.exploration_noise * torch.randn_like(action)
                action = action.clamp(-1.0, 1.0)
        return {Columns.ACTIONS: action.reshape((-1,) + tuple(self.action_space.shape))}

    def _forward_train(self, batch: Dict[str, Any], **kwargs) -> Dict[str, Any]:
        # The learner evaluates the networks it needs inside the loss.
        return {}

    # -- TargetNetworkAPI ---------------------------------------------------------------
    def make_target_networks(self) -> None:
        if hasattr(self, "target_actor"):
            return
        self.target_actor = copy.deepcopy(self.actor)
        self.target_critic1 = copy.deepcopy(self.critic1)
        self.target_critic2 = copy.deepcopy(self.critic2)
        for net in (self.target_actor, self.target_critic1, self.target_critic2):
            net.requires_grad_(False)

    def get_target_network_pairs(self) -> List[Tuple[nn.Module, nn.Module]]:
        return [
            (self.actor, self.target_actor),
            (self.critic1, self.target_critic1),
            (self.critic2, self.target_critic2),
        ]

    def forward_target(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        obs = self._flat_obs(batch)
        action = self.target_actor(obs)
        q1, q2 = self.target_q(obs, action)
        return {Columns.ACTIONS: action, "q1": q1, "q2": q2}

    # -- InferenceOnlyAPI ---------------------------------------------------------------
    def get_non_inference_attributes(self) -> List[str]:
        return ["critic1", "critic2", "target_actor", "target_critic1", "target_critic2",
                "num_critic_updates"]
