"""Update time of ddrl's SAC and TD3 learners alone (no env, no Ray), side by side by threads.

Builds each learner for the humanoid's shapes (44 observations, 17 actions), [256, 256]
networks, and times ``update_from_transitions`` on ``--updates`` minibatches of ``--batch``
random transitions per call. Each ``--threads`` value is one learner (``learner_num_threads``),
and each count of 2 or more one learner per ``--modes`` value (``learner_thread_mode``:
``kernels``, torch's threads share each op; ``parts``, the gradients on that many parts of the
minibatch, one Python thread each). The learners alternate within each of ``--rounds`` rounds
so machine noise hits them alike. Prints ms per update per round, then the medians and the
speedup over the first thread count.

Usage::

    PYTHONPATH=src .venv/bin/python bench/investigations/learner_update.py                 # SAC and TD3, 1 vs 2
    PYTHONPATH=src .venv/bin/python bench/investigations/learner_update.py --algos SAC --threads 1 2 --rounds 9
    PYTHONPATH=src .venv/bin/python bench/investigations/learner_update.py --modes parts
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# Run from bench/investigations/: harness/ and the maintained benchmarks live one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OBS_DIM, ACT_DIM, HIDDENS = 44, 17, [256, 256]


def build_learner(algo: str, threads: int, batch: int, mode: str = "kernels"):
    import gymnasium as gym
    import numpy as np

    from ddrl.algorithms.sac.sac import FastSACConfig
    from ddrl.algorithms.td3.td3 import TD3Config

    spaces = (gym.spaces.Box(-5.0, 5.0, (OBS_DIM,), np.float32),
              gym.spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32))
    common = {"num_steps_sampled_before_learning_starts": 0, "train_batch_size": batch,
              "learner_num_threads": threads, "learner_thread_mode": mode}
    if algo == "SAC":
        config = (FastSACConfig().training(**common)
                  .rl_module(model_config={"fcnet_hiddens": HIDDENS, "fcnet_activation": "relu"}))
    elif algo == "TD3":
        config = TD3Config().training(actor_hiddens=HIDDENS, critic_hiddens=HIDDENS, **common)
    else:
        raise ValueError(f"--algos: expected SAC or TD3, got {algo!r}")
    config = config.environment(observation_space=spaces[0], action_space=spaces[1])
    return config.build_learner(spaces={"default_policy": spaces})


def random_transitions(n: int, seed: int = 0) -> dict:
    import numpy as np

    g = np.random.default_rng(seed)
    return {"obs": g.normal(size=(n, OBS_DIM)).astype(np.float32),
            "actions": g.uniform(-1, 1, size=(n, ACT_DIM)).astype(np.float32),
            "rewards": g.normal(size=n).astype(np.float32),
            "next_obs": g.normal(size=(n, OBS_DIM)).astype(np.float32),
            "terminateds": np.arange(n) % 50 == 49,
            "truncateds": np.zeros(n, bool)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algos", nargs="+", default=["SAC", "TD3"], choices=["SAC", "TD3"])
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--modes", nargs="+", default=["kernels", "parts"], choices=["kernels", "parts"],
                   help="how 2+ threads are used (learner_thread_mode)")
    p.add_argument("--updates", type=int, default=64, help="updates per learner call")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", help="also write the measurements to this file")
    args = p.parse_args(argv)
    if any(t < 1 for t in args.threads):
        p.error(f"--threads must be >= 1, got {args.threads}")

    import torch
    from harness.throughput import report_json

    data = random_transitions(args.updates * args.batch)
    variants = [(t, m) for t in args.threads for m in (args.modes if t > 1 else ["kernels"])]
    learners, torch_threads = {}, {}
    for algo in args.algos:
        for threads, mode in variants:
            name = f"{algo}-{threads}t" + (f"-{mode}" if threads > 1 else "")
            learners[name] = build_learner(algo, threads, args.batch, mode)
            torch_threads[name] = torch.get_num_threads()  # what its build set (per process)
    for learner in learners.values():  # warm-up: optimiser state, allocator
        learner.update_from_transitions(data, min(4, args.updates), args.batch)
    times: dict = {name: [] for name in learners}
    for r in range(args.rounds):
        for name, learner in learners.items():
            torch.set_num_threads(torch_threads[name])
            start = time.perf_counter()
            learner.update_from_transitions(data, args.updates, args.batch)
            ms = (time.perf_counter() - start) / args.updates * 1e3
            times[name].append(ms)
            print(f"round {r} {name}: {ms:.2f} ms/update", flush=True)
    summary = {}
    for algo in args.algos:
        names = [n for n in learners if n.startswith(f"{algo}-")]
        base = statistics.median(times[names[0]])
        for name in names:
            median = statistics.median(times[name])
            summary[name] = {"ms_per_update": round(median, 3), "speedup": round(base / median, 3)}
            print(f"{name}: median {median:.2f} ms/update, {base / median:.2f}x of {names[0]}")
    report_json({"args": vars(args), "median": summary, "times_ms": times}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
