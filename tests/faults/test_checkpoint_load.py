"""Loading a run's checkpoint from a relative path, as the README shows.

RLlib 2.60's ``Algorithm.from_checkpoint`` hands the path to pyarrow, which refuses relative
paths; ``ddrl.training.checkpoints.load_algorithm`` resolves it and picks the newest complete
checkpoint. Checked on a real tiny PPO run (2 iterations, ~10 s on the shared loopback Ray).
"""

from __future__ import annotations

import pytest

from fault_helpers import BATCH, tiny_spec
from fault_helpers import _no_ray_left_running, ray_cluster  # noqa: F401 (fixtures)
from ddrl.training import checkpoints
from ddrl.errors import CheckpointError
from ddrl.training.train import train_run


@pytest.fixture(scope="module")
def trained(ray_cluster, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("load")
    spec = tiny_spec(experiment={"budget": {"env_steps": 2 * BATCH}})
    run_dir = root / "results" / "faults" / "runs" / spec.run_id
    train_run(spec, run_dir, print_fn=lambda line: None, keep_checkpoints=0)
    return root, spec, run_dir


def test_rllib_refuses_a_relative_path(trained, monkeypatch):
    """Why the helper exists (if RLlib fixes this, the README can say Algorithm again)."""
    from ray.rllib.algorithms.algorithm import Algorithm

    root, spec, _ = trained
    monkeypatch.chdir(root)
    with pytest.raises(Exception, match="empty scheme"):
        Algorithm.from_checkpoint(f"results/faults/runs/{spec.run_id}/checkpoint")


def test_load_algorithm_takes_a_relative_path(trained, monkeypatch):
    """One load (each restores env runners: ~15 s); the path choices are tested below."""
    import numpy as np

    root, spec, run_dir = trained
    monkeypatch.chdir(root)
    algo = checkpoints.load_algorithm(f"results/faults/runs/{spec.run_id}")
    try:
        assert algo.iteration == 2
        action = algo.get_module().forward_inference  # the restored RLModule is there
        assert callable(action)
        assert np.isclose(algo.config.lr, 3e-4)  # the run's config came back with it
    finally:
        algo.stop()


def test_resolve_picks_the_newest_complete_checkpoint(trained, monkeypatch, tmp_path):
    import shutil

    root, spec, run_dir = trained
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    monkeypatch.chdir(tmp_path)
    assert checkpoints.resolve("run") == (copy / "checkpoint",
                                          checkpoints.read_manifest(copy / "checkpoint"))
    assert checkpoints.resolve("run/work/checkpoints")[0] == \
        copy / "work" / "checkpoints" / "iter_000002"
    assert checkpoints.resolve("run/work/checkpoints/iter_000001")[1]["iteration"] == 1
    # A truncated final checkpoint and a truncated newest iter_N: the run folder falls back
    # to the newest complete one.
    for ckpt in (copy / "checkpoint", copy / "work" / "checkpoints" / "iter_000002"):
        victim = max((p for p in ckpt.rglob("*") if p.is_file() and p.stat().st_size > 100),
                     key=lambda p: p.stat().st_size)
        victim.write_bytes(victim.read_bytes()[:50])
    path, manifest = checkpoints.resolve("run")
    assert path == copy / "work" / "checkpoints" / "iter_000001" and manifest["iteration"] == 1
    with pytest.raises(CheckpointError, match="is corrupt"):
        checkpoints.resolve("run/checkpoint")  # named explicitly: no silent substitute
    with pytest.raises(CheckpointError, match="no complete checkpoint at .*nowhere"):
        checkpoints.resolve("nowhere")
