"""Plain tensor-op views of RLlib's MLPs: the same parameters, without module plumbing.

Evaluating the twin Q-nets as one batched ensemble (stacked weights, ``baddbmm``) was 5%
*slower* on the 2-core CPU box than two MLP calls (docs/benchmarks.md, issue #18), so the
networks stay separate; what :class:`PlainMLP` removes is the Python work per layer.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F


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
