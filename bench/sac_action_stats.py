"""Where a trained SAC policy acts: pre-squash statistics from its checkpoints (issue #17).

Two details of SAC's squashed Gaussian differ between RLlib (ddrl) and Stable-Baselines3: the
log-std clamp (RLlib [-5, 2], SB3 [-20, 2]) and the tanh correction of the log-probability
(RLlib exact, ``2 (log 2 - u - softplus(-2u))``; SB3 ``log(1 - tanh(u)^2 + 1e-6)``). Each
matters only where the policy goes: log stds below -5, or pre-squash actions ``u`` large
enough (|u| > ~6) for the ``1e-6`` to count. This rolls out each checkpoint's stochastic
policy and reports how far it goes there, and the largest difference between the two
corrections over the visited ``u``.

Usage::

    PYTHONPATH=src:bench python bench/sac_action_stats.py --env HopperBulletEnv-v0 \\
        RUN/ddrl/work/checkpoints/iter_000060 RUN/ddrl/work/checkpoints/iter_000098
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

RLLIB_LOG_STD_MIN = -5.0
MODULE_SUBDIR = Path("learner_group/learner/rl_module/default_policy")


def tanh_corrections(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension ``log(1 - tanh(u)^2)``: RLlib's exact form and SB3's ``+1e-6`` form."""
    exact = 2.0 * (math.log(2.0) - u - np.logaddexp(0.0, -2.0 * u))
    sb3 = np.log(1.0 - np.tanh(u) ** 2 + 1e-6)
    return exact, sb3


def checkpoint_stats(checkpoint: Path, env_id: str, episodes: int, seed: int) -> dict:
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    import ddrl.algorithms.sac.sac  # noqa: F401  (the module class the checkpoint names)
    from ddrl.envs import make_env

    module = RLModule.from_checkpoint(str(checkpoint / MODULE_SUBDIR))
    env = make_env(env_id)
    rng = np.random.default_rng(seed)
    locs, log_stds, us, returns = [], [], [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, total = False, 0.0
        while not done:
            with torch.no_grad():
                logits = module.forward_inference(
                    {Columns.OBS: torch.as_tensor(obs[None], dtype=torch.float32)}
                )[Columns.ACTION_DIST_INPUTS][0].numpy()
            loc, log_std = np.split(logits, 2)
            u = loc + rng.standard_normal(loc.shape) * np.exp(np.clip(log_std,
                                                                      RLLIB_LOG_STD_MIN, 2.0))
            locs.append(loc), log_stds.append(log_std), us.append(u)
            obs, reward, terminated, truncated, _ = env.step(np.tanh(u).astype(np.float32))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    locs, log_stds, us = np.array(locs), np.array(log_stds), np.array(us)
    exact, sb3 = tanh_corrections(us)
    return {
        "checkpoint": str(checkpoint),
        "steps": len(us),
        "stochastic_return_mean": float(np.mean(returns)),
        "max_abs_mean": float(np.abs(locs).max()),
        "max_abs_u": float(np.abs(us).max()),
        "share_abs_u_over_6": float((np.abs(us) > 6).mean()),
        "min_log_std": float(log_stds.min()),
        "share_log_std_below_rllib_floor": float((log_stds < RLLIB_LOG_STD_MIN).mean()),
        "max_logp_difference": float(np.abs(exact.sum(-1) - sb3.sum(-1)).max()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", type=Path, help="ddrl SAC checkpoint folders")
    parser.add_argument("--env", required=True, help="gymnasium env id the policy was trained on")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args(argv)
    for checkpoint in args.checkpoints:
        if not (checkpoint / MODULE_SUBDIR).is_dir():
            parser.error(f"{checkpoint}: not a ddrl SAC checkpoint (no {MODULE_SUBDIR})")
    header = ("checkpoint", "steps", "stoch. return", "max |mean|", "max |u|", "|u|>6",
              "min log std", "log std<-5", "max |logp diff|")
    print(" | ".join(header))
    for checkpoint in args.checkpoints:
        s = checkpoint_stats(checkpoint, args.env, args.episodes, args.seed)
        print(" | ".join([
            "/".join(checkpoint.parts[-5:]), str(s["steps"]), f"{s['stochastic_return_mean']:.0f}",
            f"{s['max_abs_mean']:.2f}", f"{s['max_abs_u']:.2f}", f"{s['share_abs_u_over_6']:.4f}",
            f"{s['min_log_std']:.2f}", f"{s['share_log_std_below_rllib_floor']:.4f}",
            f"{s['max_logp_difference']:.2e}",
        ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
