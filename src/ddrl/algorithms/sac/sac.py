"""SAC with RLlib's module and losses, trained by ddrl's transition-buffer loop.

The optimisers, the temperature and the loss terms are RLlib 2.60's SAC: twin Q-networks regressed with a Huber loss on
``r + gamma (1 - terminated) (min Q_target(s', a') - alpha log pi(a'|s'))``, the actor on
``alpha log pi(a|s) - min Q(s, a)`` with reparameterised actions, and ``log alpha`` on
``-log alpha (log pi + target_entropy)``, followed by a Polyak update of the target
Q-networks. The RLModule is RLlib's ``DefaultSACTorchRLModule`` with one change: each
Q-network is the standard MLP on ``concat(obs, action)`` (``fcnet_hiddens``, as in the SAC
paper, RLlib 1.x that the thesis used, and Stable-Baselines3), not RLlib 2.60's multi-stream
encoder (separate obs and action MLPs plus dense fusion layers: 2.8 M parameters for the
four Q-nets on the humanoid instead of 0.2 M, and ~8x the update time). What changes
besides is the plumbing (:mod:`ddrl.algorithms.offpolicy`): a flat
transition buffer and ``k`` gradient steps per learner call instead of one
``LearnerGroup.update`` per step. Within a step the actor and temperature are updated
after the critics (as in Haarnoja et al. 2018 and Stable-Baselines3; RLlib computes all
three losses from one forward pass before stepping).

Checkpoints load with ``Algorithm.from_checkpoint`` (a ``FastSAC``, an RLlib ``SAC``
subclass).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type, Union

import numpy as np
import torch
import gymnasium as gym
from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner import Learner
from ray.rllib.core.models.base import ENCODER_OUT, Encoder
from ray.rllib.core.models.configs import MLPEncoderConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.typing import ModuleID

from ddrl.algorithms.sac import losses
from ddrl.algorithms.offpolicy import (
    TransitionReplayAlgorithm,
    TransitionReplayConfig,
    limit_learner_threads,
    minibatch_tensors,
    polyak_update,
)

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
    """RLlib's SAC module whose Q-networks read ``concat(obs, action)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("catalog_class", ConcatQSACCatalog)
        super().__init__(*args, **kwargs)

    def _qf_forward_train_helper(self, batch: Dict[str, Any], encoder: Encoder, head: Any,
                                 squeeze: bool = True) -> Any:
        if isinstance(self.action_space, gym.spaces.Box):
            obs = batch[Columns.OBS].reshape(len(batch[Columns.OBS]), -1)
            actions = batch[Columns.ACTIONS].reshape(len(obs), -1).to(obs.dtype)
            batch = {Columns.OBS: torch.cat([obs, actions], dim=-1)}
        return super()._qf_forward_train_helper(batch, encoder, head, squeeze=squeeze)


class FastSACConfig(TransitionReplayConfig):
    """RLlib's ``SACConfig`` defaults, trained by :class:`FastSAC`.

    Example::

        config = FastSACConfig().environment("Pendulum-v1").training(actor_lr=3e-4)
        algo = config.build_algo()
    """

    def __init__(self, algo_class: Optional[type] = None) -> None:
        super().__init__(algo_class=algo_class or FastSAC)

    def validate(self) -> None:
        super().validate()
        if self.uses_transition_buffer and self.grad_clip is not None:
            self._value_error(
                "`grad_clip` is not applied by the TransitionReplayBuffer path; leave it None "
                "or use an EpisodeReplayBuffer"
            )

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        if self.framework_str != "torch":
            raise ValueError(f"ddrl's SAC is implemented for torch only, got {self.framework_str!r}")
        return RLModuleSpec(module_class=ConcatQSACTorchRLModule, catalog_class=ConcatQSACCatalog)

    def get_default_learner_class(self) -> Union[Type[Learner], str]:
        if self.framework_str != "torch":
            raise ValueError(f"ddrl's SAC is implemented for torch only, got {self.framework_str!r}")
        return FastSACTorchLearner


class FastSAC(TransitionReplayAlgorithm):
    """Soft Actor-Critic; see the module docstring."""

    @classmethod
    def get_default_config(cls) -> FastSACConfig:
        return FastSACConfig()


class FastSACTorchLearner(SACTorchLearner):
    """RLlib's SAC learner plus :meth:`update_from_transitions` (continuous actions)."""

    def build(self) -> None:
        super().build()
        limit_learner_threads(self)
        if self.config.uses_transition_buffer:
            for module_id, module in self.module._rl_modules.items():
                if not isinstance(module.unwrapped().action_space, gym.spaces.Box):
                    raise ValueError(
                        f"ddrl's SAC loop (TransitionReplayBuffer) trains continuous (Box) "
                        f"actions; module {module_id!r} has {module.unwrapped().action_space}. "
                        "Use replay_buffer_type: EpisodeReplayBuffer for discrete actions."
                    )

    def update_from_transitions(
        self, data: Mapping[str, np.ndarray], num_updates: int, batch_size: int,
        module_id: ModuleID = DEFAULT_MODULE_ID,
    ) -> Dict[str, float]:
        """Train ``num_updates`` SAC steps on consecutive minibatches of ``data``.

        ``data`` holds ``num_updates * batch_size`` transitions (columns of
        :class:`ddrl.algorithms.replay.TransitionReplayBuffer`). Returns mean losses.
        """
        config = self.config.get_config_for_module(module_id)
        module = self.module[module_id].unwrapped()
        module.train()
        optims = dict(self.get_optimizers_for_module(module_id))
        critic_opts = [optims["qf"]] + ([optims["qf_twin"]] if config.twin_q else [])
        actor_opt, alpha_opt = optims["policy"], optims["alpha"]
        actor_params = [p for g in actor_opt.param_groups for p in g["params"]]
        log_alpha = self.curr_log_alpha[module_id]
        target_entropy = self.target_entropy[module_id]
        dist_cls = module.get_train_action_dist_cls()
        pairs = module.get_target_network_pairs()
        t = minibatch_tensors(data, num_updates, batch_size, self._device)

        def policy(obs: torch.Tensor) -> Any:
            return dist_cls.from_logits(module.pi(module.pi_encoder({Columns.OBS: obs})[ENCODER_OUT]))

        def q_values(obs: torch.Tensor, actions: torch.Tensor) -> list[torch.Tensor]:
            batch = {Columns.OBS: obs, Columns.ACTIONS: actions}
            heads = [(module.qf_encoder, module.qf)]
            if config.twin_q:
                heads.append((module.qf_twin_encoder, module.qf_twin))
            return [module._qf_forward_train_helper(batch, enc, head) for enc, head in heads]

        # Metric names shared with TD3's learner: critic_loss, actor_loss, q_mean.
        acc = {k: torch.zeros((), device=self._device)
               for k in ("critic_loss", "actor_loss", "alpha_loss", "q_mean", "logps")}
        discount = config.gamma ** config.n_step
        for i in range(num_updates):
            sl = slice(i * batch_size, (i + 1) * batch_size)
            obs, actions = t["obs"][sl].float(), t["actions"][sl].float()
            rewards, next_obs = t["rewards"][sl].float(), t["next_obs"][sl].float()
            terminateds = t["terminateds"][sl]
            alpha = log_alpha.detach().exp()

            # Critics.
            with torch.no_grad():
                next_actions, next_logp = policy(next_obs).sample_and_logp()
                next_q = module.forward_target({Columns.OBS: next_obs,
                                                Columns.ACTIONS: next_actions})
                target = losses.critic_targets(rewards, terminateds, next_q, next_logp, alpha,
                                               discount)
            qs = q_values(obs, actions)
            critic_loss = losses.critic_loss(qs, target)
            for opt in critic_opts:
                opt.zero_grad(set_to_none=True)
            critic_loss.backward()
            for opt in critic_opts:
                opt.step()

            # Actor: gradients w.r.t. the policy only (the critics' grads stay untouched).
            new_actions, logp = policy(obs).rsample_and_logp()
            actor_loss = losses.actor_loss(logp, q_values(obs, new_actions), alpha)
            for p, g in zip(actor_params, torch.autograd.grad(actor_loss, actor_params)):
                p.grad = g
            actor_opt.step()

            # Temperature.
            alpha_loss = losses.alpha_loss(log_alpha, logp, target_entropy)
            alpha_opt.zero_grad(set_to_none=True)
            alpha_loss.backward()
            alpha_opt.step()

            polyak_update(pairs, config.tau)
            acc["critic_loss"] += critic_loss.detach() / len(qs)
            acc["actor_loss"] += actor_loss.detach()
            acc["alpha_loss"] += alpha_loss.detach()
            acc["q_mean"] += qs[0].detach().mean()
            acc["logps"] += logp.detach().mean()
        n = max(num_updates, 1)
        out = {k: float(v) / n for k, v in acc.items()}
        out["alpha_value"] = float(log_alpha.detach().exp())
        out["num_updates"] = num_updates
        return out
