"""The fast off-policy training loop that ddrl's SAC and TD3 share.

RLlib 2.60's SAC training step pays, per gradient step, for an episode replay buffer that
rebuilds a batch from episodes, a learner connector pipeline and per-update metrics
bookkeeping; at one update per env step on a 2-core machine that is several times the cost
of the gradient step itself (RLlib SAC: 3.8 env steps/s on InvertedPendulum). With
``replay_buffer_config={"type": "TransitionReplayBuffer"}`` (the default here) each
training step instead

1. samples ``rollout_fragment_length`` steps per env from every env runner (remote runners
   sample the next fragment while the learner trains on this one),
2. appends the transitions to ddrl's flat NumPy buffer (:mod:`ddrl.algorithms.replay`),
3. once ``num_steps_sampled_before_learning_starts`` env steps were sampled, draws
   ``updates_per_step`` x (new env steps) minibatches in one go and trains them in one
   learner call (the learner's ``update_from_transitions``),
4. syncs the weights to the env runners.

Two update schedules (``update_schedule``), named so a config says which one it measures:

- ``fixed_ratio`` (ddrl's default): ``updates_per_step`` gradient updates per sampled env
  step, whatever the number of env runners, so iteration times at different worker counts
  compare the same amount of learning.
- ``rllib1_round_robin``: what RLlib 1.x did with ``training_intensity`` unset, and so what
  the thesis's TD3/SAC timing runs measured. Each training step is one synchronous round:
  ``rollout_fragment_length`` steps from every env runner (N of them), stored, then ONE
  update of ``train_batch_size``, then a weight sync. An iteration still closes after
  ``timesteps_per_iteration`` env steps, so it holds about
  ``timesteps_per_iteration / (N * rollout_fragment_length)`` updates: the updates per env
  step fall as 1/N. No sampling overlaps learning (RLlib 1.x's bulk-synchronous sampling).

Both record the gradient updates of every iteration (``UPDATES_KEY``). With one of RLlib's
episode buffers it runs RLlib's own SAC training step unchanged.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable, Dict, Hashable, Mapping, Optional

import torch
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core import DEFAULT_MODULE_ID
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

from ddrl.algorithms.common import (
    FIXED_RATIO,
    REPLAY_BUFFER_TYPES,
    RLLIB1_ROUND_ROBIN,
    UPDATE_SCHEDULES,
)
from ddrl.algorithms.fastpath import CapturedSteps, FusedAdamStep, prefer_fused_adam
from ddrl.algorithms.replay import (
    COLUMNS,
    DeviceReplayBuffer,
    TransitionReplayBuffer,
    episode_transitions,
)
from ddrl.algorithms.threads import (LEARNER_THREAD_MODES, learner_thread_count,
                                     learner_thread_mode)

log = logging.getLogger(__name__)

FAST_BUFFER = REPLAY_BUFFER_TYPES[0]
# Many env runners sample many steps per training step; cap the minibatches drawn and
# shipped per learner call so one call's batch stays a few MB.
MAX_UPDATES_PER_CALL = 128
SAMPLE_TAG = "ddrl_offpolicy_sample"

# Gradient updates this iteration (a per-iteration sum: RLlib clears "sum" stats at every
# reduce) and over the run's lifetime; read into progress.csv by ddrl.training.progress.
UPDATES_KEY = ("ddrl", "num_gradient_updates")
UPDATES_LIFETIME_KEY = ("ddrl", "num_gradient_updates_lifetime")
# The acting policy's staleness: the most gradient updates the learner had made beyond the
# weights a fragment was sampled with, by the time the fragment was in (an iteration's max).
POLICY_LAG_KEY = ("ddrl", "acting_policy_lag_updates")


class TransitionReplayConfig(SACConfig):
    """``SACConfig`` plus the settings of the transition-buffer training loop."""

    def __init__(self, algo_class: Optional[type] = None) -> None:
        super().__init__(algo_class=algo_class)
        self.updates_per_step = 1.0
        self.update_schedule = FIXED_RATIO
        # torch intra-op threads of a CPU learner; None: ddrl.training.runtime.learner_thread_count()
        # ($DDRL_LEARNER_THREADS, default 1). On a busy machine extra threads oversubscribe
        # the cores (measured 10x slower updates with 2 threads on a loaded 2-core box).
        self.learner_num_threads: Optional[int] = None
        # How 2+ threads are used: "kernels" or "parts" (limit_learner_threads); None:
        # ddrl.training.runtime.learner_thread_mode() ($DDRL_LEARNER_THREAD_MODE, "kernels").
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
        self.replay_buffer_config = {"type": FAST_BUFFER, "capacity": 1_000_000}
        self.rollout_fragment_length = 64
        self.min_time_s_per_iteration = 0
        self.min_sample_timesteps_per_iteration = 1000

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
                the minibatch, one Python thread each (:func:`limit_learner_threads`).
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


# At most this many minibatch parts on threads; more threads go to torch's kernels.
MAX_BATCH_PARTS = 4


def learner_thread_settings(config: Any) -> tuple[int, str]:
    """A CPU learner's (threads, mode): the config's ``learner_num_threads`` and
    ``learner_thread_mode``, else ``$DDRL_LEARNER_THREADS`` and ``$DDRL_LEARNER_THREAD_MODE``."""
    threads = int(getattr(config, "learner_num_threads", None) or learner_thread_count())
    return threads, getattr(config, "learner_thread_mode", None) or learner_thread_mode()


def limit_learner_threads(learner: Any) -> None:
    """Apply ``learner_num_threads`` and ``learner_thread_mode`` to a CPU learner (call from
    ``Learner.build``).

    ``kernels``: torch's intra-op threads share every op; the algorithm drops a local
    learner to one thread while its env runners sample (:class:`SharedCores`), since
    OpenMP threads spin in barriers while a runner holds a core. ``parts``: the update runs
    on that many parts of the minibatch, one Python thread of one torch thread each
    (``learner._batch_parts``, see :class:`~ddrl.algorithms.fastpath.SplitBatch`; at most
    :data:`MAX_BATCH_PARTS`). Which is faster depends on the machine (docs/benchmarks.md,
    "Sharing the cores with the env runner"). A GPU learner keeps one part.
    """
    threads, mode = learner_thread_settings(learner.config)
    on_cpu = learner._device.type == "cpu"
    parts = min(threads, MAX_BATCH_PARTS) if on_cpu and mode == "parts" else 1
    learner._batch_parts = parts
    if on_cpu:
        torch.set_num_threads(max(1, threads // parts))


class SharedCores:
    """torch's kernel threads for a local CPU learner whose env runners share its cores:
    ``threads`` while no sample request is in flight, one while one is.

    Called before each update of a learner call (``update_from_transitions``'s
    ``before_update``); it looks every ``every`` updates. ``sampling()`` says whether env
    runners are still sampling. :meth:`restore` gives the learner all its threads back.
    """

    def __init__(self, threads: int, sampling: Callable[[], bool], every: int = 4) -> None:
        self.threads = int(threads)
        self.sampling = sampling
        self.every = max(1, int(every))

    def __call__(self, i: int) -> None:
        if i % self.every == 0:
            torch.set_num_threads(1 if self.sampling() else self.threads)

    def restore(self) -> None:
        torch.set_num_threads(self.threads)


def captured_steps_for(learner: Any) -> CapturedSteps:
    """The learner's step runner: CUDA graphs on a GPU learner unless
    ``learner_graph_capture`` is False, eager otherwise."""
    capture = getattr(learner.config, "learner_graph_capture", None)
    return CapturedSteps(learner._device, capture=True if capture is None else capture)


def learner_replay_buffer(learner: Any) -> DeviceReplayBuffer:
    """The learner's own replay buffer on its device (created on first use)."""
    buffer = learner.__dict__.get("_device_replay_buffer")
    if buffer is None:
        capacity = learner.config.replay_buffer_config.get("capacity", 1_000_000)
        buffer = DeviceReplayBuffer(capacity, device=learner._device)
        learner._device_replay_buffer = buffer
    return buffer


class OffPolicyStep:
    """Base of the learners' fast update steps (``SACStep``, ``TD3Step``): one gradient
    update on a minibatch of tensors, with loss sums kept on the device so a GPU learner can
    capture it as a CUDA graph. Subclasses set ``module``, ``optimizers`` and ``acc`` and
    implement :meth:`run` and :meth:`results`."""

    module: torch.nn.Module
    optimizers: list[torch.optim.Optimizer]

    def __init__(self) -> None:
        self._slots: Optional[Dict[str, torch.Tensor]] = None
        self._adam_steps: Dict[torch.optim.Optimizer, FusedAdamStep] = {}

    def step_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """``optimizer.step()``, through :class:`FusedAdamStep` (same update, less Python)."""
        stepper = self._adam_steps.get(optimizer)
        if stepper is None:
            stepper = self._adam_steps[optimizer] = FusedAdamStep(optimizer)
        stepper()

    def begin_call(self) -> None:
        """Called once per learner call, before its updates."""

    def add_columns(self, minibatches: Dict[str, torch.Tensor]) -> None:
        """Add per-transition inputs drawn once per learner call (TD3: the target-smoothing
        noise) to the minibatches of ``update_from_transitions``."""

    def kind(self, i: int) -> Hashable:
        """What the ``i``-th update of this call does, when steps differ (TD3: with or
        without the delayed actor step); each kind is captured as its own CUDA graph."""
        return None

    def run(self, batch: Mapping[str, torch.Tensor], kind: Hashable) -> None:
        raise NotImplementedError

    def results(self, num_updates: int) -> Dict[str, float]:
        raise NotImplementedError

    def slots_for(self, buffer: DeviceReplayBuffer, batch_size: int) -> Dict[str, torch.Tensor]:
        """Preallocated minibatch tensors that ``buffer.sample_into`` fills in place."""
        if self._slots is None or len(self._slots["rewards"]) != batch_size:
            self._slots = buffer.minibatch_slots(batch_size)
        return self._slots


class FastUpdateLearner:
    """Mixin for a torch learner with an :class:`OffPolicyStep` (``step_class``): the
    per-module step with fused Adam, and the two ways in of ddrl's training loop,
    :meth:`update_from_transitions` (host replay buffer) and
    :meth:`update_from_device_buffer` (replay buffer on the learner's device)."""

    step_class: type[OffPolicyStep]

    def fast_step(self, module_id: str = DEFAULT_MODULE_ID) -> OffPolicyStep:
        """The module's update step, ready for a learner call (train mode, fused Adam)."""
        steps = self.__dict__.setdefault("_fast_steps", {})
        if module_id not in steps:
            steps[module_id] = self.step_class(self, module_id)
            self.__dict__.setdefault("_captured_steps", captured_steps_for(self))
        step = steps[module_id]
        step.module.train()
        # Re-applied every call: restoring optimiser state brings back the saved flags.
        prefer_fused_adam(step.optimizers, capturable=self._captured_steps.capture)
        step.begin_call()
        return step

    # -- the uniform warm-up flag: a module buffer, so weight syncs and checkpoints carry it
    def set_uniform_warmup(self, on: bool, module_id: str = DEFAULT_MODULE_ID) -> None:
        self.module[module_id].unwrapped().uniform_warmup.fill_(bool(on))

    def uniform_warmup(self, module_id: str = DEFAULT_MODULE_ID) -> bool:
        """Whether the module still explores with uniform random actions (False for a
        module without the flag)."""
        flag = getattr(self.module[module_id].unwrapped(), "uniform_warmup", None)
        return bool(flag) if flag is not None else False

    def update_from_transitions(
        self, data: Mapping[str, Any], num_updates: int, batch_size: int,
        module_id: str = DEFAULT_MODULE_ID,
        before_update: Optional[Callable[[int], None]] = None,
    ) -> Dict[str, float]:
        """Train ``num_updates`` steps on consecutive minibatches of ``data``: columns of
        :class:`~ddrl.algorithms.replay.TransitionReplayBuffer` holding
        ``num_updates * batch_size`` transitions. Returns mean losses. ``before_update(i)``,
        if given, is called before the ``i``-th update (:class:`SharedCores`)."""
        t = minibatch_tensors(data, num_updates, batch_size, self._device)
        step = self.fast_step(module_id)
        step.add_columns(t)
        for i in range(num_updates):
            if before_update is not None:
                before_update(i)
            sl = slice(i * batch_size, (i + 1) * batch_size)
            step.run({k: v[sl] for k, v in t.items()}, step.kind(i))
        return step.results(num_updates)

    def update_from_device_buffer(
        self, new_transitions: Mapping[str, Any], num_updates: int, batch_size: int,
        module_id: str = DEFAULT_MODULE_ID,
    ) -> Dict[str, float]:
        """Add ``new_transitions`` to the learner's own replay buffer (on its device), then
        train ``num_updates`` steps on minibatches sampled there: captured as CUDA graphs
        (one per step kind) on a GPU learner with ``learner_graph_capture``."""
        step = self.fast_step(module_id)
        buffer = learner_replay_buffer(self)
        buffer.add_transitions(new_transitions)
        if num_updates:
            slots = step.slots_for(buffer, batch_size)
            for i in range(num_updates):
                kind = step.kind(i)
                self._captured_steps.run(
                    (module_id, batch_size, kind),
                    lambda: (buffer.sample_into(slots), step.run(slots, kind)),
                )
        return step.results(num_updates)


class PendingTransitions:
    """The algorithm's side of a learner-held replay buffer: transitions sampled since the
    last learner call, waiting to be shipped, and the fill level of the learner's buffer."""

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self._parts: list[dict[str, Any]] = []
        self._added = 0

    def __len__(self) -> int:
        return min(self._added, self.capacity)

    def add(self, episodes: Any) -> int:
        parts = [p for p in (episode_transitions(e) for e in episodes) if len(p["rewards"])]
        self._parts += parts
        n = sum(len(p["rewards"]) for p in parts)
        self._added += n
        return n

    def take(self) -> dict[str, Any]:
        """The pending transitions as columns (empty columns if none), and forget them."""
        import numpy as np

        parts, self._parts = self._parts, []
        if not parts:
            return {name: np.zeros((0,)) for name in COLUMNS}
        return {name: np.concatenate([p[name] for p in parts]) for name in COLUMNS}


def polyak_update(pairs: list[tuple[torch.nn.Module, torch.nn.Module]], tau: float) -> None:
    """``target <- (1 - tau) * target + tau * source`` for every (source, target) pair.

    Under ``no_grad``: recorded by autograd, each in-place step would chain a node onto the
    targets' history, a leak of ~8 KB per SAC update that no step ever frees."""
    sources: list[torch.Tensor] = []
    targets: list[torch.Tensor] = []
    for source, target in pairs:
        sources.extend(source.parameters())
        targets.extend(target.parameters())
    with torch.no_grad():
        torch._foreach_lerp_(targets, sources, tau)


def minibatch_tensors(data: Any, num_updates: int, batch_size: int,
                      device: torch.device) -> dict[str, torch.Tensor]:
    """Transition columns (NumPy) as tensors on the learner's device, checked to hold
    ``num_updates`` minibatches of ``batch_size`` (the input of ``update_from_transitions``)."""
    import numpy as np

    t = {k: torch.as_tensor(np.asarray(v), device=device) for k, v in data.items()}
    if len(t["rewards"]) < num_updates * batch_size:
        raise ValueError(
            f"update_from_transitions got {len(t['rewards'])} transitions for "
            f"{num_updates} updates of {batch_size}"
        )
    return t


# The algorithm state's key for the replay buffer (with `store_buffer_in_checkpoints`).
REPLAY_BUFFER_STATE = "ddrl_replay_buffer"


class TransitionReplayAlgorithm(SAC):
    """SAC's algorithm class with the transition-buffer training step (module docstring)."""

    def _create_local_replay_buffer_if_necessary(self, config: Any) -> Any:
        rb = config["replay_buffer_config"]
        if rb.get("type") == FAST_BUFFER:
            if config.replay_buffer_on_learner:
                return PendingTransitions(rb.get("capacity", 1_000_000))
            return TransitionReplayBuffer(rb.get("capacity", 1_000_000), seed=config.seed)
        return super()._create_local_replay_buffer_if_necessary(config)

    def setup(self, config: Any) -> None:
        super().setup(config)
        self._update_debt = 0.0  # fractional updates carried to the next training step
        self._arrived: list = []  # sample results fetched while the learner trained
        self._warmup_over = False
        self._updates_done = 0  # gradient updates over this process's lifetime
        self._synced_updates = 0  # the updates in the weights the env runners act with
        self._launch_weights = 0  # the same, for the fragments in flight
        # A local CPU learner in kernels mode with 2+ threads shares its cores with the env
        # runners (decided once: the learner applied the same settings when it was built).
        threads, mode = learner_thread_settings(config)
        self._core_sharing = (
            SharedCores(threads, self._sampling)
            if threads >= 2 and mode == "kernels" and self.learner_group.is_local
            and not config.num_gpus_per_learner else None)

    # -- checkpoints: the replay buffer, when asked for -------------------------------------
    # RLlib's new API stack never checkpoints the buffer (its `store_buffer_in_checkpoints`
    # works on the old stack only); a resumed off-policy run would relearn from an empty one.
    def get_state(self, components: Any = None, *, not_components: Any = None,
                  **kwargs: Any) -> Dict[str, Any]:
        state = super().get_state(components, not_components=not_components, **kwargs)
        if (self.config.store_buffer_in_checkpoints
                and self._check_component(REPLAY_BUFFER_STATE, components, not_components)):
            state[REPLAY_BUFFER_STATE] = {"buffer": self.local_replay_buffer.get_state(),
                                          "update_debt": self._update_debt}
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        super().set_state(state)
        saved = state.get(REPLAY_BUFFER_STATE)
        if saved is not None and self.config.store_buffer_in_checkpoints:
            self.local_replay_buffer.set_state(saved["buffer"])
            self._update_debt = float(saved["update_debt"])

    # -- hooks for subclasses -----------------------------------------------------------
    def _before_updates(self) -> None:
        """Called each training step once learning has started (both paths): ends the
        uniform random warm-up (:meth:`FastUpdateLearner.set_uniform_warmup`); the weight
        sync after this step's updates carries that to the env runners."""
        if self._warmup_over:
            return
        self._warmup_over = True
        if self._on_learner(lambda learner: learner.uniform_warmup()):
            self._on_learner(lambda learner: learner.set_uniform_warmup(False))

    # -- helpers ------------------------------------------------------------------------
    def _sampled_lifetime(self) -> int:
        return int(self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME),
                                     default=0))

    def _on_learner(self, fn: Any) -> Any:
        results = self.learner_group.foreach_learner(fn)
        return [r.get() for r in results][0]

    # -- sampling while learning ---------------------------------------------------------
    def _overlap_sampling(self) -> bool:
        group = self.env_runner_group
        return bool(self.config.sample_while_learning and not self.config.round_robin
                    and group is not None
                    and group.num_healthy_remote_workers() > 0)

    def _launch_sample(self) -> None:
        self._launch_weights = self._synced_updates
        self._samples_in_flight = self.env_runner_group.foreach_env_runner_async(
            lambda runner: (runner.sample(), runner.get_metrics()), tag=SAMPLE_TAG
        )

    def _sampling(self) -> bool:
        """Whether fragments launched earlier are still being sampled (results that arrived
        are kept for :meth:`_collect_sample`)."""
        pending = getattr(self, "_samples_in_flight", 0)
        if len(self._arrived) < pending:
            self._arrived += self.env_runner_group.fetch_ready_async_reqs(
                tags=SAMPLE_TAG, timeout_seconds=0)
        return len(self._arrived) < pending

    def _shared_cores(self) -> Optional[SharedCores]:
        """The :class:`SharedCores` when the learner is local, on the CPU, in ``kernels``
        mode with 2+ threads, and remote env runners sample while it trains; else None."""
        return self._core_sharing if self._overlap_sampling() else None

    def _collect_sample(self) -> tuple[list, list]:
        """Wait for the fragments launched earlier (launching them first if none are)."""
        if not getattr(self, "_samples_in_flight", 0):
            self._launch_sample()
        results, self._arrived = self._arrived, []
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

    def _sample(self) -> tuple[list, list]:
        if self._overlap_sampling():
            episodes, env_runner_results = self._collect_sample()
            self._log_policy_lag(self._updates_done - self._launch_weights)
            self._launch_sample()  # sampling the next fragment overlaps with the updates
            return episodes, env_runner_results
        self._log_policy_lag(self._updates_done - self._synced_updates)
        return synchronous_parallel_sample(
            worker_set=self.env_runner_group,
            concat=True,
            sample_timeout_s=self.config.sample_timeout_s,
            _uses_new_env_runners=True,
            _return_metrics=True,
        )

    # -- training step ------------------------------------------------------------------
    def training_step(self) -> None:
        if not isinstance(self.local_replay_buffer, (TransitionReplayBuffer, PendingTransitions)):
            if self._sampled_lifetime() >= self.config.num_steps_sampled_before_learning_starts:
                self._before_updates()
            return super().training_step()
        cfg = self.config
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, env_runner_results = self._sample()
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
            new_steps = self.local_replay_buffer.add(episodes)
        if self._sampled_lifetime() < cfg.num_steps_sampled_before_learning_starts:
            self._log_updates(0)
            return
        self._before_updates()
        # Unless store_buffer_in_checkpoints, a resumed run starts with an empty buffer: refill
        # it to one minibatch before training again.
        if len(self.local_replay_buffer) < cfg.train_batch_size_per_learner:
            self._log_updates(0)
            return
        if cfg.round_robin:
            num_updates = 1  # one train op per store op, as RLlib 1.x's round robin
        else:
            self._update_debt += new_steps * cfg.updates_per_step
            num_updates = int(math.floor(self._update_debt))
            self._update_debt -= num_updates
        self._log_updates(num_updates)
        if num_updates == 0:
            return
        batch_size = cfg.train_batch_size_per_learner
        for first in range(0, num_updates, MAX_UPDATES_PER_CALL):
            n = min(MAX_UPDATES_PER_CALL, num_updates - first)
            if isinstance(self.local_replay_buffer, PendingTransitions):
                new = self.local_replay_buffer.take()
                with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                    stats = self._on_learner(
                        lambda learner: learner.update_from_device_buffer(new, n, batch_size))
                self._log_learner_stats(stats)
                continue
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                data = self.local_replay_buffer.sample(batch_size, n)
            shared = self._shared_cores()
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                try:
                    stats = self._on_learner(lambda learner: learner.update_from_transitions(
                        data, n, batch_size, before_update=shared))
                finally:
                    if shared is not None:
                        shared.restore()
            self._log_learner_stats(stats)
        self._updates_done += num_updates
        trained = num_updates * batch_size
        self.metrics.log_value((LEARNER_RESULTS, DEFAULT_MODULE_ID, NUM_ENV_STEPS_TRAINED),
                               trained, reduce="sum")
        self.metrics.log_value(NUM_ENV_STEPS_TRAINED_LIFETIME, trained, reduce="lifetime_sum")
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group,
                policies=[DEFAULT_MODULE_ID],
                inference_only=True,
            )
        self._synced_updates = self._updates_done

    def _log_policy_lag(self, updates: int) -> None:
        self.metrics.log_value(POLICY_LAG_KEY, updates, reduce="max")

    def _log_learner_stats(self, stats: dict[str, float]) -> None:
        for key, value in stats.items():
            self.metrics.log_value((LEARNER_RESULTS, DEFAULT_MODULE_ID, key), value, window=1)

    def _log_updates(self, num_updates: int) -> None:
        """Count gradient updates (logged every step, so a warm-up iteration records 0)."""
        self.metrics.log_value(UPDATES_KEY, num_updates, reduce="sum")
        self.metrics.log_value(UPDATES_LIFETIME_KEY, num_updates, reduce="lifetime_sum")
