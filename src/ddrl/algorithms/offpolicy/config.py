"""The off-policy loop's ``AlgorithmConfig``: RLlib's ``SACConfig`` plus the settings of
ddrl's transition-buffer training step (:mod:`ddrl.algorithms.offpolicy`)."""

from __future__ import annotations

from typing import Any, Optional

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.sac.sac import SACConfig

from ddrl.algorithms.common import (
    FIXED_RATIO,
    REPLAY_BUFFER_CAPACITY,
    REPLAY_BUFFER_TYPES,
    RLLIB1_ROUND_ROBIN,
    ROLLOUT_FRAGMENT_LENGTH,
    TIMESTEPS_PER_ITERATION,
    UPDATE_SCHEDULES,
)
from ddrl.algorithms.threads import LEARNER_THREAD_MODES

FAST_BUFFER = REPLAY_BUFFER_TYPES[0]


class TransitionReplayConfig(SACConfig):
    """``SACConfig`` plus the settings of the transition-buffer training loop."""

    def __init__(self, algo_class: Optional[type] = None) -> None:
        super().__init__(algo_class=algo_class)
        self.updates_per_step = 1.0
        self.update_schedule = FIXED_RATIO
        # torch intra-op threads of a CPU learner; None: ddrl.algorithms.threads.learner_thread_count()
        # ($DDRL_LEARNER_THREADS, default 1). On a busy machine extra threads oversubscribe
        # the cores (measured 10x slower updates with 2 threads on a loaded 2-core box).
        self.learner_num_threads: Optional[int] = None
        # How 2+ threads are used: "kernels" or "parts" (limit_learner_threads); None:
        # ddrl.algorithms.threads.learner_thread_mode() ($DDRL_LEARNER_THREAD_MODE, "kernels").
        self.learner_thread_mode: Optional[str] = None
        # Remote env runners sample the next fragment while the learner trains on the last
        # one (the policy then lags one fragment behind the learner).
        self.sample_while_learning = True
        # Keep the replay buffer on the learner's device and sample there (None: when the
        # learner has a GPU). The algorithm then ships only new transitions to the learner.
        self.replay_on_learner: Optional[bool] = None
        # Record each update step as a CUDA graph and replay it (None: on a GPU learner).
        self.learner_graph_capture: Optional[bool] = None
        # Save the replay buffer in checkpoints (RLlib's name; its own option works on the
        # old API stack only).
        self.store_buffer_in_checkpoints = False
        self.replay_buffer_config = {"type": FAST_BUFFER, "capacity": REPLAY_BUFFER_CAPACITY}
        self.rollout_fragment_length = ROLLOUT_FRAGMENT_LENGTH
        self.min_time_s_per_iteration = 0
        self.min_sample_timesteps_per_iteration = TIMESTEPS_PER_ITERATION

    def training(
        self,
        *,
        updates_per_step: Optional[float] = NotProvided,
        update_schedule: Optional[str] = NotProvided,
        learner_num_threads: Optional[int] = NotProvided,
        learner_thread_mode: Optional[str] = NotProvided,
        sample_while_learning: Optional[bool] = NotProvided,
        replay_on_learner: Optional[bool] = NotProvided,
        learner_graph_capture: Optional[bool] = NotProvided,
        store_buffer_in_checkpoints: Optional[bool] = NotProvided,
        **kwargs: Any,
    ) -> "TransitionReplayConfig":
        """The loop's settings, plus everything ``SACConfig.training`` takes.

        Args:
            updates_per_step: gradient steps per sampled env step (transition buffer,
                ``fixed_ratio`` schedule).
            update_schedule: ``fixed_ratio`` or ``rllib1_round_robin`` (module docstring).
            learner_num_threads: threads of a CPU learner (None: $DDRL_LEARNER_THREADS,
                default 1).
            learner_thread_mode: how 2 or more threads are used (None:
                $DDRL_LEARNER_THREAD_MODE, default ``kernels``): ``kernels``, torch's
                threads share each op, and a local learner drops to one while its env
                runners sample; ``parts``, each gradient is computed on that many parts of
                the minibatch, one Python thread each
                (:func:`ddrl.algorithms.offpolicy.learner.limit_learner_threads`).
            sample_while_learning: with remote env runners, let them sample the next
                fragment while the learner trains (one fragment of policy lag).
            replay_on_learner: keep the replay buffer on the learner's device (None: when
                the learner has a GPU).
            learner_graph_capture: capture each update step as a CUDA graph (None: on a GPU
                learner; ignored on CPU).
            store_buffer_in_checkpoints: save the replay buffer (and the fractional update
                carried over) in every checkpoint, so a resumed run keeps its transitions.
        """
        super().training(**kwargs)
        for name, value in [
            ("updates_per_step", updates_per_step),
            ("update_schedule", update_schedule),
            ("learner_num_threads", learner_num_threads),
            ("learner_thread_mode", learner_thread_mode),
            ("sample_while_learning", sample_while_learning),
            ("replay_on_learner", replay_on_learner),
            ("learner_graph_capture", learner_graph_capture),
            ("store_buffer_in_checkpoints", store_buffer_in_checkpoints),
        ]:
            if value is not NotProvided:
                setattr(self, name, value)
        return self

    @property
    def round_robin(self) -> bool:
        return self.update_schedule == RLLIB1_ROUND_ROBIN

    @property
    def replay_buffer_on_learner(self) -> bool:
        """Whether the transitions live in the learner's :class:`DeviceReplayBuffer`."""
        if self.replay_on_learner is None:
            # The device buffer is not checkpointed: a GPU run that stores its buffer keeps
            # it on the host.
            return bool(self.num_gpus_per_learner) and not self.store_buffer_in_checkpoints
        return bool(self.replay_on_learner)

    @property
    def uses_transition_buffer(self) -> bool:
        return self.replay_buffer_config.get("type") == FAST_BUFFER

    def validate(self) -> None:
        if not self.uses_transition_buffer:
            self._validate_buffer_type()
            if self.update_schedule != FIXED_RATIO:
                self._value_error(
                    f"`update_schedule: {self.update_schedule}` needs the {FAST_BUFFER}; "
                    f"RLlib's episode buffers train at a fixed ratio (training_intensity)")
            return super().validate()
        # SACConfig.validate insists on RLlib's episode buffers; skip that check only.
        AlgorithmConfig.validate(self)
        self._validate_buffer_type()
        if self.lr is not None:
            self._value_error("use `actor_lr` and `critic_lr` (SAC: also `alpha_lr`); set `lr` to None")
        if self.updates_per_step <= 0:
            self._value_error(f"`updates_per_step` must be > 0, got {self.updates_per_step}")
        if self.update_schedule not in UPDATE_SCHEDULES:
            self._value_error(f"`update_schedule` must be one of {list(UPDATE_SCHEDULES)}, got "
                              f"{self.update_schedule!r}")
        if self.update_schedule == RLLIB1_ROUND_ROBIN and self.updates_per_step != 1.0:
            self._value_error(
                f"`updates_per_step` ({self.updates_per_step}) applies to the {FIXED_RATIO} "
                f"schedule only; {RLLIB1_ROUND_ROBIN} trains one update per sampling round "
                "(leave updates_per_step at 1.0)")
        if self.n_step != 1:
            self._value_error(
                f"the {FAST_BUFFER} stores one-step transitions; `n_step` must be 1, got "
                f"{self.n_step} (use an EpisodeReplayBuffer for n-step returns)"
            )
        if self.store_buffer_in_checkpoints and self.replay_buffer_on_learner:
            self._value_error(
                "`store_buffer_in_checkpoints` saves the host replay buffer, but "
                "`replay_on_learner: true` keeps the transitions in the learner's device "
                "buffer, which is not checkpointed; set one of them to false")
        if self.learner_thread_mode not in (None, *LEARNER_THREAD_MODES):
            self._value_error(f"`learner_thread_mode` must be one of "
                              f"{list(LEARNER_THREAD_MODES)} or None, got "
                              f"{self.learner_thread_mode!r}")
        if self.learner_num_threads is not None and int(self.learner_num_threads) < 1:
            self._value_error(
                "`learner_num_threads` must be an int >= 1 or None, got "
                f"{self.learner_num_threads}")
        if self.num_learners > 1:
            self._value_error(
                f"the {FAST_BUFFER} path trains on a single learner (local or remote, CPU or "
                f"GPU); got num_learners={self.num_learners}. Use an RLlib episode buffer for "
                "several learners."
            )
        if self.rollout_fragment_length == "auto" or int(self.rollout_fragment_length) < 1:
            self._value_error(
                f"`rollout_fragment_length` must be an int >= 1, got {self.rollout_fragment_length}"
            )

    def _validate_buffer_type(self) -> None:
        kind = self.replay_buffer_config.get("type")
        if kind not in REPLAY_BUFFER_TYPES:
            self._value_error(
                f"replay buffer type {kind!r} is not supported; expected one of "
                f"{list(REPLAY_BUFFER_TYPES)}"
            )

    def get_rollout_fragment_length(self, worker_index: int = 0) -> int:
        if self.uses_transition_buffer:
            return int(self.rollout_fragment_length)
        return super().get_rollout_fragment_length(worker_index)
