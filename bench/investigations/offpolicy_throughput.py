"""Off-policy training throughput, before/after: ddrl's fast path vs RLlib's generic path and SB3.

Both run HumanoidBulletEnv-v0 (by default) at one gradient update per env step, [256, 256]
actor and critics, batch 256, one env runner. Each first samples ``--learning-starts`` random
steps (not timed), then trains; the figure is env steps per second over the next
``--steps`` steps, i.e. sampling + learning + weight syncs. Prints one line per measurement
and the ddrl/SB3 ratio.

Usage (needs the ``bench`` extra: ``pip install -c requirements.lock -e '.[bench]'``)::

    python bench/investigations/offpolicy_throughput.py                      # ddrl-td3 vs sb3-td3
    python bench/investigations/offpolicy_throughput.py --rounds 2           # alternate them twice
    python bench/investigations/offpolicy_throughput.py --algos ddrl-sac ddrl-sac-generic --steps 300

Algorithms:
  ddrl-td3          ddrl TD3, transition buffer, k updates per learner call (the default)
  ddrl-td3-generic  ddrl TD3 through RLlib's generic path: EpisodeReplayBuffer, one
                    ``LearnerGroup.update`` per minibatch, 1-step fragments (the "before")
  ddrl-sac          ddrl SAC (transition buffer, concat(obs, action) Q-nets; the default)
  ddrl-sac-generic  SAC through RLlib's own training step: EpisodeReplayBuffer, 1-step
                    fragments (RLlib's SAC loop; with ddrl's Q-nets)
  sb3-td3           Stable-Baselines3 TD3 (its defaults: torch's thread count)
  sb3-td3-1t        the same with one torch thread, as ddrl's CPU learner uses
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

# Run from bench/investigations/: harness/ and the maintained benchmarks live one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HIDDENS = [256, 256]
BATCH = 256


def run_rllib(name: str, env: str, steps: int, learning_starts: int, seed: int,
              fragment: int) -> dict:
    from harness.sampling import run_spec
    from harness.throughput import time_training

    generic = name.endswith("-generic")
    hp = {"train_batch_size": BATCH, "updates_per_step": 1.0,
          "num_steps_sampled_before_learning_starts": learning_starts,
          "timesteps_per_iteration": 1000,
          "rollout_fragment_length": 1 if generic else fragment,
          "replay_buffer_type": "EpisodeReplayBuffer" if generic else "TransitionReplayBuffer"}
    if name.startswith("ddrl-sac"):
        spec = run_spec("SAC", env, seed, {**hp, "fcnet_hiddens": HIDDENS})
    else:
        spec = run_spec("TD3", env, seed, {**hp, "actor_hiddens": HIDDENS,
                                           "critic_hiddens": HIDDENS})
    row = time_training(spec, learning_starts + BATCH, steps)
    keys = ("env_runner_sampling_timer", "replay_buffer_sampling_timer",
            "learner_update_timer", "synch_weights")
    row["timers_s_last_iteration"] = {k: round(row["timers_s"][k], 3) for k in keys
                                      if k in row["timers_s"]}
    return {"algo": name, **{k: v for k, v in row.items() if k != "timers_s"}}


def run_sb3(env_id: str, steps: int, learning_starts: int, seed: int,
            threads: int | None = None) -> dict:
    import gymnasium as gym
    import torch
    import numpy as np
    import pybullet_envs_gymnasium  # noqa: F401  (registers the Bullet envs)
    from stable_baselines3 import TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    class Clock(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.t0 = self.t1 = None
            self.n0 = 0

        def _on_step(self) -> bool:
            if self.t0 is None and self.num_timesteps >= learning_starts + BATCH:
                self.t0, self.n0 = time.perf_counter(), self.num_timesteps
            self.t1 = time.perf_counter()
            return True

    if threads:
        torch.set_num_threads(threads)
    env = gym.make(env_id)
    n_act = env.action_space.shape[0]
    model = TD3("MlpPolicy", env, learning_starts=learning_starts, batch_size=BATCH,
                train_freq=1, gradient_steps=1, buffer_size=1_000_000, seed=seed, verbose=0,
                policy_kwargs={"net_arch": HIDDENS}, device="cpu",
                action_noise=NormalActionNoise(np.zeros(n_act), 0.1 * np.ones(n_act)))
    clock = Clock()
    model.learn(total_timesteps=learning_starts + BATCH + steps, callback=clock)
    n = model.num_timesteps - clock.n0
    elapsed = clock.t1 - clock.t0
    env.close()
    return {"algo": "sb3-td3-1t" if threads == 1 else "sb3-td3", "env_steps": n, "seconds": elapsed, "steps_per_s": n / elapsed,
            "torch_threads": torch.get_num_threads()}


def main(argv: list[str] | None = None) -> int:
    from harness.throughput import report_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--steps", type=int, default=1500, help="timed env steps per measurement")
    p.add_argument("--learning-starts", type=int, default=1000)
    p.add_argument("--fragment", type=int, default=64, help="ddrl-td3 rollout_fragment_length")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--algos", nargs="+", default=["sb3-td3", "sb3-td3-1t", "ddrl-td3"],
                   choices=["ddrl-td3", "ddrl-td3-generic", "ddrl-sac", "ddrl-sac-generic",
                            "sb3-td3", "sb3-td3-1t"])
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    rows = []
    for r in range(args.rounds):
        for name in args.algos:
            if name.startswith("sb3-td3"):
                row = run_sb3(args.env, args.steps, args.learning_starts, args.seed,
                              threads=1 if name == "sb3-td3-1t" else None)
            else:
                row = run_rllib(name, args.env, args.steps, args.learning_starts, args.seed,
                                args.fragment)
            row["round"] = r
            rows.append(row)
            print(f"round {r} {name:17s} {row['steps_per_s']:8.1f} env steps/s "
                  f"({row['env_steps']} steps in {row['seconds']:.1f} s) "
                  f"{json.dumps({k: v for k, v in row.items() if k.endswith(('_iteration', 'threads'))})}",
                  flush=True)
    med = {n: statistics.median(x["steps_per_s"] for x in rows if x["algo"] == n)
           for n in args.algos}
    print(f"\n{args.env}, 1 update/step, {HIDDENS}, batch {BATCH}, 1 env runner, "
          f"{os.cpu_count()} CPUs; median env steps/s over {args.rounds} round(s):")
    for n, v in med.items():
        print(f"  {n:17s} {v:8.1f}")
    for base in ("sb3-td3", "sb3-td3-1t"):
        if "ddrl-td3" in med and base in med:
            print(f"ratio ddrl-td3 / {base} = {med['ddrl-td3'] / med[base]:.2f}")
    report_json({"args": vars(args), "rows": rows, "median": med}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
