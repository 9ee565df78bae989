"""Where a trained SAC policy acts: pre-squash statistics from its checkpoints (issue #17).

Two details of SAC's squashed Gaussian differ between RLlib (ddrl) and Stable-Baselines3: the
log-std clamp (RLlib [-5, 2], SB3 [-20, 2]) and the tanh correction of the log-probability
(RLlib exact, ``2 (log 2 - u - softplus(-2u))``; SB3 ``log(1 - tanh(u)^2 + 1e-6)``). Each
matters only where the policy goes: log stds below -5, or pre-squash actions ``u`` large
enough (|u| > ~6) for the ``1e-6`` to count. This rolls out each checkpoint's stochastic
policy and reports how far it goes there, and the largest difference between the two
corrections over the visited ``u``.

Usage::

    PYTHONPATH=src:bench python bench/investigations/sac_action_stats.py \\
        RUN/ddrl/work/checkpoints/iter_000060 RUN/ddrl/work/checkpoints/iter_000098
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np


def tanh_corrections(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension ``log(1 - tanh(u)^2)``: ddrl's (RLlib's exact) form and SB3's ``+1e-6``."""
    import torch

    from ddrl.algorithms.sac.losses import tanh_log_jacobian

    exact = tanh_log_jacobian(torch.as_tensor(u, dtype=torch.float64)).numpy()
    sb3 = np.log(1.0 - np.tanh(u) ** 2 + 1e-6)
    return exact, sb3


def load_sac_policy(checkpoint: Path, env_id: str | None) -> object:
    """The checkpoint's policy through ddrl's loader (its checks, observation filter and
    action bounds); raises ``DdrlError`` naming what is wrong."""
    from ddrl.agents.policy import load_policy
    from ddrl.training import checkpoints

    manifest = checkpoints.read_manifest(checkpoint)
    return load_policy(checkpoint, run_id=manifest.get("run_id") or checkpoint.name,
                       env=env_id, algorithm="SAC")


def checkpoint_stats(policy: object, episodes: int, seed: int) -> dict:
    """Roll out ``policy``'s stochastic actions (ddrl's own filtering and rescaling, the
    squashed Gaussian sampled here) and summarise where its pre-squash actions go."""
    import torch
    from ray.rllib.utils.numpy import MAX_LOG_NN_OUTPUT, MIN_LOG_NN_OUTPUT

    from ddrl.envs import make_env

    generator = torch.Generator().manual_seed(seed)
    locs, log_stds, us = [], [], []

    def sample_squashed(module: object, fwd_out: dict) -> torch.Tensor:
        loc, log_std = fwd_out["action_dist_inputs"].chunk(2, dim=-1)
        scale = torch.clamp(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT).exp()
        u = loc + torch.randn(loc.shape, generator=generator) * scale
        for seen, values in ((locs, loc), (log_stds, log_std), (us, u)):
            seen.append(values.numpy().copy())
        return torch.tanh(u)

    stochastic = dataclasses.replace(policy, actions_fn=sample_squashed, _net=None)
    env = make_env(policy.env)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(stochastic.act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    locs, log_stds, us = (np.concatenate(seen) for seen in (locs, log_stds, us))
    exact, sb3 = tanh_corrections(us)
    return {
        "steps": len(us),
        "stochastic_return_mean": float(np.mean(returns)),
        "max_abs_mean": float(np.abs(locs).max()),
        "max_abs_u": float(np.abs(us).max()),
        "share_abs_u_over_6": float((np.abs(us) > 6).mean()),
        "min_log_std": float(log_stds.min()),
        "share_log_std_below_rllib_floor": float((log_stds < MIN_LOG_NN_OUTPUT).mean()),
        "max_logp_difference": float(np.abs(exact.sum(-1) - sb3.sum(-1)).max()),
    }


def main(argv: list[str] | None = None) -> int:
    from ddrl.errors import DdrlError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", type=Path, help="ddrl SAC checkpoint folders")
    parser.add_argument("--env", help="gymnasium env id (default: the checkpoint's)")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args(argv)
    policies = []
    for checkpoint in args.checkpoints:
        try:
            policies.append(load_sac_policy(checkpoint, args.env))
        except DdrlError as err:
            parser.error(f"{checkpoint}: not a ddrl SAC checkpoint ({err})")
    header = ("checkpoint", "steps", "stoch. return", "max |mean|", "max |u|", "|u|>6",
              "min log std", "log std<-5", "max |logp diff|")
    print(" | ".join(header))
    for checkpoint, policy in zip(args.checkpoints, policies):
        s = checkpoint_stats(policy, args.episodes, args.seed)
        print(" | ".join([
            "/".join(checkpoint.parts[-5:]), str(s["steps"]), f"{s['stochastic_return_mean']:.0f}",
            f"{s['max_abs_mean']:.2f}", f"{s['max_abs_u']:.2f}", f"{s['share_abs_u_over_6']:.4f}",
            f"{s['min_log_std']:.2f}", f"{s['share_log_std_below_rllib_floor']:.4f}",
            f"{s['max_logp_difference']:.2e}",
        ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
