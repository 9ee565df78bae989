"""PPO learner update time alone: ddrl's lean learner against RLlib's stock PPOTorchLearner.

Builds both learners for HumanoidBulletEnv-v0's spaces (44 observations, 17 actions; no env
is created), [64, 64] tanh networks, and times ``Learner.update`` on the same synthetic train
batch (``--batch`` rows plus one masked row per 20, as the learner connector leaves it), 10
epochs of minibatch 128 by default, 1 torch thread (as ddrl's CPU learner). Alternates the two
learners ``--rounds`` times and prints the median seconds per update and the speedup.
``--profile lean|stock`` prints a cProfile of one update instead.

Usage::

    .venv/bin/python bench/investigations/ppo_learner.py
    .venv/bin/python bench/investigations/ppo_learner.py --profile lean
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

OBS_DIM, ACT_DIM = 44, 17


def build(lean: bool, args):
    import gymnasium as gym
    import numpy as np
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    from ddrl.algorithms.ppo.learner import LeanPPOTorchLearner

    config = (PPOConfig().framework("torch")
              .environment(observation_space=gym.spaces.Box(-1, 1, (OBS_DIM,), np.float32),
                           action_space=gym.spaces.Box(-1, 1, (ACT_DIM,), np.float32))
              .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64],
                                                         fcnet_activation="tanh"))
              .learners(learner_class=LeanPPOTorchLearner if lean else PPOTorchLearner))
    return config.build_learner()


def train_batch(n: int):
    import numpy as np
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    rng = np.random.default_rng(0)
    f32 = np.float32
    mask = np.ones(n, dtype=bool)
    mask[::20] = False
    columns = {
        Columns.OBS: rng.normal(size=(n, OBS_DIM)).astype(f32),
        Columns.ACTIONS: rng.normal(size=(n, ACT_DIM)).astype(f32),
        Columns.ACTION_DIST_INPUTS: np.concatenate(
            [rng.normal(0, 0.3, (n, ACT_DIM)), np.zeros((n, ACT_DIM))], axis=1).astype(f32),
        Columns.ACTION_LOGP: rng.normal(-15.0, 1.0, n).astype(f32),
        Postprocessing.ADVANTAGES: rng.normal(size=n).astype(f32),
        Postprocessing.VALUE_TARGETS: rng.normal(1.0, 2.0, n).astype(f32),
        Columns.LOSS_MASK: mask,
    }
    return MultiAgentBatch({"default_policy": SampleBatch(columns)}, env_steps=int(mask.sum()))


def time_update(learner, batch, args) -> float:
    t0 = time.perf_counter()
    learner.update(batch=batch.copy(), timesteps={"num_env_steps_sampled_lifetime": 0},
                   num_epochs=args.epochs, minibatch_size=args.minibatch,
                   shuffle_batch_per_epoch=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--minibatch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--profile", choices=["lean", "stock"])
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    batch = train_batch(args.batch + args.batch // 20)
    learners = {"stock": build(False, args), "lean": build(True, args)}
    for learner in learners.values():
        time_update(learner, batch, args)  # warm-up
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(time_update, learners[args.profile], batch, args)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return 0
    times = {name: [] for name in learners}
    for _ in range(args.rounds):
        for name, learner in learners.items():
            times[name].append(time_update(learner, batch, args))
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, t in median.items():
        print(f"{name:6s} {t:6.3f} s per update ({', '.join(f'{x:.3f}' for x in times[name])})")
    print(f"speedup lean/stock = {median['stock'] / median['lean']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
