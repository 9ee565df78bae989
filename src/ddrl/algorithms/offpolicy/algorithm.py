"""The algorithm side of the off-policy loop: RLlib's ``SAC`` with ddrl's transition-buffer
training step (:class:`TransitionReplayAlgorithm`; the steps are in
:mod:`ddrl.algorithms.offpolicy`'s docstring), and the pending transitions it ships to a
learner that keeps its replay buffer on its device."""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Dict, Optional

from ray.rllib.algorithms.sac.sac import SAC
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

from ddrl.algorithms.common import REPLAY_BUFFER_CAPACITY
from ddrl.algorithms.offpolicy.config import FAST_BUFFER
from ddrl.algorithms.offpolicy.learner import SharedCores, learner_thread_settings
from ddrl.algorithms.replay import COLUMNS, TransitionReplayBuffer, episode_transitions

log = logging.getLogger(__name__)

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


# The algorithm state's key for the replay buffer (with `store_buffer_in_checkpoints`).
REPLAY_BUFFER_STATE = "ddrl_replay_buffer"


class TransitionReplayAlgorithm(SAC):
    """SAC's algorithm class with the transition-buffer training step (module docstring)."""

    def _create_local_replay_buffer_if_necessary(self, config: Any) -> Any:
        rb = config["replay_buffer_config"]
        if rb.get("type") == FAST_BUFFER:
            capacity = rb.get("capacity", REPLAY_BUFFER_CAPACITY)
            if config.replay_buffer_on_learner:
                return PendingTransitions(capacity)
            return TransitionReplayBuffer(capacity, seed=config.seed)
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
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, env_runner_results = self._sample()
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
            new_steps = self.local_replay_buffer.add(episodes)
        num_updates = self._updates_due(new_steps)
        self._log_updates(num_updates)
        if num_updates == 0:
            return
        batch_size = self.config.train_batch_size_per_learner
        for first in range(0, num_updates, MAX_UPDATES_PER_CALL):
            self._learner_call(min(MAX_UPDATES_PER_CALL, num_updates - first), batch_size)
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

    def _updates_due(self, new_steps: int) -> int:
        """Gradient updates this training step owes for its ``new_steps`` env steps: none in
        the warm-up, nor until the buffer holds a minibatch; one per round (round robin);
        else ``updates_per_step`` each, the fraction carried to the next step."""
        cfg = self.config
        if self._sampled_lifetime() < cfg.num_steps_sampled_before_learning_starts:
            return 0
        self._before_updates()
        # Unless store_buffer_in_checkpoints, a resumed run starts with an empty buffer: refill
        # it to one minibatch before training again.
        if len(self.local_replay_buffer) < cfg.train_batch_size_per_learner:
            return 0
        if cfg.round_robin:
            return 1  # one train op per store op, as RLlib 1.x's round robin
        self._update_debt += new_steps * cfg.updates_per_step
        num_updates = int(math.floor(self._update_debt))
        self._update_debt -= num_updates
        return num_updates

    def _learner_call(self, n: int, batch_size: int) -> None:
        """``n`` updates in one learner call: on the learner's device buffer (the new
        transitions shipped along), or on minibatches drawn from the host buffer."""
        if isinstance(self.local_replay_buffer, PendingTransitions):
            new = self.local_replay_buffer.take()
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                stats = self._on_learner(
                    lambda learner: learner.update_from_device_buffer(new, n, batch_size))
            self._log_learner_stats(stats)
            return
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

    def _log_policy_lag(self, updates: int) -> None:
        self.metrics.log_value(POLICY_LAG_KEY, updates, reduce="max")

    def _log_learner_stats(self, stats: dict[str, float]) -> None:
        for key, value in stats.items():
            self.metrics.log_value((LEARNER_RESULTS, DEFAULT_MODULE_ID, key), value, window=1)

    def _log_updates(self, num_updates: int) -> None:
        """Count gradient updates (logged every step, so a warm-up iteration records 0)."""
        self.metrics.log_value(UPDATES_KEY, num_updates, reduce="sum")
        self.metrics.log_value(UPDATES_LIFETIME_KEY, num_updates, reduce="lifetime_sum")
