"""SAC's torch Learner: RLlib's ``SACTorchLearner`` plus ddrl's fast update step
(:class:`SACStep`: critics, then actor and temperature, then Polyak; the maths in
:mod:`ddrl.algorithms.sac.losses`), and log(alpha) kept in its checkpoints."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

import gymnasium as gym
import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core import COMPONENT_OPTIMIZER
from ray.rllib.utils.typing import ModuleID

from ddrl.algorithms.offpolicy.batch_parts import SplitBatch, sum_gradients, weighted
from ddrl.algorithms.offpolicy.fused_adam import optimizer_params
from ddrl.algorithms.offpolicy.learner import (
    FastUpdateLearner,
    OffPolicyStep,
    limit_learner_threads,
    polyak_update,
)
from ddrl.algorithms.offpolicy.plain_mlp import mlp_chain
from ddrl.algorithms.sac import losses
from ddrl.algorithms.sac.losses import squashed_gaussian_sample

# Learner-state key of each module's log(alpha) (see FastSACTorchLearner.get_state).
TEMPERATURE_STATE = "ddrl_log_alpha"


class SACStep(OffPolicyStep):
    """One SAC update on a minibatch of tensors, for a learner's module: plain MLP views of
    the RLlib networks, fused Adam, and loss accumulators kept on the device (no host sync
    inside a step, so a GPU learner can capture it as a CUDA graph)."""

    def __init__(self, learner: "FastSACTorchLearner", module_id: ModuleID) -> None:
        super().__init__()
        config = learner.config.get_config_for_module(module_id)
        self.module = module = learner.module[module_id].unwrapped()
        optims = dict(learner.get_optimizers_for_module(module_id))
        self.critic_opts = [optims["qf"]] + ([optims["qf_twin"]] if config.twin_q else [])
        self.actor_opt, self.alpha_opt = optims["policy"], optims["alpha"]
        self.optimizers = [*self.critic_opts, self.actor_opt, self.alpha_opt]
        self.actor_params = optimizer_params(self.actor_opt)
        self.log_alpha = learner.curr_log_alpha[module_id]
        self.target_entropy = learner.target_entropy[module_id]
        self.pi = mlp_chain(module.pi_encoder, module.pi)
        self.qs = [mlp_chain(module.qf_encoder, module.qf)]
        self.target_qs = [mlp_chain(module.target_qf_encoder, module.target_qf)]
        if config.twin_q:
            self.qs.append(mlp_chain(module.qf_twin_encoder, module.qf_twin))
            self.target_qs.append(mlp_chain(module.target_qf_twin_encoder, module.target_qf_twin))
        self.pairs = module.get_target_network_pairs()
        self.discount = config.gamma ** config.n_step
        self.tau = config.tau
        self.critic_loss_kind = config.critic_loss
        self.q_params = [list(q.parameters()) for q in self.qs]
        self.split = SplitBatch(getattr(learner, "_batch_parts", 1))
        # Metric names shared with TD3's learner: critic_loss, actor_loss, q_mean.
        self.acc = {k: torch.zeros((), device=learner._device)
                    for k in ("critic_loss", "actor_loss", "alpha_loss", "q_mean", "logps")}

    def run(self, batch: Mapping[str, torch.Tensor], kind: Any = None) -> None:
        """One SAC update (critics, then actor and temperature, then Polyak), each gradient
        computed over the minibatch's parts (:class:`SplitBatch`; one part by default)."""
        batch = {k: batch[k].float() for k in ("obs", "actions", "rewards", "next_obs",
                                               "terminateds")}
        # The actions' noise, drawn in the order RLlib draws it: s' first, then s.
        batch["next_noise"] = torch.randn_like(batch["actions"])
        batch["noise"] = torch.randn_like(batch["actions"])
        alpha = self.log_alpha.detach().exp()

        # Critics: both from the same targets; each has its own optimiser.
        critic_parts = self.split.map(
            lambda part, weight: self._critic_gradients(part, weight, alpha), batch)

        def critic_step(i: int) -> Callable[[], None]:
            def step() -> None:
                sum_gradients(self.q_params[i], [grads[i] for grads, _, _ in critic_parts])
                self.step_optimizer(self.critic_opts[i])
            return step

        self.split.concurrently(*(critic_step(i) for i in range(len(self.qs))))
        critic_loss = sum(sum(terms) for _, terms, _ in critic_parts)
        q_mean = sum(q_mean for _, _, q_mean in critic_parts)

        # Actor (w.r.t. the policy only; the critics' grads stay untouched), on the updated
        # critics.
        actor_parts = self.split.map(
            lambda part, weight: self._actor_gradients(part, weight, alpha), batch)
        actor_loss = sum(loss for _, loss, _ in actor_parts)
        logp = torch.cat([logp for _, _, logp in actor_parts])

        def actor_and_temperature_steps() -> torch.Tensor:
            sum_gradients(self.actor_params, [grads for grads, _, _ in actor_parts])
            self.step_optimizer(self.actor_opt)
            alpha_loss = losses.alpha_loss(self.log_alpha, logp, self.target_entropy)
            self.alpha_opt.zero_grad(set_to_none=True)
            alpha_loss.backward()
            self.step_optimizer(self.alpha_opt)
            return alpha_loss

        # The critics' targets follow the updated critics (the actor step does not use them).
        alpha_loss, _ = self.split.concurrently(actor_and_temperature_steps,
                                                lambda: polyak_update(self.pairs, self.tau))
        self.acc["critic_loss"] += critic_loss / len(self.qs)
        self.acc["actor_loss"] += actor_loss
        self.acc["alpha_loss"] += alpha_loss.detach()
        self.acc["q_mean"] += q_mean
        self.acc["logps"] += logp.mean()

    def _critic_gradients(self, part: Mapping[str, torch.Tensor], weight: float,
                          alpha: torch.Tensor) -> tuple[list, list, torch.Tensor]:
        """Each critic's loss gradient on a part of the minibatch (weighted by its share),
        the weighted losses, and the part's weighted mean Q1(s, a)."""
        next_obs = part["next_obs"]
        with torch.no_grad():
            next_actions, next_logp = squashed_gaussian_sample(self.pi(next_obs),
                                                               part["next_noise"])
            next_in = torch.cat([next_obs, next_actions], dim=-1)
            next_q = self.target_qs[0](next_in).squeeze(-1)
            for target_q in self.target_qs[1:]:
                next_q = torch.min(next_q, target_q(next_in).squeeze(-1))
            target = losses.critic_targets(part["rewards"], part["terminateds"], next_q,
                                           next_logp, alpha, self.discount)
        obs_actions = torch.cat([part["obs"], part["actions"]], dim=-1)
        grads, terms, q_mean = [], [], None
        for q, params in zip(self.qs, self.q_params):
            value = q(obs_actions).squeeze(-1)
            # This critic's term of the sum.
            loss = weighted(losses.critic_loss([value], target, self.critic_loss_kind), weight)
            grads.append(torch.autograd.grad(loss, params))
            terms.append(loss.detach())
            if q_mean is None:
                q_mean = weighted(value.detach().mean(), weight)
        return grads, terms, q_mean

    def _actor_gradients(self, part: Mapping[str, torch.Tensor], weight: float,
                         alpha: torch.Tensor) -> tuple[tuple, torch.Tensor, torch.Tensor]:
        """The actor loss's gradient w.r.t. the policy on a part of the minibatch (weighted
        by its share), the weighted loss, and the part's log-probabilities."""
        obs = part["obs"]
        new_actions, logp = squashed_gaussian_sample(self.pi(obs), part["noise"])
        obs_new_actions = torch.cat([obs, new_actions], dim=-1)
        q_new = [q(obs_new_actions).squeeze(-1) for q in self.qs]
        loss = weighted(losses.actor_loss(logp, q_new, alpha), weight)
        return torch.autograd.grad(loss, self.actor_params), loss.detach(), logp.detach()

    def results(self, num_updates: int) -> Dict[str, float]:
        """Mean losses since the last call (one host sync), and reset the accumulators."""
        n = max(num_updates, 1)
        out = {k: float(v) / n for k, v in self.acc.items()}
        for v in self.acc.values():
            v.zero_()
        out["alpha_value"] = float(self.log_alpha.detach().exp())
        out["num_updates"] = num_updates
        return out


class FastSACTorchLearner(FastUpdateLearner, SACTorchLearner):
    """RLlib's SAC learner plus ddrl's fast paths: :meth:`update_from_transitions` and
    ``update_from_device_buffer`` (continuous actions)."""

    step_class = SACStep

    def get_state(self, components: Any = None, *, not_components: Any = None,
                  **kwargs: Any) -> Dict[str, Any]:
        # RLlib 2.60's SAC learner keeps log(alpha) outside its module and optimiser state, so
        # a restored learner restarted from initial_alpha with the old Adam moments. ddrl
        # saves it with the optimisers (the temperature is trained state, like their moments).
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self._check_component(COMPONENT_OPTIMIZER, components, not_components):
            state[TEMPERATURE_STATE] = {
                module_id: float(self.curr_log_alpha[module_id].detach().reshape(-1)[0])
                for module_id in self.module.keys()
            }
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        super().set_state(state)
        with torch.no_grad():  # in place: the alpha optimiser holds this tensor
            for module_id, log_alpha in state.get(TEMPERATURE_STATE, {}).items():
                self.curr_log_alpha[module_id].fill_(float(log_alpha))

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
