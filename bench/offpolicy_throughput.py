"""Off-policy training throughput: ddrl TD3 vs Stable-Baselines3 TD3, same machine, same run.

Both run HumanoidBulletEnv-v0 (by default) at one gradient update per env step, [256, 256]
actor and critics, batch 256, one env runner. Each first samples ``--learning-starts`` random
steps (not timed), then trains; the figure is env steps per second over the next
``--steps`` steps, i.e. sampling + learning + weight syncs. Prints one line per measurement
and the ddrl/SB3 ratio.

Usage (needs the ``bench`` extra: ``pip install -c requirements.lock -e '.[bench]'``)::

    python bench/offpolicy_throughput.py                      # ddrl-td3 vs sb3-td3
    python bench/offpolicy_throughput.py --rounds 2           # alternate them twice
    python bench/offpolicy_throughput.py --algos ddrl-td3-generic rllib-sac --steps 200

Algorithms:
  ddrl-td3          ddrl TD3, transition buffer, k updates per learner call (the default)
  ddrl-td3-generic  ddrl TD3 through RLlib's generic path: EpisodeReplayBuffer, one
                    ``LearnerGroup.update`` per minibatch, 1-step fragments (the "before")
  rllib-sac         ddrl's SAC registry entry (RLlib 2.60's own SAC), for reference
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

HIDDENS = [256, 256]
BATCH = 256


def _spec(algorithm: str, env: str, seed: int, hp: dict):
    from ddrl.algorithms import get_algorithm
    from ddrl.schema import RESOURCES
    from ddrl.study import RunSpec

    resources = {k: v["default"] for k, v in RESOURCES["properties"].items()}
    return RunSpec(algorithm=algorithm, env=env, seed=seed, resources=resources,
                   budget={"env_steps": 1}, hyperparameters=get_algorithm(algorithm).resolve(hp),
                   fault_tolerance={"max_env_runner_restarts": 0, "restart_delay_s": 1})


def run_rllib(name: str, env: str, steps: int, learning_starts: int, seed: int,
              fragment: int) -> dict:
    from ddrl.runtime import ray_session
    from ddrl.train import build_algorithm_config

    chunk = 1000  # env steps per training iteration (the registry default)
    if name == "rllib-sac":
        hp = {"fcnet_hiddens": HIDDENS, "train_batch_size": BATCH, "updates_per_step": 1.0,
              "num_steps_sampled_before_learning_starts": learning_starts,
              "timesteps_per_iteration": chunk, "rollout_fragment_length": 1}
        spec = _spec("SAC", env, seed, hp)
    else:
        generic = name == "ddrl-td3-generic"
        hp = {"actor_hiddens": HIDDENS, "critic_hiddens": HIDDENS, "train_batch_size": BATCH,
              "updates_per_step": 1.0, "num_steps_sampled_before_learning_starts": learning_starts,
              "timesteps_per_iteration": chunk,
              "rollout_fragment_length": 1 if generic else fragment,
              "replay_buffer_type": "EpisodeReplayBuffer" if generic else "TransitionReplayBuffer"}
        spec = _spec("TD3", env, seed, hp)
    with ray_session(num_cpus=spec.cpus):
        algo = build_algorithm_config(spec).build_algo()
        try:
            done = 0
            while done < learning_starts + BATCH:  # warm-up, and the first updates (untimed)
                done = int(algo.train()["num_env_steps_sampled_lifetime"])
            start_steps, t0 = done, time.perf_counter()
            timers = []
            while done - start_steps < steps:
                result = algo.train()
                done = int(result["num_env_steps_sampled_lifetime"])
                timers.append(result.get("timers", {}))
            elapsed = time.perf_counter() - t0
        finally:
            algo.stop()
    keys = ("env_runner_sampling_timer", "replay_buffer_sampling_timer",
            "learner_update_timer", "synch_weights")
    last = {k: round(float(timers[-1][k]) * 1000, 2) for k in keys if timers and k in timers[-1]}
    return {"algo": name, "env_steps": done - start_steps, "seconds": elapsed,
            "steps_per_s": (done - start_steps) / elapsed, "timers_ms_per_call": last}


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
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--steps", type=int, default=1500, help="timed env steps per measurement")
    p.add_argument("--learning-starts", type=int, default=1000)
    p.add_argument("--fragment", type=int, default=64, help="ddrl-td3 rollout_fragment_length")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--algos", nargs="+", default=["sb3-td3", "sb3-td3-1t", "ddrl-td3"],
                   choices=["ddrl-td3", "ddrl-td3-generic", "rllib-sac", "sb3-td3", "sb3-td3-1t"])
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
                  f"{json.dumps({k: v for k, v in row.items() if k.endswith(('_call', 'threads'))})}",
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
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump({"args": vars(args), "rows": rows, "median": med}, f, indent=1)
        os.replace(args.json + ".tmp", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
