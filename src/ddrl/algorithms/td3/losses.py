"""TD3 loss maths (Fujimoto et al. 2018, arXiv:1802.09477) in plain torch.

Actions live in RLlib's normalised action space [-1, 1]; the env runners rescale them to the
environment's bounds. Both the RLlib ``Learner`` path and the fast multi-step path use these
functions, and the unit tests check them against a hand-written reference.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
import torch.nn.functional as F


def smoothed_target_actions(
    module: Any, next_obs: torch.Tensor, noise_std: float, noise_clip: float,
    noise: torch.Tensor | None = None,
) -> torch.Tensor:
    """Target policy smoothing: ``clip(pi'(s') + clip(eps, -c, c), -1, 1)``, eps ~ N(0, std).

    ``noise`` (standard normal, the shape of the actions) can be passed in to make the
    result reproducible.
    """
    action = module.target_actor(next_obs)
    if noise_std > 0:
        if noise is None:
            noise = torch.randn_like(action)
        eps = (noise * noise_std).clamp(-noise_clip, noise_clip)
        action = action + eps
    return action.clamp(-1.0, 1.0)


def critic_targets(
    module: Any, batch: Mapping[str, torch.Tensor], *, gamma: float, noise_std: float,
    noise_clip: float, noise: torch.Tensor | None = None,
) -> torch.Tensor:
    """``r + gamma * (1 - terminated) * min(Q1'(s', a~), Q2'(s', a~))``.

    Truncated transitions (time limits) bootstrap like any other; only ``terminateds``
    stops the bootstrap.
    """
    with torch.no_grad():
        next_action = smoothed_target_actions(
            module, batch["next_obs"], noise_std, noise_clip, noise
        )
        q1, q2 = module.target_q(batch["next_obs"], next_action)
        not_done = 1.0 - batch["terminateds"].float()
        return batch["rewards"] + gamma * not_done * torch.minimum(q1, q2)


def critic_loss(
    module: Any, batch: Mapping[str, torch.Tensor], targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sum of the twin critics' mean squared TD errors; also returns Q1 and Q2."""
    q1, q2 = module.q(batch["obs"], batch["actions"])
    loss = F.mse_loss(q1, targets) + F.mse_loss(q2, targets)
    return loss, q1, q2


def actor_loss(module: Any, obs: torch.Tensor) -> torch.Tensor:
    """Deterministic policy gradient objective ``-mean Q1(s, pi(s))``."""
    return -module.q1(obs, module.actor(obs)).mean()

