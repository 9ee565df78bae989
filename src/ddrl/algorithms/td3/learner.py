"""TD3's torch Learner.

Two ways in, one set of maths (:mod:`ddrl.algorithms.td3.losses`):

- RLlib's generic ``Learner.update`` (used with RLlib's episode replay buffers):
  ``compute_loss_for_module`` -> ``compute_gradients`` -> ``apply_gradients``, one gradient
  step per call.
- :meth:`TD3TorchLearner.update_from_transitions`: ``k`` minibatches already drawn from
  ddrl's transition buffer, trained in one call. It skips the per-call costs of the generic
  path (learner connector pipeline over episodes, batch conversion, per-step metrics
  bookkeeping), which on a small machine cost several times the gradient step itself.

Per critic step: both critics regress on the smoothed clipped double-Q target. Every
``policy_delay`` critic steps: one actor step on ``-Q1(s, pi(s))`` and a Polyak update of all
three target networks.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np
import torch

from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.utils.typing import ModuleID, ParamDict, TensorType

from ddrl.algorithms.offpolicy import limit_learner_threads, minibatch_tensors, polyak_update
from ddrl.algorithms.td3 import losses

CRITIC = "critic"
ACTOR = "actor"


class TD3TorchLearner(TorchLearner):
    """Learner for :class:`~ddrl.algorithms.td3.module.TD3TorchRLModule`."""

    def build(self) -> None:
        super().build()
        limit_learner_threads(self)
        # (module_id, name) -> loss tensor, from compute_loss_for_module to compute_gradients.
        self._temp_losses: Dict[Any, torch.Tensor] = {}
        # module_id -> observations for an actor step due after this critic step.
        self._actor_obs: Dict[ModuleID, torch.Tensor] = {}

    @classmethod
    def rl_module_required_apis(cls) -> list[type]:
        return [TargetNetworkAPI]

    def configure_optimizers_for_module(self, module_id: ModuleID, config: Any = None) -> None:
        module = self._module[module_id]
        critic_params = self.get_parameters(module.critic1) + self.get_parameters(module.critic2)
        actor_params = self.get_parameters(module.actor)
        self.register_optimizer(
            module_id=module_id, optimizer_name=CRITIC,
            optimizer=torch.optim.Adam(critic_params), params=critic_params,
            lr_or_lr_schedule=config.critic_lr,
        )
        self.register_optimizer(
            module_id=module_id, optimizer_name=ACTOR,
            optimizer=torch.optim.Adam(actor_params), params=actor_params,
            lr_or_lr_schedule=config.actor_lr,
        )

    # -- the generic RLlib path ---------------------------------------------------------
    def compute_loss_for_module(
        self, *, module_id: ModuleID, config: Any, batch: Dict[str, Any], fwd_out: Dict[str, Any]
    ) -> TensorType:
        module = self.module[module_id].unwrapped()
        b = {
            "obs": batch[Columns.OBS].float().reshape(len(batch[Columns.REWARDS]), -1),
            "actions": batch[Columns.ACTIONS].float().reshape(len(batch[Columns.REWARDS]), -1),
            "rewards": batch[Columns.REWARDS].float(),
            "next_obs": batch[Columns.NEXT_OBS].float().reshape(len(batch[Columns.REWARDS]), -1),
            "terminateds": batch[Columns.TERMINATEDS],
        }
        targets = losses.critic_targets(
            module, b, gamma=config.gamma, noise_std=config.target_noise,
            noise_clip=config.target_noise_clip,
        )
        critic_loss, q1, _ = losses.critic_loss(module, b, targets)
        self._temp_losses[(module_id, CRITIC)] = critic_loss
        # As in the paper (and the fast path), the actor step uses the critic *after* this
        # step's critic update, so it runs in apply_gradients; here we only note it is due.
        if int(module.num_critic_updates.item() + 1) % config.policy_delay == 0:
            self._actor_obs[module_id] = b["obs"]
        self.metrics.log_value((module_id, "critic_loss"), critic_loss, window=1)
        self.metrics.log_value((module_id, "q_mean"), q1.mean(), window=1)
        return critic_loss

    def compute_gradients(self, loss_per_module: Dict[ModuleID, TensorType], **kwargs) -> ParamDict:
        grads: ParamDict = {}
        for module_id in list(loss_per_module):
            loss = self._temp_losses.pop((module_id, CRITIC), None)
            if loss is None:
                continue
            optims = dict(self.get_optimizers_for_module(module_id))
            for optim in optims.values():
                optim.zero_grad(set_to_none=True)
            params = self.filter_param_dict_for_optimizer(self._params, optims[CRITIC])
            loss.backward()
            grads.update({pid: p.grad for pid, p in params.items()})
        self._temp_losses.clear()
        return grads

    def apply_gradients(self, gradients_dict: ParamDict) -> None:
        super().apply_gradients(gradients_dict)  # the critic step (actor grads are None)
        for module_id in list(self.module.keys()):
            module = self.module[module_id].unwrapped()
            if not hasattr(module, "num_critic_updates"):
                continue
            module.num_critic_updates += 1
            obs = self._actor_obs.pop(module_id, None)
            if obs is None:
                continue
            actor_opt = dict(self.get_optimizers_for_module(module_id))[ACTOR]
            actor_loss = self._actor_step(module, actor_opt, obs)
            self.metrics.log_value((module_id, "actor_loss"), actor_loss, window=1)
            polyak_update(module.get_target_network_pairs(),
                                 self.config.get_config_for_module(module_id).tau)

    @staticmethod
    def _actor_step(module: Any, actor_opt: torch.optim.Optimizer, obs: torch.Tensor) -> torch.Tensor:
        """One actor step on ``-Q1(s, pi(s))``; gradients w.r.t. the actor only."""
        params = [p for g in actor_opt.param_groups for p in g["params"]]
        loss = losses.actor_loss(module, obs)
        grads = torch.autograd.grad(loss, params)
        for p, g in zip(params, grads):
            p.grad = g
        actor_opt.step()
        return loss.detach()

    # -- the fast path ------------------------------------------------------------------
    def update_from_transitions(
        self, data: Mapping[str, np.ndarray], num_updates: int, batch_size: int,
        module_id: ModuleID = DEFAULT_MODULE_ID,
    ) -> Dict[str, float]:
        """Train ``num_updates`` critic steps on consecutive minibatches of ``data``.

        ``data`` holds ``num_updates * batch_size`` transitions (columns of
        :class:`ddrl.algorithms.replay.TransitionReplayBuffer`). Returns mean losses.
        """
        config = self.config.get_config_for_module(module_id)
        module = self.module[module_id].unwrapped()
        module.train()
        optims = dict(self.get_optimizers_for_module(module_id))
        critic_opt, actor_opt = optims[CRITIC], optims[ACTOR]
        pairs = module.get_target_network_pairs()
        dev = self._device
        t = minibatch_tensors(data, num_updates, batch_size, dev)
        # Pre-draw all smoothing noise at once (one RNG call instead of one per step).
        noise = torch.randn(t["actions"].shape, device=dev) if config.target_noise > 0 else None
        critic_sum = torch.zeros((), device=dev)
        actor_sum = torch.zeros((), device=dev)
        q_sum = torch.zeros((), device=dev)
        n_actor = 0
        start = int(module.num_critic_updates.item())
        for i in range(num_updates):
            sl = slice(i * batch_size, (i + 1) * batch_size)
            b = {k: v[sl] for k, v in t.items()}
            targets = losses.critic_targets(
                module, b, gamma=config.gamma, noise_std=config.target_noise,
                noise_clip=config.target_noise_clip,
                noise=None if noise is None else noise[sl],
            )
            closs, q1, _ = losses.critic_loss(module, b, targets)
            critic_opt.zero_grad(set_to_none=True)
            closs.backward()
            critic_opt.step()
            critic_sum += closs.detach()
            q_sum += q1.detach().mean()
            if (start + i + 1) % config.policy_delay == 0:
                actor_sum += self._actor_step(module, actor_opt, b["obs"])
                n_actor += 1
                polyak_update(pairs, config.tau)
        module.num_critic_updates += num_updates
        out = {
            "critic_loss": float(critic_sum) / max(num_updates, 1),
            "q_mean": float(q_sum) / max(num_updates, 1),  # Q1; named as SAC's
            "num_critic_updates": num_updates,
            "num_actor_updates": n_actor,
        }
        if n_actor:
            out["actor_loss"] = float(actor_sum) / n_actor
        return out

    def set_uniform_warmup(self, on: bool, module_id: ModuleID = DEFAULT_MODULE_ID) -> None:
        self.module[module_id].unwrapped().uniform_warmup.fill_(bool(on))

    def uniform_warmup(self, module_id: ModuleID = DEFAULT_MODULE_ID) -> bool:
        return bool(self.module[module_id].unwrapped().uniform_warmup)
