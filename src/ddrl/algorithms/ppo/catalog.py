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


# SB3's and CleanRL's PPO initialisation (Andrychowicz et al. 2021, "What matters in on-policy
# RL": a near-zero last policy layer is among the choices that matter most).
HIDDEN_GAIN = 2 ** 0.5
POLICY_GAIN = 0.01
VALUE_GAIN = 1.0


def orthogonal_init(module: torch.nn.Module, gain: float) -> torch.nn.Module:
    """Every ``nn.Linear`` in ``module``: orthogonal weights scaled by ``gain``, zero bias."""
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.orthogonal_(layer.weight, gain=gain)
            torch.nn.init.zeros_(layer.bias)
    return module


class OrthogonalInitPPOCatalog(TraceablePPOCatalog):
    """:class:`TraceablePPOCatalog` with SB3's initialisation: orthogonal weights and zero
    biases, gain sqrt(2) in the encoders, 0.01 in the policy head (initial action means near
    0), 1 in the value head. The free log std keeps RLlib's start (0, std 1), as SB3's."""

    def build_actor_critic_encoder(self, framework: str) -> Any:
        return orthogonal_init(super().build_actor_critic_encoder(framework), HIDDEN_GAIN)

    def build_pi_head(self, framework: str) -> Any:
        return orthogonal_init(super().build_pi_head(framework), POLICY_GAIN)

    def build_vf_head(self, framework: str) -> Any:
        return orthogonal_init(super().build_vf_head(framework), VALUE_GAIN)
