"""PPO learns a quick task: the return must clearly rise to a stated threshold."""

from __future__ import annotations

import pandas as pd
import pytest

from ddrl.study.study import Study
from ddrl.training.train import train_run

THRESHOLD = 700.0  # InvertedPendulumBulletEnv-v0: 1000 is the maximum, random play ~25
BUDGET = 70_000


@pytest.mark.slow
def test_ppo_learns_inverted_pendulum(tmp_path):
    study = Study.from_config({
        "study": "learning",
        "experiments": [{
            "algorithms": ["PPO"],
            "envs": ["InvertedPendulumBulletEnv-v0"],
            "seeds": [1],
            "budget": {"env_steps": BUDGET},
            "checkpoint_every": 50,
            "hyperparameters": {"PPO": {
                "train_batch_size": 2000, "minibatch_size": 128, "num_epochs": 10,
                "lr": 0.0003, "lambda_": 0.95, "vf_clip_param": 10000.0,
                "fcnet_hiddens": [64, 64]}},
        }],
    })
    spec = next(iter(study.runs.values()))
    record = train_run(spec, tmp_path / spec.run_id, print_fn=lambda line: None)
    progress = pd.read_csv(tmp_path / spec.run_id / "progress.csv")
    first, best = progress["episode_return_mean"].iloc[0], progress["episode_return_mean"].max()
    print(f"PPO InvertedPendulum: first {first:.1f}, best {best:.1f} "
          f"at {progress.loc[progress['episode_return_mean'].idxmax(), 'env_steps']} env steps")
    assert first < 100
    assert best >= THRESHOLD
    assert record["result"]["env_steps"] >= BUDGET
