"""SAC loss maths (Haarnoja et al. 2018, arXiv:1812.05905) in plain torch, as RLlib 2.60 computes
them: Huber critic regression (or the paper's squared error), the reparameterised actor
objective, and the temperature loss.

Pure functions of tensors: the learner (:mod:`ddrl.algorithms.sac.learner`) feeds them the
networks' outputs, and the unit tests check them against hand-written references.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from ray.rllib.utils.numpy import MAX_LOG_NN_OUTPUT, MIN_LOG_NN_OUTPUT

HUBER = torch.nn.HuberLoss(delta=1.0)


def critic_targets(rewards: torch.Tensor, terminateds: torch.Tensor, next_q: torch.Tensor,
                   next_logp: torch.Tensor, alpha: torch.Tensor | float,
                   discount: float) -> torch.Tensor:
    """``r + discount (1 - terminated) (min Q_target(s', a') - alpha log pi(a'|s'))``.

    ``next_q`` is already the minimum over the target critics; ``discount`` is
    ``gamma ** n_step``. Only ``terminateds`` stops the bootstrap (time limits bootstrap).
    """
    alive = 1.0 - terminateds.float()
    return rewards + discount * alive * (next_q - alpha * next_logp)


# The critic regression losses ``critic_loss`` accepts.
HUBER_LOSS, SQUARED_LOSS = "huber", "mse"
CRITIC_LOSSES = (HUBER_LOSS, SQUARED_LOSS)


def critic_loss(qs: Sequence[torch.Tensor], targets: torch.Tensor,
                kind: str = HUBER_LOSS) -> torch.Tensor:
    """Sum over the critics of the regression loss between Q(s, a) and the targets.

    ``huber``: Huber loss with delta 1 (RLlib's, and RLlib 1.x's that the thesis used): its
    gradient is the TD error clipped to [-1, 1]. ``mse``: ``0.5 mean((Q - y)^2)``, the SAC
    paper's J_Q and Stable-Baselines3's: the same gradient inside [-1, 1], unclipped outside.
    """
    if kind == HUBER_LOSS:
        return sum(HUBER(q, targets) for q in qs)
    if kind == SQUARED_LOSS:
        return sum(0.5 * F.mse_loss(q, targets) for q in qs)
    raise ValueError(f"critic_loss must be one of {CRITIC_LOSSES}, got {kind!r}")


def actor_loss(logp: torch.Tensor, qs: Sequence[torch.Tensor],
               alpha: torch.Tensor | float) -> torch.Tensor:
    """``mean(alpha log pi(a|s) - min_j Q_j(s, a))`` for reparameterised actions ``a``."""
    q_pi = torch.min(torch.stack(list(qs)), dim=0).values
    return (alpha * logp - q_pi).mean()


def alpha_loss(log_alpha: torch.Tensor, logp: torch.Tensor,
               target_entropy: torch.Tensor | float) -> torch.Tensor:
    """``-mean(log alpha (log pi(a|s) + target_entropy))``; ``logp`` carries no gradient."""
    return -(log_alpha * (logp.detach() + target_entropy)).mean()


def tanh_log_jacobian(unsquashed: torch.Tensor) -> torch.Tensor:
    """``log(1 - tanh(u)^2)`` per dimension, exact and stable for large ``|u|`` (RLlib's
    form; Stable-Baselines3 uses ``log(1 - tanh(u)^2 + 1e-6)``)."""
    return 2.0 * (math.log(2.0) - unsquashed - F.softplus(-2.0 * unsquashed))


def squashed_gaussian_sample(logits: torch.Tensor, noise: torch.Tensor | None = None,
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterised action in [-1, 1] and its log-probability, as RLlib's
    ``TorchSquashedGaussian.from_logits(logits).rsample_and_logp()`` computes them (same
    operations and random stream), without building distribution objects. ``noise``: the
    standard normal draws to use (default: drawn here, as RLlib does)."""
    loc, log_std = logits.chunk(2, dim=-1)
    scale = torch.clamp(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT).exp()
    unsquashed = loc + (torch.randn_like(loc) if noise is None else noise) * scale
    normal_logp = (-((unsquashed - loc) ** 2) / (2 * scale ** 2) - scale.log()
                   - math.log(math.sqrt(2 * math.pi)))
    jacobian = tanh_log_jacobian(unsquashed)
    action = torch.clamp((torch.tanh(unsquashed) + 1.0) / 2.0 * 2.0 - 1.0, -1.0, 1.0)
    return action, normal_logp.sum(-1) - jacobian.sum(-1)
