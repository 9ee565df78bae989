"""Update steps recorded once as CUDA graphs and replayed: on a GPU the update is
launch-bound, so one update costs one launch (eager on the CPU)."""

from __future__ import annotations

from typing import Any, Callable, Hashable

import torch


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
