"""PPO's catalog with a policy head that ``torch.jit.trace`` can export at any batch size.

RLlib's free-log-std head (``TorchFreeLogStdMLPHead``) repeats the log std ``len(mean)``
times, which a trace records as a constant: the exported policy then fails on any batch size
but the traced one. This head broadcasts instead; its parameters and outputs are RLlib's.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog
from ray.rllib.core.models.configs import FreeLogStdMLPHeadConfig
from ray.rllib.core.models.torch.heads import TorchFreeLogStdMLPHead


class TraceableFreeLogStdHead(TorchFreeLogStdMLPHead):
    """RLlib's free-log-std head with a batch-size-independent trace."""

    def _forward(self, inputs: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        mean = self.net(inputs)
        log_std = self.log_std
        if self.clip_log_std:
            log_std = torch.clamp(log_std, -self.log_std_clip_param_const,
                                  self.log_std_clip_param_const)
        return torch.cat([mean, log_std.expand_as(mean)], dim=-1)


class TraceablePPOCatalog(PPOCatalog):
    """:class:`PPOCatalog` building :class:`TraceableFreeLogStdHead` for ``free_log_std``."""

    def build_pi_head(self, framework: str) -> Any:
        head = super().build_pi_head(framework)
        if framework == "torch" and isinstance(self.pi_head_config, FreeLogStdMLPHeadConfig):
            return TraceableFreeLogStdHead(self.pi_head_config)
        return head


def orthogonal_init(module: torch.nn.Module, gain: float) -> torch.nn.Module:
    """Every ``nn.Linear`` in ``module``: orthogonal weights scaled by ``gain``, zero bias
    (SB3's and CleanRL's PPO)."""
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.orthogonal_(layer.weight, gain=gain)
            torch.nn.init.zeros_(layer.bias)
    return module


def normc_init(module: torch.nn.Module, gain: float) -> torch.nn.Module:
    """Every ``nn.Linear`` in ``module``: Gaussian weights with each unit's incoming weight
    vector rescaled to norm ``gain``, zero bias (RLlib 1.x's ``normc_initializer``)."""
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            with torch.no_grad():
                layer.weight.normal_(0.0, 1.0)
                layer.weight.mul_(gain / layer.weight.norm(dim=1, keepdim=True))
                layer.bias.zero_()
    return module


class _InitializedPPOCatalog(TraceablePPOCatalog):
    """:class:`TraceablePPOCatalog` re-initialising what it builds: ``init(module, gain)``
    with ``hidden_gain`` for the encoders, ``policy_gain`` for the policy head and
    ``value_gain`` for the value head. The free log std keeps RLlib's start (0: std 1)."""

    init = staticmethod(orthogonal_init)
    hidden_gain = policy_gain = value_gain = 1.0

    def build_actor_critic_encoder(self, framework: str) -> Any:
        return self.init(super().build_actor_critic_encoder(framework), self.hidden_gain)

    def build_pi_head(self, framework: str) -> Any:
        return self.init(super().build_pi_head(framework), self.policy_gain)

    def build_vf_head(self, framework: str) -> Any:
        return self.init(super().build_vf_head(framework), self.value_gain)


class OrthogonalInitPPOCatalog(_InitializedPPOCatalog):
    """SB3's and CleanRL's initialisation: orthogonal, gain sqrt(2) in the encoders, 0.01 in
    the policy head (initial action means near 0), 1 in the value head. Andrychowicz et al.
    2021 ("What matters in on-policy RL") rank the near-zero policy layer among the choices
    that matter most."""

    init = staticmethod(orthogonal_init)
    hidden_gain, policy_gain, value_gain = 2 ** 0.5, 0.01, 1.0


class NormcInitPPOCatalog(_InitializedPPOCatalog):
    """RLlib 1.x's ``FullyConnectedNetwork`` (the thesis's RLlib 1.1): ``normc`` 1.0 in the
    hidden layers, 0.01 in the policy's output layer, 1.0 in the value output."""

    init = staticmethod(normc_init)
    hidden_gain, policy_gain, value_gain = 1.0, 0.01, 1.0


# The catalog of each `initialization` setting.
INITIALIZATION_CATALOGS = {"rllib": TraceablePPOCatalog,
                           "orthogonal": OrthogonalInitPPOCatalog,
                           "rllib1_normc": NormcInitPPOCatalog}
