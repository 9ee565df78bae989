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

The files are td3/'s: this module holds the config and the algorithm, :mod:`.module` the
RLModule, :mod:`.learner` the Learner and its update step, :mod:`.losses` the maths.
Checkpoints load with ``Algorithm.from_checkpoint`` (a ``FastSAC``, an RLlib ``SAC``
subclass); they name the module's and the learner's classes by this module's path
(``ddrl.algorithms.sac.sac.ConcatQSACTorchRLModule`` and so on), so it imports them.
"""

from __future__ import annotations

from typing import Any, Optional, Type, Union

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.core.learner import Learner
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from ddrl.algorithms.offpolicy.algorithm import TransitionReplayAlgorithm
from ddrl.algorithms.offpolicy.config import TransitionReplayConfig
from ddrl.algorithms.sac import losses
# Checkpoints written before the split name these classes at this module's path.
from ddrl.algorithms.sac.learner import FastSACTorchLearner
from ddrl.algorithms.sac.module import ConcatQSACCatalog, ConcatQSACTorchRLModule

# How SAC acts before learning starts (FastSACConfig.training's warmup_actions).
POLICY_WARMUP, UNIFORM_WARMUP = "policy", "uniform"
WARMUP_ACTIONS = (POLICY_WARMUP, UNIFORM_WARMUP)


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
