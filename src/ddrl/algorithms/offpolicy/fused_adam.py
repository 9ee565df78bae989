"""Fused Adam for the off-policy learners' update steps: torch's fused kernel, called directly.

Measured on the 2-core CPU box (docs/benchmarks.md, issue #18): ``fused=True`` Adam steps two
[256, 256] Q-networks in 0.24 ms against 0.90 ms for torch's per-parameter loop (its CPU
default); :class:`FusedAdamStep` then skips ``Optimizer.step``'s Python overhead.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch
import torch.optim.optimizer as torch_optimizer


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
