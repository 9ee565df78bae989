"""Training throughput against Stable-Baselines3: PPO, SAC and TD3, same machine, same run.

Each measurement trains from scratch on HumanoidBulletEnv-v0 (by default) and reports env
steps per second of *training* (sampling + learning + weight syncs) after an untimed
warm-up: PPO's first iteration (ddrl: also the env runners' start-up), the off-policy
methods' ``--learning-starts`` steps plus one minibatch. The settings match on both sides:

- PPO: ``--ppo-batch`` env steps per iteration, minibatch ``--ppo-minibatch``,
  ``--ppo-epochs`` epochs, [64, 64] tanh policy and value nets;
- SAC and TD3: one gradient update per env step, [256, 256] networks, batch 256.

ddrl runs through the registry (``harness.sampling.run_spec``, the same path as a study run)
with 1 env runner (``ddrl-ppo``, ``ddrl-sac``, ``ddrl-td3``); for PPO also with 8 envs in
the runner (``ddrl-ppo-1x8``, ``num_envs_per_env_runner: 8``: RLlib's per-step overhead is
paid once per vector step) and with 2 runners of 4 envs (``ddrl-ppo-2x4``), which is how
ddrl uses the second core. ddrl's PPO uses its lean learner (``lean_learner: true``, the
default); each PPO layout with ``-stock`` appended (``ddrl-ppo-2x4-stock``) uses RLlib's stock
PPO learner instead. SB3 is single-process with one env (``sb3-*``). Measurements alternate within each ``--rounds`` round, so machine noise hits
both sides; the summary prints the median per algorithm and the ratios ddrl / SB3. The last
line of output is one JSON object with every measurement.

Usage (needs the ``bench`` extra: ``pip install -c requirements.lock -e '.[bench]'``)::

    .venv/bin/python bench/peers.py                             # all, 1 round, ~6 min
    .venv/bin/python bench/peers.py --algos ddrl-sac sb3-sac --rounds 2
    .venv/bin/python bench/peers.py --algos ddrl-ppo ddrl-ppo-1x8 ddrl-ppo-2x4 sb3-ppo --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HIDDENS_OFFPOLICY = [256, 256]
HIDDENS_PPO = [64, 64]
BATCH = 256
PPO_LAYOUTS = {"ddrl-ppo": (1, 1), "ddrl-ppo-1x8": (1, 8), "ddrl-ppo-2r": (2, 1),
               "ddrl-ppo-2x4": (2, 4)}  # name -> (env runners, envs per runner)
# The learner may use 2 threads (DDRL_LEARNER_THREADS=2), i.e. the env runner's mostly idle
# core, as SB3 uses torch's 2 threads: ddrl-sac-2t, ddrl-td3-2t as torch's kernel threads,
# dropped to one while the env runner samples (DDRL_LEARNER_THREAD_MODE=kernels, the
# default); ddrl-sac-2p, ddrl-td3-2p as two minibatch halves on two Python threads (=parts).
THREAD_VARIANTS = {"-2t": ("2", "kernels"), "-2p": ("2", "parts")}
ALGOS = [*PPO_LAYOUTS, "sb3-ppo", "ddrl-sac", "ddrl-sac-2t", "ddrl-sac-2p", "sb3-sac",
         "ddrl-td3", "ddrl-td3-2t", "ddrl-td3-2p", "sb3-td3"]  # the default
# The same layouts with RLlib's stock PPO learner (hyperparameter lean_learner: false).
STOCK_SUFFIX = "-stock"
PPO_LAYOUTS.update({f"{name}{STOCK_SUFFIX}": layout for name, layout in list(PPO_LAYOUTS.items())})
PAIRS = [*((name, "sb3-ppo") for name in PPO_LAYOUTS),
         *((f"ddrl-{kind}{variant}", f"sb3-{kind}") for kind in ("sac", "td3")
           for variant in ("", *THREAD_VARIANTS))]


def _ddrl_spec(name: str, args):
    from harness.sampling import run_spec

    if name in PPO_LAYOUTS:
        runners, envs = PPO_LAYOUTS[name]
        hp = {"train_batch_size": args.ppo_batch, "minibatch_size": args.ppo_minibatch,
              "num_epochs": args.ppo_epochs, "fcnet_hiddens": HIDDENS_PPO,
              "fcnet_activation": "tanh", "lean_learner": not name.endswith(STOCK_SUFFIX)}
        return run_spec("PPO", args.env, args.seed, hp,
                        {"num_env_runners": runners, "num_envs_per_env_runner": envs})
    common = {"train_batch_size": BATCH, "updates_per_step": 1.0,
              "num_steps_sampled_before_learning_starts": args.learning_starts}
    if name.startswith("ddrl-sac"):
        return run_spec("SAC", args.env, args.seed, {**common, "fcnet_hiddens": HIDDENS_OFFPOLICY})
    return run_spec("TD3", args.env, args.seed, {**common, "actor_hiddens": HIDDENS_OFFPOLICY,
                                                 "critic_hiddens": HIDDENS_OFFPOLICY})


def time_ddrl(name: str, args) -> dict:
    from harness.throughput import time_training

    from ddrl.training.runtime import LEARNER_THREAD_MODE_ENV, LEARNER_THREADS_ENV

    spec = _ddrl_spec(name, args)
    if spec.algorithm == "PPO":
        warmup, timed = args.ppo_batch, args.ppo_batch * args.ppo_iters
    else:
        warmup, timed = args.learning_starts + BATCH, args.steps
    names = (LEARNER_THREADS_ENV, LEARNER_THREAD_MODE_ENV)
    before = {k: os.environ.get(k) for k in names}
    variant = THREAD_VARIANTS.get(name[-3:])
    if variant:
        os.environ.update(zip(names, variant))
    try:
        return {"algo": name, **time_training(spec, warmup, timed)}
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def time_sb3(name: str, args) -> dict:
    import gymnasium as gym
    import numpy as np
    import pybullet_envs_gymnasium  # noqa: F401  (registers the Bullet envs)
    import stable_baselines3 as sb3
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    kind = name.split("-")[1]
    if kind == "ppo":
        warmup, total = args.ppo_batch, args.ppo_batch * (args.ppo_iters + 1)
    else:
        warmup = args.learning_starts + BATCH
        total = warmup + args.steps

    class Clock(BaseCallback):
        """Starts the clock at the first env step after the warm-up."""

        def __init__(self) -> None:
            super().__init__()
            self.t0, self.n0 = None, 0

        def _on_step(self) -> bool:
            if self.t0 is None and self.num_timesteps > warmup:
                self.t0, self.n0 = time.perf_counter(), self.num_timesteps - 1
            return True

    env = gym.make(args.env)
    if kind == "ppo":
        model = sb3.PPO("MlpPolicy", env, n_steps=args.ppo_batch, batch_size=args.ppo_minibatch,
                        n_epochs=args.ppo_epochs, seed=args.seed, device="cpu", verbose=0,
                        policy_kwargs={"net_arch": {"pi": HIDDENS_PPO, "vf": HIDDENS_PPO},
                                       "activation_fn": torch.nn.Tanh})
    else:
        extra = {}
        if kind == "td3":
            n_act = env.action_space.shape[0]
            extra["action_noise"] = NormalActionNoise(np.zeros(n_act), 0.1 * np.ones(n_act))
        model = getattr(sb3, kind.upper())(
            "MlpPolicy", env, learning_starts=args.learning_starts, batch_size=BATCH,
            train_freq=1, gradient_steps=1, buffer_size=1_000_000, seed=args.seed, verbose=0,
            policy_kwargs={"net_arch": HIDDENS_OFFPOLICY}, device="cpu", **extra)
    clock = Clock()
    model.learn(total_timesteps=total, callback=clock)
    elapsed = time.perf_counter() - clock.t0
    n = model.num_timesteps - clock.n0
    env.close()
    return {"algo": name, "env_steps": n, "seconds": elapsed, "steps_per_s": n / elapsed,
            "torch_threads": torch.get_num_threads()}


def summarize(rows: list[dict], algos: list[str]) -> tuple[dict, dict]:
    median = {n: statistics.median(r["steps_per_s"] for r in rows if r["algo"] == n)
              for n in algos if any(r["algo"] == n for r in rows)}
    ratios = {f"{a}/{b}": median[a] / median[b] for a, b in PAIRS if a in median and b in median}
    return median, ratios


def main(argv: list[str] | None = None) -> int:
    from harness.throughput import report_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="HumanoidBulletEnv-v0")
    p.add_argument("--algos", nargs="+", default=ALGOS, choices=[*ALGOS, *PPO_LAYOUTS])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=1500, help="timed env steps (SAC, TD3)")
    p.add_argument("--learning-starts", type=int, default=1000)
    p.add_argument("--ppo-batch", type=int, default=4096)
    p.add_argument("--ppo-minibatch", type=int, default=128)
    p.add_argument("--ppo-epochs", type=int, default=10)
    p.add_argument("--ppo-iters", type=int, default=3, help="timed PPO iterations")
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    rows = []
    for r in range(args.rounds):
        for name in args.algos:
            row = time_sb3(name, args) if name.startswith("sb3-") else time_ddrl(name, args)
            row["round"] = r
            rows.append(row)
            print(f"round {r} {name:12s} {row['steps_per_s']:8.1f} env steps/s "
                  f"({row['env_steps']} steps in {row['seconds']:.1f} s)", flush=True)
    median, ratios = summarize(rows, args.algos)
    print(f"\n{args.env}, {os.cpu_count()} CPUs; median env steps/s over {args.rounds} round(s):")
    for n, v in median.items():
        print(f"  {n:12s} {v:8.1f}")
    for pair, v in ratios.items():
        print(f"ratio {pair} = {v:.2f}")
    out = {"args": vars(args), "rows": rows, "median": median, "ratios": ratios}
    report_json(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
