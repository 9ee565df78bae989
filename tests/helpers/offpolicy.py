"""Inputs shared by the off-policy learner tests (SAC, TD3)."""

from __future__ import annotations

import numpy as np
import torch


def random_transitions(n: int, obs_dim: int, act_dim: int, seed: int = 0,
                       terminateds=None, truncateds=None) -> dict[str, np.ndarray]:
    """``n`` transitions in the replay buffer's columns; episode flags as given (default:
    every third row terminated, every fourth truncated)."""
    g = np.random.default_rng(seed)
    rows = np.arange(n)
    return {
        "obs": g.normal(size=(n, obs_dim)).astype(np.float32),
        "actions": g.uniform(-1, 1, size=(n, act_dim)).astype(np.float32),
        "rewards": g.normal(size=n).astype(np.float32),
        "next_obs": g.normal(size=(n, obs_dim)).astype(np.float32),
        "terminateds": np.asarray(rows % 3 == 1 if terminateds is None else terminateds, bool),
        "truncateds": np.asarray(rows % 4 == 2 if truncateds is None else truncateds, bool),
    }


def perturb_targets(module, scale: float = 0.3) -> None:
    """Move the target networks away from the online ones, as training does."""
    with torch.no_grad():
        for _, target in module.get_target_network_pairs():
            for p in target.parameters():
                p.add_(scale * torch.randn_like(p))
