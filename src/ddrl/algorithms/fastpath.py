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

import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence, TypeVar

import torch
import torch.optim.optimizer as torch_optimizer
from torch import nn
from torch.nn import functional as F


def optimizer_params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The parameters an optimiser steps, over all its groups, in order."""
    return [p for group in optimizer.param_groups for p in group["params"]]


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
        params = optimizer_params(opt)
        if not params or not all(p.dtype == torch.float32 and p.device.type in ("cpu", "cuda")
                                 for p in params):
            continue
        for group in opt.param_groups:
            group["fused"], group["foreach"] = True, False
            group["capturable"] = bool(capturable and params[0].device.type == "cuda")


# torch's hooks registered for every optimiser (register_optimizer_step_pre_hook, ...).
_GLOBAL_OPTIMIZER_HOOKS = (getattr(torch_optimizer, "_global_optimizer_pre_hooks", {}),
                           getattr(torch_optimizer, "_global_optimizer_post_hooks", {}))


class FusedAdamStep:
    """``optimizer.step()`` for a fused torch Adam, calling its kernel directly.

    ``Optimizer.step`` spends more Python time per call than the fused kernel takes on a
    [256, 256] network (profiler hooks, the per-parameter state walk, grouping tensors by
    device): ~90 against ~50 us per step on the 2-core box, four steps per SAC update. This
    keeps the optimiser's own state tensors (checkpoints and ``load_state_dict`` see nothing
    different) and runs the same kernel with the same arguments, so the update is bitwise
    the same (tested). Anything else (no state yet, hooks, several groups, amsgrad,
    capturable, weight decay variants, a tensor learning rate, a parameter without a
    gradient) goes through ``optimizer.step()``.
    """

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer
        self._state_dict: Any = None  # the optimiser's ``state`` the cached lists belong to
        self._lists: tuple[list[torch.Tensor], ...] = ()

    def __call__(self) -> None:
        if not self._direct():
            self.optimizer.step()
            return
        group = self.optimizer.param_groups[0]
        params, exp_avgs, exp_avg_sqs, steps = self._lists
        beta1, beta2 = group["betas"]
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, [], steps,
                           amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                           weight_decay=group["weight_decay"], eps=group["eps"],
                           maximize=False, grad_scale=None, found_inf=None)

    def _direct(self) -> bool:
        opt = self.optimizer
        if (type(opt) is not torch.optim.Adam or len(opt.param_groups) != 1
                or opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
                or _GLOBAL_OPTIMIZER_HOOKS[0] or _GLOBAL_OPTIMIZER_HOOKS[1]
                or getattr(opt, "grad_scale", None) is not None):
            return False
        group = opt.param_groups[0]
        if (not group.get("fused") or group.get("amsgrad") or group.get("maximize")
                or group.get("capturable") or group.get("differentiable")
                or group.get("decoupled_weight_decay") or not isinstance(group["lr"], float)):
            return False
        if opt.state is not self._state_dict or len(self._lists[0]) != len(group["params"]):
            if not self._cache():
                return False
        return all(p.grad is not None for p in self._lists[0])

    def _cache(self) -> bool:
        params = list(self.optimizer.param_groups[0]["params"])
        states = [self.optimizer.state.get(p) for p in params]
        if not params or not all(st and {"exp_avg", "exp_avg_sq", "step"} <= st.keys()
                                 for st in states):
            return False  # state appears on the first optimizer.step()
        if len({(p.device, p.dtype) for p in params}) != 1:
            return False
        self._lists = (params, [st["exp_avg"] for st in states],
                       [st["exp_avg_sq"] for st in states], [st["step"] for st in states])
        self._state_dict = self.optimizer.state
        return True


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


# Layers :class:`PlainMLP` calls as tensor ops (the activation's function, or None).
_PLAIN_LAYERS: dict[type, Callable[[torch.Tensor], torch.Tensor] | None] = {
    nn.Linear: None, nn.ReLU: torch.relu, nn.Tanh: torch.tanh, nn.Identity: None}


class PlainMLP:
    """An MLP of ``nn.Linear`` layers and elementwise activations called as plain tensor ops
    (``F.linear``, ``torch.relu``): the same parameters and the same maths as calling the
    modules, without ``nn.Module.__call__`` and RLlib's nested containers on every layer
    (Python work that holds the GIL, which the minibatch parts' threads share)."""

    def __init__(self, layers: Sequence[tuple[torch.Tensor, torch.Tensor | None]],
                 activations: Sequence[Callable[[torch.Tensor], torch.Tensor] | None]) -> None:
        self.layers = [(w, b, act) for (w, b), act in zip(layers, activations)]

    @classmethod
    def of(cls, *modules: nn.Module) -> "PlainMLP | None":
        """The plain form of ``modules`` called in order, or None when a part is not a
        Linear or a known activation (or is an RLlib head that clips its log-stds)."""
        layers, activations = [], []
        for module in modules:
            if getattr(module, "clip_log_std", False):
                return None
            for leaf in module.modules():
                if next(leaf.children(), None) is not None:
                    continue  # a container
                kind = type(leaf)
                if kind not in _PLAIN_LAYERS:
                    return None
                if kind is nn.Linear:
                    layers.append((leaf.weight, leaf.bias))
                    activations.append(None)
                elif _PLAIN_LAYERS[kind] is not None:
                    if not activations or activations[-1] is not None:
                        return None  # an activation not right after a Linear
                    activations[-1] = _PLAIN_LAYERS[kind]
        return cls(layers, activations) if layers else None

    def parameters(self) -> list[torch.Tensor]:
        return [t for w, b, _ in self.layers for t in (w, b) if t is not None]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        for w, b, act in self.layers:
            x = F.linear(x, w, b)
            if act is not None:
                x = act(x)
        return x


def mlp_chain(encoder: nn.Module, head: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """An RLlib MLP encoder and its head as one callable: a :class:`PlainMLP` where they are
    plain Linear/activation stacks, else ``nn.Sequential(encoder.net, head)`` (the encoder's
    inner MLP, then the head module itself, so a head's log-std clipping still applies).
    Shares the parameters; skips RLlib's dict-in/dict-out plumbing on every call."""
    return PlainMLP.of(encoder.net, head) or nn.Sequential(encoder.net, head)


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
