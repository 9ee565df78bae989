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
