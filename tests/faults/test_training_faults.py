"""Training faults: a SIGKILLed job, a corrupt checkpoint, crashing env runners, a full disk.

One tiny CartPole PPO run (200 env steps an iteration) is killed once, in a subprocess, at a
random point after its second checkpoint; its folder is copied for each test that resumes it.
Resumed and fault-injected training runs in-process on one shared loopback Ray.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

import faulty_envs
from fault_helpers import BATCH, kill_tree, start_training, tiny_spec, wait_for
from fault_helpers import _no_ray_left_running, ray_cluster  # noqa: F401 (fixtures)
from ddrl.training import checkpoints
from ddrl.errors import CheckpointError
from ddrl.training.faults import EnvRunnerFailure
from ddrl.training.train import train_run

ITERATIONS = 10
SECRET = "s3cr3t-value-that-must-not-leak"
SECRET_ENV = {"AWS_SECRET_ACCESS_KEY": SECRET, "DDRL_API_TOKEN": SECRET, "RAY_PASSWORD": SECRET}


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    """A run SIGKILLed (with its whole process tree) after >= 2 checkpoints, mid-training."""
    spec = tiny_spec()
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    run_dir = tmp_path_factory.mktemp("killed") / "run"
    proc = start_training(spec, run_dir, env=SECRET_ENV)
    ckpts = run_dir / "work" / "checkpoints"
    try:
        wait_for(lambda: len(checkpoints.listed(ckpts)) >= 2, 240, proc, "the second checkpoint")
        time.sleep(rng.uniform(0.0, 0.6))  # a random point of the next iterations
        assert proc.poll() is None, "training finished before it could be killed"
    finally:
        kill_tree(proc)
    log = (run_dir.parent / "train.log").read_text()
    return {"spec": spec, "dir": run_dir, "seed": seed, "log": log}


def _copy(run: dict, tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(run["dir"], target, symlinks=True)
    return target


def _assert_whole_run(run_dir: Path, spec) -> pd.DataFrame:
    progress = pd.read_csv(run_dir / "progress.csv")
    assert progress["iteration"].tolist() == list(range(1, ITERATIONS + 1)), "gap or duplicate"
    assert progress["env_steps"].tolist() == [BATCH * i for i in range(1, ITERATIONS + 1)]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["result"]["iterations"] == ITERATIONS
    assert record["result"]["env_steps"] == BATCH * ITERATIONS
    assert checkpoints.read_manifest(run_dir / "checkpoint")["iteration"] == ITERATIONS
    return progress


def test_killed_training_leaves_no_final_outputs(killed_run):
    run_dir = killed_run["dir"]
    for name in ("progress.csv", "run.json", "checkpoint"):
        assert not (run_dir / name).exists(), f"{name} exists although training did not finish"
    # What the killed job left is whole: live progress parses, every checkpoint dir named
    # iter_N passes its manifest check (a half-written one would still be .iter_N.tmp).
    live = pd.read_csv(run_dir / "work" / "progress.csv")
    assert live["iteration"].tolist() == list(range(1, len(live) + 1))
    saved = checkpoints.listed(run_dir / "work" / "checkpoints")
    assert len(saved) >= 2
    for path in saved:
        checkpoints.read_manifest(path)
    assert len(live) < ITERATIONS


def test_rerun_resumes_from_newest_checkpoint(killed_run, ray_cluster, tmp_path, monkeypatch):
    # Both attempts run with secret-looking variables set: none may reach run.json or a log.
    for key, value in SECRET_ENV.items():
        monkeypatch.setenv(key, value)
    run_dir = _copy(killed_run, tmp_path)
    newest, manifest = checkpoints.latest_valid(run_dir / "work" / "checkpoints")
    k = manifest["iteration"]
    assert manifest["env_steps"] == BATCH * k
    lines: list[str] = []
    record = train_run(killed_run["spec"], run_dir, print_fn=lines.append)

    assert lines[0].endswith(f"resuming from {newest.name} (iteration {k}, {BATCH * k} env steps)")
    # The first new iteration is k+1 and its env steps continue from the checkpoint's.
    assert f"iter={k + 1} env_steps={BATCH * (k + 1)}/" in lines[1], (killed_run["seed"], lines)
    progress = _assert_whole_run(run_dir, killed_run["spec"])
    assert progress["session"].tolist() == [0] * k + [1] * (ITERATIONS - k)
    assert record["sessions"] == 2
    text = (run_dir / "run.json").read_text()
    assert json.loads(text)["sessions"] == 2
    assert SECRET not in text and SECRET not in killed_run["log"] and SECRET not in "\n".join(lines)
    for key in SECRET_ENV:
        assert record["environment"][key] == "<redacted>"


def test_resume_skips_a_corrupt_newest_checkpoint(killed_run, ray_cluster, tmp_path, caplog):
    run_dir = _copy(killed_run, tmp_path)
    saved = checkpoints.listed(run_dir / "work" / "checkpoints")
    newest, previous = saved[-1], saved[-2]
    # Truncate the biggest file of the newest checkpoint (a disk filled mid-copy, say).
    victim = max((p for p in newest.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    k = checkpoints.read_manifest(previous)["iteration"]

    lines: list[str] = []
    with caplog.at_level(logging.WARNING, logger="ddrl.training.checkpoints"):
        train_run(killed_run["spec"], run_dir, print_fn=lines.append)
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert f"{newest} is corrupt" in warning and "falling back" in warning
    assert f"resuming from {previous.name} (iteration {k}," in lines[0]
    progress = _assert_whole_run(run_dir, killed_run["spec"])
    assert progress["session"].tolist() == [0] * k + [1] * (ITERATIONS - k)


def test_crashed_env_runner_is_restarted_and_counted(ray_cluster, tmp_path):
    """An env runner process SIGKILLs itself once (a segfaulting simulator)."""
    faults = faulty_envs.make_tokens(tmp_path / "faults", 1)
    spec = tiny_spec(
        fault_tolerance={"max_env_runner_restarts": 2, "restart_delay_s": 0},
        experiment={"envs": [f"faulty_envs:{faulty_envs.ENV_ID}"], "budget": {"env_steps": 3 * BATCH},
                    "env_config": {"fault_dir": str(faults), "fail_at": 5, "mode": "kill"}},
    )
    train_run(spec, tmp_path / "run", print_fn=lambda line: None)
    assert faulty_envs.claimed(faults) == 1
    progress = pd.read_csv(tmp_path / "run" / "progress.csv")
    assert progress["env_runner_restarts"].iloc[-1] == 1
    assert progress["env_steps"].iloc[-1] >= 3 * BATCH
    assert progress["healthy_env_runners"].iloc[-1] == 1


def test_env_runner_failing_past_the_limit_fails_the_run(ray_cluster, tmp_path):
    """With no restarts allowed, an env that raises ends the run, naming env and error."""
    faults = faulty_envs.make_tokens(tmp_path / "faults", 1)
    env = f"faulty_envs:{faulty_envs.ENV_ID}"
    spec = tiny_spec(
        fault_tolerance={"max_env_runner_restarts": 0, "restart_delay_s": 0},
        experiment={"envs": [env], "env_config": {"fault_dir": str(faults), "fail_at": 5,
                                                  "mode": "raise"}},
    )
    start = time.monotonic()
    with pytest.raises(EnvRunnerFailure) as err:
        train_run(spec, tmp_path / "run", print_fn=lambda line: None)
    assert time.monotonic() - start < 120
    message = str(err.value)
    assert f"env {env}" in message and "max_env_runner_restarts=0" in message
    assert "FaultError: injected fault" in message
    assert not (tmp_path / "run" / "run.json").exists()


@pytest.fixture
def tiny_fs(tmp_path, killed_run):
    """A tmpfs with room for about 2.5 checkpoints of the tiny run, at work/checkpoints."""
    one = checkpoints.listed(killed_run["dir"] / "work" / "checkpoints")[0]
    size = sum(p.stat().st_blocks * 512 for p in one.rglob("*")) + 4096 * 8
    mount = tmp_path / "run" / "work" / "checkpoints"
    mount.mkdir(parents=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={int(size * 2.5)}", "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_fails_clearly_and_keeps_earlier_checkpoints(tiny_fs, ray_cluster, tmp_path):
    spec = tiny_spec()
    start = time.monotonic()
    with pytest.raises(CheckpointError) as err:
        train_run(spec, tmp_path / "run", print_fn=lambda line: None)
    assert time.monotonic() - start < 120, "no hang on a full disk"
    message = str(err.value)
    assert str(tiny_fs) in message and "disk full" in message, message
    survivors = checkpoints.listed(tiny_fs)
    assert len(survivors) >= 1
    for path in survivors:
        checkpoints.read_manifest(path)
    assert not [p for p in tiny_fs.iterdir() if p.name.endswith(".tmp")], "partial checkpoint left"
    assert not (tmp_path / "run" / "run.json").exists()
