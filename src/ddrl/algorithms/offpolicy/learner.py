"""The learner side of the off-policy loop: the update step SAC's and TD3's learners share
(:class:`OffPolicyStep`), the learner mixin with the loop's two ways in
(:class:`FastUpdateLearner`), and how a CPU learner uses its threads."""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, Mapping, Optional

import torch
from ray.rllib.core import DEFAULT_MODULE_ID

from ddrl.algorithms.common import REPLAY_BUFFER_CAPACITY
from ddrl.algorithms.offpolicy.cuda_graphs import CapturedSteps
from ddrl.algorithms.offpolicy.fused_adam import FusedAdamStep, prefer_fused_adam
from ddrl.algorithms.replay import DeviceReplayBuffer
from ddrl.algorithms.threads import learner_thread_count, learner_thread_mode

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
    (``learner._batch_parts``, see :class:`~ddrl.algorithms.offpolicy.batch_parts.SplitBatch`;
    at most :data:`MAX_BATCH_PARTS`). Which is faster depends on the machine (docs/benchmarks.md,
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
        capacity = learner.config.replay_buffer_config.get("capacity", REPLAY_BUFFER_CAPACITY)
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
