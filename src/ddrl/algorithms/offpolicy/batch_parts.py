"""A minibatch's gradients computed in parts, one Python thread each (``learner_thread_mode:
parts``), and the helpers that sum them back into one update."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping, Sequence, TypeVar

import torch

T = TypeVar("T")


class SplitBatch:
    """Computes a step's gradients on parts of its minibatch, one part per thread.

    For a CPU learner given more than one thread: each part (a slice of rows) runs the same
    loss on its own Python thread with single-threaded torch kernels (torch ops release the
    GIL), and the caller sums the parts' gradients (:func:`sum_gradients`). Each part's loss
    is weighted by its share of the rows, so the sum is the full minibatch's mean loss and
    its gradient: the update is the same up to float summation order. Coarse parts use both
    cores of the 2-core box where torch's OpenMP threads do not (they split every small op
    and spin in barriers while the env runner holds the other core; docs/benchmarks.md).
    With one part it calls the function on the whole minibatch, with weight 1.
    """

    def __init__(self, parts: int) -> None:
        self.parts = max(1, int(parts))
        self._pool = (ThreadPoolExecutor(self.parts - 1, thread_name_prefix="ddrl-part")
                      if self.parts > 1 else None)

    def map(self, fn: Callable[[Mapping[str, torch.Tensor], float], T],
            batch: Mapping[str, torch.Tensor]) -> list[T]:
        """``fn(part, weight)`` for each part of ``batch`` (equal row slices of every
        column; ``weight`` = the part's share of the rows), in part order."""
        if self._pool is None:
            return [fn(batch, 1.0)]
        rows = len(next(iter(batch.values())))
        bounds = [rows * i // self.parts for i in range(self.parts + 1)]
        return self.concurrently(*(
            functools.partial(fn, {k: v[a:b] for k, v in batch.items()}, (b - a) / rows)
            for a, b in zip(bounds, bounds[1:])))

    def concurrently(self, *fns: Callable[[], T]) -> list[T]:
        """Call independent functions (no shared tensors written), the first on the calling
        thread and the others on the helpers (in the caller's grad mode) when there are
        enough; else in order."""
        if self._pool is None or len(fns) > self.parts:
            return [fn() for fn in fns]
        grad_enabled = torch.is_grad_enabled()  # grad mode is thread-local

        def on_helper(fn: Callable[[], T]) -> T:
            with torch.set_grad_enabled(grad_enabled):
                return fn()

        futures = [self._pool.submit(on_helper, fn) for fn in fns[1:]]
        first = fns[0]()
        return [first, *(f.result() for f in futures)]


def sum_gradients(params: Sequence[torch.Tensor],
                  per_part: Sequence[Sequence[torch.Tensor]]) -> None:
    """Set ``p.grad`` to the sum over parts of each parameter's gradient."""
    grads = list(per_part[0])
    for other in per_part[1:]:
        torch._foreach_add_(grads, list(other))
    for p, g in zip(params, grads):
        p.grad = g


def weighted(loss: torch.Tensor, weight: float) -> torch.Tensor:
    """A part's loss scaled by its share of the minibatch (unchanged for the whole batch)."""
    return loss if weight == 1.0 else loss * weight
