"""SAC's RLModule: RLlib's ``DefaultSACTorchRLModule`` whose Q-networks are the standard MLP
on ``concat(obs, action)`` (the SAC paper's, RLlib 1.x's and Stable-Baselines3's), with an
optional uniform random warm-up. See :mod:`ddrl.algorithms.sac.sac`."""

from __future__ import annotations

from typing import Any, Dict

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import Encoder
from ray.rllib.core.models.configs import MLPEncoderConfig


class ConcatQSACCatalog(SACCatalog):
    """SAC's catalog with MLP Q-networks on ``concat(obs, action)`` (continuous actions)."""

    def _build_qf_encoder_continuous(self, framework: str) -> Encoder:
        hiddens = list(self._model_config_dict["fcnet_hiddens"])
        activation = self._model_config_dict["fcnet_activation"]
        in_dim = int(np.prod(self.observation_space.shape) + np.prod(self.action_space.shape))
        self.qf_encoder_config = MLPEncoderConfig(
            input_dims=(in_dim,),
            hidden_layer_dims=hiddens[:-1],
            hidden_layer_activation=activation,
            output_layer_dim=self.latent_dims[0],
            output_layer_activation=activation,
        )
        return self.qf_encoder_config.build(framework=framework)


class ConcatQSACTorchRLModule(DefaultSACTorchRLModule):
    """RLlib's SAC module whose Q-networks read ``concat(obs, action)``.

    With ``uniform_warmup`` in its model config (``warmup_actions: uniform``) it explores with
    uniform random actions in [-1, 1] (RLlib's normalised action space) until the learner
    clears the flag when learning starts, as Stable-Baselines3's and the SAC paper's
    warm-up; the flag is a module buffer, so weight syncs and checkpoints carry it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("catalog_class", ConcatQSACCatalog)
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        super().setup()
        uniform = bool((self.model_config or {}).get("uniform_warmup", False))
        if uniform and not isinstance(self.action_space, gym.spaces.Box):
            raise ValueError("uniform warm-up actions need a continuous (Box) action space, "
                             f"got {self.action_space}")
        self.register_buffer("uniform_warmup", torch.tensor(uniform))

    def _forward_exploration(self, batch: Dict[str, Any], **kwargs: Any) -> Dict[str, Any]:
        if not bool(self.uniform_warmup):
            return super()._forward_exploration(batch, **kwargs)
        obs = batch[Columns.OBS]
        shape = (len(obs), *self.action_space.shape)
        return {Columns.ACTIONS: torch.rand(shape, device=obs.device) * 2 - 1}

    def _qf_forward_train_helper(self, batch: Dict[str, Any], encoder: Encoder, head: Any,
                                 squeeze: bool = True) -> Any:
        if isinstance(self.action_space, gym.spaces.Box):
            obs = batch[Columns.OBS].reshape(len(batch[Columns.OBS]), -1)
            actions = batch[Columns.ACTIONS].reshape(len(obs), -1).to(obs.dtype)
            batch = {Columns.OBS: torch.cat([obs, actions], dim=-1)}
        return super()._qf_forward_train_helper(batch, encoder, head, squeeze=squeeze)
