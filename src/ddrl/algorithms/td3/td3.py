"""TD3 (Fujimoto, van Hoof and Meger 2018, arXiv:1802.09477) on RLlib's new API stack.

RLlib dropped TD3 and DDPG in Ray 2.9. This is TD3 built the way RLlib 2.60 builds TQC on
top of SAC: ``TD3Config`` extends ``SACConfig`` (which already has ``tau``, ``actor_lr``,
``critic_lr``, ``twin_q``, replay and training-intensity settings), ``TD3`` extends ``SAC``
with its own RLModule and Learner.

The training step is ddrl's transition-buffer loop (:mod:`ddrl.algorithms.offpolicy`),
shared with ddrl's SAC; with one of RLlib's episode buffers (``EpisodeReplayBuffer``,
``PrioritizedEpisodeReplayBuffer``) it runs RLlib's generic DQN/SAC training step instead,
one learner update per minibatch: slower, but it exercises RLlib's own replay code.
"""

from __future__ import annotations

from typing import Any, Optional, Type, Union

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.core.learner import Learner
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from ddrl.algorithms.offpolicy.algorithm import TransitionReplayAlgorithm
from ddrl.algorithms.offpolicy.config import TransitionReplayConfig
from ddrl.algorithms.td3 import PARAMS


class TD3Config(TransitionReplayConfig):
    """Configuration of :class:`TD3`.

    Example::

        config = (
            TD3Config()
            .environment("Pendulum-v1")
            .training(actor_lr=1e-3, critic_lr=1e-3, policy_delay=2, target_noise=0.2)
        )
        algo = config.build_algo()
    """

    def __init__(self, algo_class: Optional[type] = None) -> None:
        super().__init__(algo_class=algo_class or TD3)
        # TD3's defaults are its registry entry's (the paper's, in the normalised action space
        # [-1, 1]), the SAC defaults TD3 overrides among them.
        for name in ("policy_delay", "target_noise", "target_noise_clip", "exploration_noise",
                     "actor_activation", "critic_activation", "tau", "actor_lr", "critic_lr",
                     "num_steps_sampled_before_learning_starts"):
            setattr(self, name, PARAMS[name].default)
        self.actor_hiddens = list(PARAMS["actor_hiddens"].default)
        self.critic_hiddens = list(PARAMS["critic_hiddens"].default)
        self.train_batch_size_per_learner = PARAMS["train_batch_size"].default
        self.twin_q = True
        self.n_step = 1

    def training(
        self,
        *,
        policy_delay: Optional[int] = NotProvided,
        target_noise: Optional[float] = NotProvided,
        target_noise_clip: Optional[float] = NotProvided,
        exploration_noise: Optional[float] = NotProvided,
        actor_hiddens: Optional[list] = NotProvided,
        actor_activation: Optional[str] = NotProvided,
        critic_hiddens: Optional[list] = NotProvided,
        critic_activation: Optional[str] = NotProvided,
        **kwargs: Any,
    ) -> "TD3Config":
        """TD3's settings, plus everything ``TransitionReplayConfig.training`` takes.

        Args:
            policy_delay: critic steps per actor step and target-network update.
            target_noise: std of the Gaussian target-policy smoothing noise.
            target_noise_clip: the smoothing noise is clipped to +-this.
            exploration_noise: std of the Gaussian noise added to actions while sampling.
            actor_hiddens, critic_hiddens: hidden layer sizes.
            actor_activation, critic_activation: hidden activations.
        """
        super().training(**kwargs)
        for name, value in [
            ("policy_delay", policy_delay), ("target_noise", target_noise),
            ("target_noise_clip", target_noise_clip), ("exploration_noise", exploration_noise),
            ("actor_hiddens", actor_hiddens), ("actor_activation", actor_activation),
            ("critic_hiddens", critic_hiddens), ("critic_activation", critic_activation),
        ]:
            if value is not NotProvided:
                setattr(self, name, value)
        return self

    def validate(self) -> None:
        super().validate()
        if self.lr is not None:
            self._value_error("TD3 uses `actor_lr` and `critic_lr`; set `lr` to None")
        if int(self.policy_delay) < 1:
            self._value_error(f"`policy_delay` must be >= 1, got {self.policy_delay}")
        for name in ("target_noise", "target_noise_clip", "exploration_noise"):
            if getattr(self, name) < 0:
                self._value_error(f"`{name}` must be >= 0, got {getattr(self, name)}")
        if not 0 < self.tau <= 1:
            self._value_error(f"`tau` must be in (0, 1], got {self.tau}")
        if self.n_step != 1:
            self._value_error(f"TD3 uses one-step returns; `n_step` must be 1, got {self.n_step}")

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        if self.framework_str != "torch":
            raise ValueError(f"TD3 is implemented for torch only, got {self.framework_str!r}")
        from ddrl.algorithms.td3.module import TD3TorchRLModule

        return RLModuleSpec(module_class=TD3TorchRLModule)

    def get_default_learner_class(self) -> Union[Type[Learner], str]:
        if self.framework_str != "torch":
            raise ValueError(f"TD3 is implemented for torch only, got {self.framework_str!r}")
        from ddrl.algorithms.td3.learner import TD3TorchLearner

        return TD3TorchLearner

    @property
    def _model_config_auto_includes(self) -> dict:
        return {
            "actor_hiddens": list(self.actor_hiddens),
            "actor_activation": self.actor_activation,
            "critic_hiddens": list(self.critic_hiddens),
            "critic_activation": self.critic_activation,
            "exploration_noise": self.exploration_noise,
            "uniform_warmup": self.num_steps_sampled_before_learning_starts > 0,
        }


class TD3(TransitionReplayAlgorithm):
    """Twin Delayed DDPG. See the module docstring for the training step."""

    @classmethod
    def get_default_config(cls) -> TD3Config:
        return TD3Config()

