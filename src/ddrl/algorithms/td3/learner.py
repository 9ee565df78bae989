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

import torch

from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.utils.typing import ModuleID, ParamDict, TensorType

from ddrl.algorithms.offpolicy import (
    FastUpdateLearner,
    OffPolicyStep,
    limit_learner_threads,
    polyak_update,
)
from ddrl.algorithms.td3 import losses

CRITIC = "critic"
ACTOR = "actor"


class TD3Step(OffPolicyStep):
    """One TD3 critic step (and the delayed actor step with the Polyak update, when due) on
    a minibatch of tensors; loss sums stay on the device, so a GPU learner can capture a
    step as a CUDA graph."""

    def __init__(self, learner: "TD3TorchLearner", module_id: ModuleID) -> None:
        super().__init__()
        config = learner.config.get_config_for_module(module_id)
        self.module = module = learner.module[module_id].unwrapped()
        optims = dict(learner.get_optimizers_for_module(module_id))
        self.critic_opt, self.actor_opt = optims[CRITIC], optims[ACTOR]
        self.optimizers = [self.critic_opt, self.actor_opt]
        self.pairs = module.get_target_network_pairs()
        self.gamma, self.tau, self.policy_delay = config.gamma, config.tau, config.policy_delay
        self.noise_std, self.noise_clip = config.target_noise, config.target_noise_clip
        self.start = 0  # critic updates before this call
        self.acc = {k: torch.zeros((), device=learner._device)
                    for k in ("critic_loss", "q_mean", "actor_loss")}

    def begin_call(self) -> None:
        self.start = int(self.module.num_critic_updates.item())

    def kind(self, i: int) -> bool:
        """Whether the ``i``-th update of this call is followed by an actor step."""
        return (self.start + i + 1) % self.policy_delay == 0

    def add_columns(self, minibatches: Dict[str, torch.Tensor]) -> None:
        # All of a call's smoothing noise in one RNG call instead of one per step.
        if self.noise_std > 0:
            minibatches["noise"] = torch.randn(minibatches["actions"].shape,
                                               device=minibatches["actions"].device)

    def run(self, batch: Mapping[str, torch.Tensor], kind: bool) -> None:
        self.update(batch, with_actor=kind, noise=batch.get("noise"))

    def update(self, batch: Mapping[str, torch.Tensor], with_actor: bool,
               noise: torch.Tensor | None = None) -> None:
        module = self.module
        targets = losses.critic_targets(module, batch, gamma=self.gamma,
                                        noise_std=self.noise_std, noise_clip=self.noise_clip,
                                        noise=noise)
        closs, q1, _ = losses.critic_loss(module, batch, targets)
        self.critic_opt.zero_grad(set_to_none=True)
        closs.backward()
        self.critic_opt.step()
        self.acc["critic_loss"] += closs.detach()
        self.acc["q_mean"] += q1.detach().mean()
        if with_actor:
            self.acc["actor_loss"] += TD3TorchLearner._actor_step(module, self.actor_opt,
                                                                  batch["obs"])
            polyak_update(self.pairs, self.tau)

    def results(self, num_updates: int) -> Dict[str, float]:
        """Mean losses of this call (one host sync); resets the sums, counts the updates."""
        n_actor = sum(self.kind(i) for i in range(num_updates))
        self.module.num_critic_updates += num_updates
        out = {
            "critic_loss": float(self.acc["critic_loss"]) / max(num_updates, 1),
            "q_mean": float(self.acc["q_mean"]) / max(num_updates, 1),  # Q1; named as SAC's
            "num_critic_updates": num_updates,
            "num_actor_updates": n_actor,
        }
        if n_actor:
            out["actor_loss"] = float(self.acc["actor_loss"]) / n_actor
        for v in self.acc.values():
            v.zero_()
        return out


class TD3TorchLearner(FastUpdateLearner, TorchLearner):
    """Learner for :class:`~ddrl.algorithms.td3.module.TD3TorchRLModule`."""

    step_class = TD3Step

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
