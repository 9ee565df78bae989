"""Pieces the off-policy learners' fast update paths share: fused Adam, plain MLP views of
RLlib's networks, and update steps captured as CUDA graphs.

Measured on the 2-core CPU box (docs/benchmarks.md, issue #18): ``fused=True`` Adam steps two
[256, 256] Q-networks in 0.24 ms against 0.90 ms for torch's per-parameter loop (its CPU
default), and evaluating the twin Q-nets as one batched ensemble (stacked weights, ``baddbmm``)
was 5% *slower* than two MLP calls, so the CPU path keeps them separate. On a GPU the update
is launch-bound instead: :class:`CapturedSteps` records each step once as a CUDA graph and
replays it, so one update costs one launch.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

import torch
from torch import nn


def prefer_fused_adam(optimizers: Iterable[torch.optim.Optimizer], capturable: bool = False) -> None:
    """Switch Adam optimisers to torch's fused kernel where the device supports it.

    The maths is Adam's (same hyperparameters and state); only the implementation changes.
    Applied to existing optimisers, so RLlib's registration and checkpoint layout stay as
    they are; call again after restoring optimiser state (``load_state_dict`` brings back the
    saved flags). ``capturable`` keeps the step count on the device (CUDA-graph safe).
    """
    for opt in optimizers:
        if not isinstance(opt, torch.optim.Adam):
            continue
        params = [p for g in opt.param_groups for p in g["params"]]
        if not params or not all(p.dtype == torch.float32 and p.device.type in ("cpu", "cuda")
                                 for p in params):
            continue
        for group in opt.param_groups:
            group["fused"], group["foreach"] = True, False
            group["capturable"] = bool(capturable and params[0].device.type == "cuda")


T = TypeVar("T")


class TwinThreads:
    """Evaluates a function on each of two networks, the second one on a helper thread.

    For the twin critics of SAC and TD3 on a CPU learner: they share no parameters and each
    has its own optimiser, so their forward, backward and optimiser steps can overlap (torch
    ops release the GIL; each thread runs single-threaded kernels). The results are the same
    as evaluating one after the other: no random numbers are drawn inside. Disabled, or for
    anything but two networks, it evaluates them in order on the calling thread.
    """

    def __init__(self, enabled: bool) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ddrl-twin") if enabled else None

    @property
    def enabled(self) -> bool:
        return self._pool is not None

    def map(self, fn: Callable[[Any], T], nets: Sequence[Any]) -> list[T]:
        if self._pool is None or len(nets) != 2:
            return [fn(net) for net in nets]
        grad_enabled = torch.is_grad_enabled()  # grad mode is thread-local

        def on_helper() -> T:
            with torch.set_grad_enabled(grad_enabled):
                return fn(nets[1])

        second = self._pool.submit(on_helper)
        first = fn(nets[0])
        return [first, second.result()]


def mlp_chain(encoder: nn.Module, head: nn.Module) -> nn.Sequential:
    """An RLlib MLP encoder and its head as one ``nn.Sequential`` (the encoder's inner MLP,
    then the head module itself, so a head's log-std clipping still applies). Shares the
    parameters; skips RLlib's dict-in/dict-out plumbing on every call."""
    return nn.Sequential(encoder.net, head)


class CapturedSteps:
    """Runs update steps eagerly, or, on CUDA with ``capture=True``, as replayed CUDA graphs.

    A step is a function without arguments that reads its inputs from tensors it owns (static
    buffers: the device replay buffer's sample, preallocated minibatch slots) and writes its
    results in place (parameters, optimiser state, metric accumulators). It must not sync
    with the host (no ``.item()``, no branching on tensor values). ``run(key, step)``:

    - eager (CPU, or ``capture=False``): calls ``step()``. This is the path the CPU tests
      run, with the same static buffers the graphs use;
    - capture: the first ``warmup`` calls per key run eagerly on a side stream (optimiser
      state is created there, as CUDA graphs require), the next one records the graph, and
      every later call replays it.

    Keys tell apart steps that do different work (TD3 with and without its delayed actor
    step). ``cuda`` stands in for ``torch.cuda`` (its ``Stream``, ``stream``,
    ``current_stream``, ``CUDAGraph`` and ``graph``), so tests can drive the capture logic
    without a GPU.
    """

    def __init__(self, device: torch.device, capture: bool, warmup: int = 3,
                 cuda: Any = None) -> None:
        self.device = torch.device(device)
        self._cuda = cuda if cuda is not None else torch.cuda
        self.capture = bool(capture) and (self.device.type == "cuda" or cuda is not None)
        self.warmup = int(warmup)
        self._graphs: dict[Hashable, Any] = {}
        self._calls: dict[Hashable, int] = {}
        self._pool: Any = None

    @property
    def num_graphs(self) -> int:
        return len(self._graphs)

    def run(self, key: Hashable, step: Callable[[], None]) -> None:
        if not self.capture:
            step()
            return
        graph = self._graphs.get(key)
        if graph is not None:
            graph.replay()
            return
        calls = self._calls.get(key, 0)
        self._calls[key] = calls + 1
        cuda = self._cuda
        if calls < self.warmup:
            side = cuda.Stream(device=self.device)
            side.wait_stream(cuda.current_stream(self.device))
            with cuda.stream(side):
                step()
            cuda.current_stream(self.device).wait_stream(side)
            return
        graph = cuda.CUDAGraph()
        with cuda.graph(graph, pool=self._pool):
            step()
        self._pool = graph.pool()
        self._graphs[key] = graph
        graph.replay()  # capture records without running
