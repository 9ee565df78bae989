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

from ddrl.algorithms.offpolicy.batch_parts import SplitBatch, sum_gradients, weighted
from ddrl.algorithms.offpolicy.fused_adam import optimizer_params
from ddrl.algorithms.offpolicy.learner import (
    FastUpdateLearner,
    OffPolicyStep,
    limit_learner_threads,
    polyak_update,
)
from ddrl.algorithms.offpolicy.plain_mlp import PlainMLP
from ddrl.algorithms.td3 import losses
from ddrl.algorithms.td3.module import Actor, Critic

CRITIC = "critic"
ACTOR = "actor"


class PlainTD3Networks:
    """TD3's actor and critics (and their targets) as :class:`PlainMLP` tensor ops, with the
    module methods :mod:`ddrl.algorithms.td3.losses` calls: the same maths and parameters
    without ``nn.Module`` calls on every layer."""

    NETS = ("actor", "target_actor", "critic1", "critic2", "target_critic1", "target_critic2")

    def __init__(self, nets: Dict[str, PlainMLP]) -> None:
        self.nets = nets

    @classmethod
    def of(cls, module: Any) -> "PlainTD3Networks | None":
        """The plain form of a :class:`TD3TorchRLModule`'s networks, or None when one is
        not a plain ``Actor``/``Critic`` MLP."""
        kinds = {"actor": Actor, "target_actor": Actor}
        nets = {}
        for name in cls.NETS:
            net = getattr(module, name, None)
            if type(net) is not kinds.get(name, Critic):
                return None
            nets[name] = PlainMLP.of(net.net)
            if nets[name] is None:
                return None
        return cls(nets)

    def actor(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.nets["actor"](obs))

    def target_actor(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.nets["target_actor"](obs))

    def q1(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.nets["critic1"](torch.cat([obs, action], dim=-1)).squeeze(-1)

    def q(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, action], dim=-1)
        return self.nets["critic1"](x).squeeze(-1), self.nets["critic2"](x).squeeze(-1)

    def target_q(self, obs: torch.Tensor, action: torch.Tensor,
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, action], dim=-1)
        return (self.nets["target_critic1"](x).squeeze(-1),
                self.nets["target_critic2"](x).squeeze(-1))


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
        self.critic_params = optimizer_params(self.critic_opt)
        self.actor_params = optimizer_params(self.actor_opt)
        self.split = SplitBatch(getattr(learner, "_batch_parts", 1))
        # What the losses call: the networks as plain tensor ops where they are plain MLPs.
        self.nets = PlainTD3Networks.of(module) or module
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
        """One critic step (and the actor step and Polyak update when ``with_actor``), each
        gradient computed over the minibatch's parts (:class:`SplitBatch`)."""
        batch = {k: batch[k] for k in ("obs", "actions", "rewards", "next_obs", "terminateds")}
        if noise is not None:
            batch["noise"] = noise
        critic_parts = self.split.map(self._critic_gradients, batch)
        sum_gradients(self.critic_params, [grads for grads, _, _ in critic_parts])
        self.step_optimizer(self.critic_opt)
        self.acc["critic_loss"] += sum(loss for _, loss, _ in critic_parts)
        self.acc["q_mean"] += sum(q_mean for _, _, q_mean in critic_parts)
        if with_actor:
            actor_parts = self.split.map(self._actor_gradients, batch)
            sum_gradients(self.actor_params, [grads for grads, _ in actor_parts])
            self.step_optimizer(self.actor_opt)
            self.acc["actor_loss"] += sum(loss for _, loss in actor_parts)
            polyak_update(self.pairs, self.tau)

    def _critic_gradients(self, part: Mapping[str, torch.Tensor], weight: float,
                          ) -> tuple[tuple, torch.Tensor, torch.Tensor]:
        """Both critics' loss gradient on a part of the minibatch (weighted by its share),
        the weighted loss and the part's weighted mean Q1(s, a)."""
        targets = losses.critic_targets(self.nets, part, gamma=self.gamma,
                                        noise_std=self.noise_std, noise_clip=self.noise_clip,
                                        noise=part.get("noise"))
        closs, q1, _ = losses.critic_loss(self.nets, part, targets)
        closs = weighted(closs, weight)
        return (torch.autograd.grad(closs, self.critic_params), closs.detach(),
                weighted(q1.detach().mean(), weight))

    def _actor_gradients(self, part: Mapping[str, torch.Tensor], weight: float,
                         ) -> tuple[tuple, torch.Tensor]:
        """The actor loss's gradient w.r.t. the actor on a part of the minibatch."""
        loss = weighted(losses.actor_loss(self.nets, part["obs"]), weight)
        return torch.autograd.grad(loss, self.actor_params), loss.detach()

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
        params = optimizer_params(actor_opt)
        loss = losses.actor_loss(module, obs)
        sum_gradients(params, [torch.autograd.grad(loss, params)])
        actor_opt.step()
        return loss.detach()
