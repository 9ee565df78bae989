"""TD3 (Fujimoto, van Hoof and Meger 2018, arXiv:1802.09477) on RLlib's new API stack.

RLlib dropped TD3 and DDPG in Ray 2.9. This is TD3 built the way RLlib 2.60 builds TQC on
top of SAC: ``TD3Config`` extends ``SACConfig`` (which already has ``tau``, ``actor_lr``,
``critic_lr``, ``twin_q``, replay and training-intensity settings), ``TD3`` extends ``SAC``
with its own RLModule and Learner.

The training step. With ``replay_buffer_config={"type": "TransitionReplayBuffer"}`` (the
default) each step

1. samples ``rollout_fragment_length`` steps per env from every env runner,
2. appends the transitions to ddrl's flat NumPy buffer (:mod:`ddrl.algorithms.replay`),
3. once ``num_steps_sampled_before_learning_starts`` env steps were sampled, draws
   ``updates_per_step`` x (new env steps) minibatches in one go and trains them in a single
   learner call (:meth:`TD3TorchLearner.update_from_transitions`),
4. syncs the actor weights to the env runners.

With one of RLlib's episode buffers (``EpisodeReplayBuffer``,
``PrioritizedEpisodeReplayBuffer``) it runs RLlib's generic DQN/SAC training step instead,
one learner update per minibatch: slower, but it exercises RLlib's own replay code.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Optional, Type, Union

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner import Learner
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_SAMPLE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from ddrl.algorithms.replay import TransitionReplayBuffer

log = logging.getLogger(__name__)

FAST_BUFFER = "TransitionReplayBuffer"
RLLIB_BUFFERS = ("EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer")
MAX_UPDATES_PER_CALL = 128
SAMPLE_TAG = "ddrl_td3_sample"


class TD3Config(SACConfig):
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
        # TD3 (paper defaults, in the normalised action space [-1, 1]).
        self.policy_delay = 2
        self.target_noise = 0.2
        self.target_noise_clip = 0.5
        self.exploration_noise = 0.1
        self.actor_hiddens = [256, 256]
        self.actor_activation = "relu"
        self.critic_hiddens = [256, 256]
        self.critic_activation = "relu"
        self.updates_per_step = 1.0
        # torch intra-op threads of a CPU learner. Small MLP updates gain nothing from more
        # threads, and on a busy machine extra threads oversubscribe the cores (measured
        # 10x slower updates with 2 threads on a loaded 2-core box). None: leave torch alone.
        self.learner_num_threads: Optional[int] = 1
        # Remote env runners sample the next fragment while the learner trains on the last
        # one (the policy then lags one fragment behind the learner).
        self.sample_while_learning = True
        # Overridden SAC defaults.
        self.tau = 0.005
        self.actor_lr = 1e-3
        self.critic_lr = 1e-3
        self.twin_q = True
        self.n_step = 1
        self.train_batch_size_per_learner = 256
        self.num_steps_sampled_before_learning_starts = 10_000
        self.replay_buffer_config = {"type": FAST_BUFFER, "capacity": 1_000_000}
        self.rollout_fragment_length = 64
        self.min_time_s_per_iteration = 0
        self.min_sample_timesteps_per_iteration = 1000

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
        updates_per_step: Optional[float] = NotProvided,
        learner_num_threads: Optional[int] = NotProvided,
        sample_while_learning: Optional[bool] = NotProvided,
        **kwargs: Any,
    ) -> "TD3Config":
        """TD3's settings, plus everything ``SACConfig.training`` takes.

        Args:
            policy_delay: critic steps per actor step and target-network update.
            target_noise: std of the Gaussian target-policy smoothing noise.
            target_noise_clip: the smoothing noise is clipped to +-this.
            exploration_noise: std of the Gaussian noise added to actions while sampling.
            actor_hiddens, critic_hiddens: hidden layer sizes.
            actor_activation, critic_activation: hidden activations.
            updates_per_step: gradient (critic) steps per sampled env step.
            learner_num_threads: torch threads of a CPU learner (None: torch's default).
            sample_while_learning: with remote env runners, let them sample the next
                fragment while the learner trains (one fragment of policy lag).
        """
        super().training(**kwargs)
        for name, value in [
            ("policy_delay", policy_delay), ("target_noise", target_noise),
            ("target_noise_clip", target_noise_clip), ("exploration_noise", exploration_noise),
            ("actor_hiddens", actor_hiddens), ("actor_activation", actor_activation),
            ("critic_hiddens", critic_hiddens), ("critic_activation", critic_activation),
            ("updates_per_step", updates_per_step),
            ("learner_num_threads", learner_num_threads),
            ("sample_while_learning", sample_while_learning),
        ]:
            if value is not NotProvided:
                setattr(self, name, value)
        return self

    def validate(self) -> None:
        # SACConfig.validate insists on RLlib episode buffers; TD3 also has its own.
        AlgorithmConfig.validate(self)
        if self.lr is not None:
            self._value_error("TD3 uses `actor_lr` and `critic_lr`; set `lr` to None")
        if int(self.policy_delay) < 1:
            self._value_error(f"`policy_delay` must be >= 1, got {self.policy_delay}")
        for name in ("target_noise", "target_noise_clip", "exploration_noise"):
            if getattr(self, name) < 0:
                self._value_error(f"`{name}` must be >= 0, got {getattr(self, name)}")
        if not 0 < self.tau <= 1:
            self._value_error(f"`tau` must be in (0, 1], got {self.tau}")
        if self.updates_per_step <= 0:
            self._value_error(f"`updates_per_step` must be > 0, got {self.updates_per_step}")
        if self.n_step != 1:
            self._value_error(f"TD3 uses one-step returns; `n_step` must be 1, got {self.n_step}")
        kind = self.replay_buffer_config.get("type")
        if kind not in (FAST_BUFFER,) + RLLIB_BUFFERS:
            self._value_error(
                f"replay buffer type {kind!r} is not supported by TD3; expected one of "
                f"{[FAST_BUFFER, *RLLIB_BUFFERS]}"
            )
        if kind == FAST_BUFFER and self.num_learners > 1:
            self._value_error(
                f"the {FAST_BUFFER} path trains on a single learner (local or remote, CPU or "
                f"GPU); got num_learners={self.num_learners}. Use an RLlib episode buffer for "
                "several learners."
            )
        if self.rollout_fragment_length == "auto" or int(self.rollout_fragment_length) < 1:
            self._value_error(
                f"`rollout_fragment_length` must be an int >= 1, got {self.rollout_fragment_length}"
            )

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        return int(self.rollout_fragment_length)

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


class TD3(SAC):
    """Twin Delayed DDPG. See the module docstring for the training step."""

    @classmethod
    def get_default_config(cls) -> TD3Config:
        return TD3Config()

    def _create_local_replay_buffer_if_necessary(self, config: Any) -> Any:
        rb = config["replay_buffer_config"]
        if rb.get("type") == FAST_BUFFER:
            return TransitionReplayBuffer(rb.get("capacity", 1_000_000), seed=config.seed)
        return super()._create_local_replay_buffer_if_necessary(config)

    def setup(self, config: Any) -> None:
        super().setup(config)
        self._update_debt = 0.0  # fractional updates carried to the next training step
        self._warmup_over = False

    # -- helpers ------------------------------------------------------------------------
    def _sampled_lifetime(self) -> int:
        return int(self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME),
                                     default=0))

    def _on_learner(self, fn: Any) -> Any:
        results = self.learner_group.foreach_learner(fn)
        return [r.get() for r in results][0]

    def _end_warmup_if_due(self) -> None:
        """Stop uniform random exploration once enough steps were sampled."""
        if self._warmup_over or (
            self._sampled_lifetime() < self.config.num_steps_sampled_before_learning_starts
        ):
            return
        self._warmup_over = True
        if self._on_learner(lambda learner: learner.uniform_warmup()):
            self._on_learner(lambda learner: learner.set_uniform_warmup(False))

    # -- sampling while learning ---------------------------------------------------------
    def _overlap_sampling(self) -> bool:
        group = self.env_runner_group
        return bool(self.config.sample_while_learning and group is not None
                    and group.num_healthy_remote_workers() > 0)

    def _launch_sample(self) -> None:
        self._samples_in_flight = self.env_runner_group.foreach_env_runner_async(
            lambda runner: (runner.sample(), runner.get_metrics()), tag=SAMPLE_TAG
        )

    def _collect_sample(self) -> tuple[list, list]:
        """Wait for the fragments launched earlier (launching them first if none are)."""
        if not getattr(self, "_samples_in_flight", 0):
            self._launch_sample()
        results = []
        deadline = time.monotonic() + (self.config.sample_timeout_s or 1e9)
        while len(results) < self._samples_in_flight and time.monotonic() < deadline:
            results += self.env_runner_group.fetch_ready_async_reqs(
                tags=SAMPLE_TAG, timeout_seconds=min(1.0, max(0.0, deadline - time.monotonic()))
            )
            if self.env_runner_group.num_healthy_remote_workers() == 0:
                break
        if len(results) < self._samples_in_flight:
            log.warning("%d of %d env runner sample requests did not return",
                        self._samples_in_flight - len(results), self._samples_in_flight)
        self._samples_in_flight = 0
        episodes = [e for _, (eps, _) in results for e in eps]
        return episodes, [metrics for _, (_, metrics) in results]

    # -- training step ------------------------------------------------------------------
    def training_step(self) -> None:
        if not isinstance(self.local_replay_buffer, TransitionReplayBuffer):
            self._end_warmup_if_due()
            return super().training_step()
        cfg = self.config
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            if self._overlap_sampling():
                episodes, env_runner_results = self._collect_sample()
                # Sampling the next fragment overlaps with the updates below.
                self._launch_sample()
            else:
                episodes, env_runner_results = synchronous_parallel_sample(
                    worker_set=self.env_runner_group,
                    concat=True,
                    sample_timeout_s=cfg.sample_timeout_s,
                    _uses_new_env_runners=True,
                    _return_metrics=True,
                )
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
            new_steps = self.local_replay_buffer.add(episodes)
        if self._sampled_lifetime() < cfg.num_steps_sampled_before_learning_starts:
            return
        self._end_warmup_if_due()
        # The buffer is not checkpointed (like RLlib's SAC default): after a resume, refill
        # it to one minibatch before training again.
        if len(self.local_replay_buffer) < cfg.train_batch_size_per_learner:
            return
        self._update_debt += new_steps * cfg.updates_per_step
        num_updates = int(math.floor(self._update_debt))
        self._update_debt -= num_updates
        if num_updates == 0:
            return
        batch_size = cfg.train_batch_size_per_learner
        # Many env runners sample many steps per training step; cap the minibatches drawn
        # and shipped per learner call so the batch stays a few MB.
        chunk = max(1, MAX_UPDATES_PER_CALL)
        for first in range(0, num_updates, chunk):
            n = min(chunk, num_updates - first)
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                data = self.local_replay_buffer.sample(batch_size, n)
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                stats = self._on_learner(
                    lambda learner: learner.update_from_transitions(data, n, batch_size)
                )
            for key, value in stats.items():
                self.metrics.log_value((LEARNER_RESULTS, DEFAULT_MODULE_ID, key), value,
                                       window=1)
        trained = num_updates * batch_size
        self.metrics.log_value((LEARNER_RESULTS, DEFAULT_MODULE_ID, NUM_ENV_STEPS_TRAINED),
                               trained, reduce="sum", clear_on_reduce=True)
        self.metrics.log_value(NUM_ENV_STEPS_TRAINED_LIFETIME, trained, reduce="sum")
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group,
                policies=[DEFAULT_MODULE_ID],
                inference_only=True,
            )
