"""SAC with RLlib's module and losses, trained by ddrl's transition-buffer loop.

The optimisers, the temperature and the loss terms are RLlib 2.60's SAC: twin Q-networks
regressed with a Huber loss (``critic_loss: mse`` for the paper's squared error) on
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

import math
from typing import Any, Callable, Dict, Mapping, Optional, Type, Union

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core import COMPONENT_OPTIMIZER
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner import Learner
from ray.rllib.core.models.base import Encoder
from ray.rllib.core.models.configs import MLPEncoderConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.numpy import MAX_LOG_NN_OUTPUT, MIN_LOG_NN_OUTPUT
from ray.rllib.utils.typing import ModuleID

from ddrl.algorithms.fastpath import (SplitBatch, mlp_chain, optimizer_params, sum_gradients,
                                      weighted)
from ddrl.algorithms.offpolicy import (
    FastUpdateLearner,
    OffPolicyStep,
    TransitionReplayAlgorithm,
    TransitionReplayConfig,
    limit_learner_threads,
    polyak_update,
)
from ddrl.algorithms.sac import losses

# How SAC acts before learning starts (FastSACConfig.training's warmup_actions).
POLICY_WARMUP, UNIFORM_WARMUP = "policy", "uniform"
WARMUP_ACTIONS = (POLICY_WARMUP, UNIFORM_WARMUP)

# Learner-state key of each module's log(alpha) (see FastSACTorchLearner.get_state).
TEMPERATURE_STATE = "ddrl_log_alpha"


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


class FastSACConfig(TransitionReplayConfig):
    """RLlib's ``SACConfig`` defaults, trained by :class:`FastSAC`.

    Example::

        config = FastSACConfig().environment("Pendulum-v1").training(actor_lr=3e-4)
        algo = config.build_algo()
    """

    def __init__(self, algo_class: Optional[type] = None) -> None:
        super().__init__(algo_class=algo_class or FastSAC)
        self.critic_loss = losses.HUBER_LOSS
        self.warmup_actions = POLICY_WARMUP

    def training(self, *, critic_loss: Optional[str] = NotProvided,
                 warmup_actions: Optional[str] = NotProvided,
                 **kwargs: Any) -> "FastSACConfig":
        """``critic_loss``: ``huber`` (RLlib's) or ``mse`` (the SAC paper's, SB3's); see
        :func:`ddrl.algorithms.sac.losses.critic_loss`. ``warmup_actions``: how the env steps
        before ``num_steps_sampled_before_learning_starts`` act: ``policy`` (the initial
        stochastic policy, RLlib's) or ``uniform`` (uniform random actions, SB3's). The rest
        as :meth:`TransitionReplayConfig.training`."""
        super().training(**kwargs)
        if critic_loss is not NotProvided:
            self.critic_loss = critic_loss
        if warmup_actions is not NotProvided:
            self.warmup_actions = warmup_actions
        return self

    @property
    def _model_config_auto_includes(self) -> dict:
        return {**super()._model_config_auto_includes,
                "uniform_warmup": (self.warmup_actions == UNIFORM_WARMUP
                                   and self.num_steps_sampled_before_learning_starts > 0)}

    def validate(self) -> None:
        super().validate()
        if self.critic_loss not in losses.CRITIC_LOSSES:
            self._value_error(f"`critic_loss` must be one of {losses.CRITIC_LOSSES}, "
                              f"got {self.critic_loss!r}")
        if self.warmup_actions not in WARMUP_ACTIONS:
            self._value_error(f"`warmup_actions` must be one of {WARMUP_ACTIONS}, "
                              f"got {self.warmup_actions!r}")
        if not self.uses_transition_buffer and self.warmup_actions != POLICY_WARMUP:
            self._value_error(
                "`warmup_actions: uniform` is applied by the TransitionReplayBuffer path "
                "only; RLlib's EpisodeReplayBuffer path warms up with the policy")
        if not self.uses_transition_buffer and self.critic_loss != losses.HUBER_LOSS:
            self._value_error(
                "`critic_loss` other than 'huber' is applied by the TransitionReplayBuffer path "
                "only; RLlib's EpisodeReplayBuffer path trains with its own Huber loss")
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


def tanh_log_jacobian(unsquashed: torch.Tensor) -> torch.Tensor:
    """``log(1 - tanh(u)^2)`` per dimension, exact and stable for large ``|u|`` (RLlib's
    form; Stable-Baselines3 uses ``log(1 - tanh(u)^2 + 1e-6)``)."""
    return 2.0 * (math.log(2.0) - unsquashed - F.softplus(-2.0 * unsquashed))


def squashed_gaussian_sample(logits: torch.Tensor, noise: torch.Tensor | None = None,
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterised action in [-1, 1] and its log-probability, as RLlib's
    ``TorchSquashedGaussian.from_logits(logits).rsample_and_logp()`` computes them (same
    operations and random stream), without building distribution objects. ``noise``: the
    standard normal draws to use (default: drawn here, as RLlib does)."""
    loc, log_std = logits.chunk(2, dim=-1)
    scale = torch.clamp(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT).exp()
    unsquashed = loc + (torch.randn_like(loc) if noise is None else noise) * scale
    normal_logp = (-((unsquashed - loc) ** 2) / (2 * scale ** 2) - scale.log()
                   - math.log(math.sqrt(2 * math.pi)))
    jacobian = tanh_log_jacobian(unsquashed)
    action = torch.clamp((torch.tanh(unsquashed) + 1.0) / 2.0 * 2.0 - 1.0, -1.0, 1.0)
    return action, normal_logp.sum(-1) - jacobian.sum(-1)


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
