"""Off-policy learner speed on a GPU: SAC and TD3 updates per second, eager vs CUDA graphs.

The prepared script for a GPU machine (issue #18). It builds ddrl's SAC and TD3 learners
through the registry (HumanoidBulletEnv-v0's spaces: 44 observations, 17 actions; [256, 256]
networks, batch 256: the settings of bench/peers.py), fills the learner's device replay
buffer with ``--buffer`` random transitions, and times ``update_from_device_buffer``: one
gradient update per call of the step, minibatches sampled on the device, each step eager or
replayed from a captured CUDA graph (``learner_graph_capture``). Prints updates/s per
(algorithm, mode) and, for scale, LeanRL's published H100 figures (SAC 725, TD3 936 env
steps/s at one update per env step, env stepping included; these figures exclude the env,
so they are an upper bound for training throughput).

Runs on CPU too (``--device cpu``: eager only), which is how the test suite smoke-tests it.

Usage::

    python bench/gpu_offpolicy.py                       # cuda if available, else cpu
    python bench/gpu_offpolicy.py --device cpu --updates 20 --buffer 2000 --json out.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

LEANRL_H100_ENV_STEPS_PER_S = {"SAC": 725, "TD3": 936}
OBS_DIM, ACT_DIM, HIDDENS, BATCH = 44, 17, [256, 256], 256


def build_learner(algo: str, device: str, capture: bool, hiddens: list[int], batch: int):
    import gymnasium as gym
    import numpy as np
    from harness.sampling import run_spec

    from ddrl.algorithms import get_algorithm

    hp = {"train_batch_size": batch}
    hp.update({"fcnet_hiddens": hiddens} if algo == "SAC"
              else {"actor_hiddens": hiddens, "critic_hiddens": hiddens})
    spec = run_spec(algo, "HumanoidBulletEnv-v0", 0, hp)
    obs = gym.spaces.Box(-10.0, 10.0, (OBS_DIM,), np.float32)
    act = gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)
    config = (get_algorithm(algo).build(spec)
              .environment(env=None, observation_space=obs, action_space=act)
              .learners(num_learners=0, num_gpus_per_learner=1 if device == "cuda" else 0)
              .training(replay_on_learner=True, learner_graph_capture=capture))
    return config.build_learner(spaces={"default_policy": (obs, act)})


def random_transitions(n: int, seed: int = 0) -> dict:
    import numpy as np

    g = np.random.default_rng(seed)
    return {"obs": g.normal(size=(n, OBS_DIM)).astype(np.float32),
            "actions": g.uniform(-1, 1, (n, ACT_DIM)).astype(np.float32),
            "rewards": g.normal(size=n).astype(np.float32),
            "next_obs": g.normal(size=(n, OBS_DIM)).astype(np.float32),
            "terminateds": g.random(n) < 0.01, "truncateds": np.zeros(n, bool)}


def time_updates(learner, updates: int, batch: int, repeats: int) -> list[float]:
    import torch

    empty = {k: v[:0] for k, v in random_transitions(1).items()}
    learner.update_from_device_buffer(empty, 10, batch)  # warm-up (and graph capture)
    rates = []
    for _ in range(repeats):
        if learner._device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        learner.update_from_device_buffer(empty, updates, batch)  # ends with a host sync
        rates.append(updates / (time.perf_counter() - t0))
    return rates


def main(argv: list[str] | None = None) -> int:
    import torch
    from harness.throughput import report_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu"],
                   default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--algos", nargs="+", default=["SAC", "TD3"], choices=["SAC", "TD3"])
    p.add_argument("--updates", type=int, default=2000, help="timed updates per repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--buffer", type=int, default=100_000, help="random transitions stored")
    p.add_argument("--batch", type=int, default=BATCH)
    p.add_argument("--hiddens", type=int, nargs="+", default=HIDDENS)
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device")
    modes = [False, True] if args.device == "cuda" else [False]

    rows = []
    for algo in args.algos:
        for capture in modes:
            mode = "cuda-graph" if capture else "eager"
            try:
                learner = build_learner(algo, args.device, capture, args.hiddens, args.batch)
                learner.update_from_device_buffer(random_transitions(args.buffer), 0, args.batch)
                rates = time_updates(learner, args.updates, args.batch, args.repeats)
            except Exception as err:  # e.g. a capture that fails: still measure the others
                rows.append({"algo": algo, "mode": mode, "error": f"{type(err).__name__}: {err}"})
                print(f"{algo} {mode:10s}: failed: {rows[-1]['error']}", flush=True)
                continue
            row = {"algo": algo, "device": str(learner._device), "mode": mode,
                   "updates_per_s": statistics.median(rates), "rounds": rates,
                   "graphs": learner._captured_steps.num_graphs,
                   "leanrl_h100_env_steps_per_s": LEANRL_H100_ENV_STEPS_PER_S[algo]}
            rows.append(row)
            print(f"{algo} {row['mode']:10s} on {row['device']}: "
                  f"{row['updates_per_s']:8.1f} updates/s (LeanRL H100: "
                  f"{row['leanrl_h100_env_steps_per_s']} env steps/s)", flush=True)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else None
    report_json({"args": vars(args), "gpu": gpu, "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
