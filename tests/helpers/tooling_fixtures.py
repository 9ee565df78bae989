"""One tiny trained PPO run (3 iterations of 200 env steps, every checkpoint kept, an
eval_curve.csv, TensorBoard + MLflow (sqlite) + W&B (offline) tracking), shared by the tests of render/export/ONNX/status/tracking. Import the
fixture into a test module with ``from helpers.tooling_fixtures import tiny_run  # noqa: F401``."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

TINY_RUN_CONFIG = {
    "study": "tiny1",
    "checkpoint_every": 1,
    "evaluation": {"episodes": 2, "intermediate": True},
    "render": {"width": 64, "height": 48, "fps": 10, "frame_skip": 3, "max_steps": 20,
               "strip_frames": 2},
    "hyperparameters": {"PPO": {"train_batch_size": 200, "minibatch_size": 100,
                                "num_epochs": 1, "fcnet_hiddens": [16, 16],
                                "observation_filter": "MeanStdFilter"}},
    "experiments": [{"algorithms": ["PPO"], "envs": ["InvertedPendulumBulletEnv-v0"],
                     "seeds": [1], "resources": [{"num_env_runners": 1}],
                     "budget": {"env_steps": 600}}],
}


@dataclass
class TinyRun:
    root: Path       # the work directory (results/ is below it)
    config: Path
    spec: object     # RunSpec
    run_dir: Path


def ddrl_cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m ddrl ARGS`` in ``cwd``; the finished process."""
    return subprocess.run([sys.executable, "-m", "ddrl", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "offline"})


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> TinyRun:
    from ddrl.agents.evaluate import write_curve
    from ddrl.study.study import Study

    root = tmp_path_factory.mktemp("tiny_run")
    config = root / "tiny1.yaml"
    # Every tracking sink on, all local: an sqlite MLflow store, W&B offline.
    tracking = {"mlflow": {"enabled": True, "tracking_uri": f"sqlite:///{root}/mlflow.db"},
                "wandb": {"enabled": True, "mode": "offline"}}
    config.write_text(yaml.safe_dump({**TINY_RUN_CONFIG, "tracking": tracking}, sort_keys=False))
    study = Study.from_file(config, results_dir=root / "results")
    (run_id, spec), = study.runs.items()
    proc = ddrl_cli("train", "--config", str(config), "--run-id", run_id,
                    "--results", str(root / "results"), cwd=root)
    assert proc.returncode == 0, proc.stderr[-4000:]
    run_dir = study.run_dir(run_id)
    write_curve(spec, run_dir, run_dir / "eval_curve.csv", 2)
    return TinyRun(root, config, spec, run_dir)
