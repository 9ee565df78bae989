"""Helpers for the fault tests: a tiny CartPole PPO run, one shared in-process Ray, and
training in a subprocess that can be SIGKILLed.

Not a conftest.py: tests/conftest.py is imported as ``conftest`` by other tests, and a second
conftest module (no __init__.py here) would take that name. Test modules import the fixtures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import importlib.util

import psutil
import pytest

from ddrl.study.study import Study
from ddrl.runs import RunSpec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # faulty_envs, also for the env runners (PYTHONPATH below)

BATCH = 200  # env steps per PPO iteration


def _root_conftest():
    spec = importlib.util.spec_from_file_location("ddrl_tests_root_conftest",
                                                  HERE.parent / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_snakemake = _root_conftest().run_snakemake
write_yaml = _root_conftest().write_yaml


def tiny_config(**overrides: Any) -> dict[str, Any]:
    """A study with one tiny PPO run on CartPole: ~0.3 s an iteration."""
    exp = {"algorithms": ["PPO"], "envs": ["CartPole-v1"], "seeds": [1],
           "budget": {"env_steps": BATCH * 10}}
    exp.update(overrides.pop("experiment", {}))
    return {
        "study": "faults",
        "checkpoint_every": 1,
        "hyperparameters": {"PPO": {"train_batch_size": BATCH, "minibatch_size": 100,
                                    "num_epochs": 1, "fcnet_hiddens": [16]}},
        "experiments": [exp],
        **overrides,
    }


def tiny_spec(**overrides: Any) -> RunSpec:
    return next(iter(Study.from_config(tiny_config(**overrides))))


def pythonpath() -> str:
    return os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)


def start_training(spec: RunSpec, run_dir: Path, env: dict | None = None) -> subprocess.Popen:
    """``ddrl train --spec`` in its own process group; output in run_dir/../train.log."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    spec_file = run_dir.parent / f"{spec.run_id}.spec.json"
    spec_file.write_text(json.dumps(spec.to_dict()))
    log = open(run_dir.parent / "train.log", "ab")
    return subprocess.Popen(
        [sys.executable, "-m", "ddrl.cli", "train", "--spec", str(spec_file), "--out", str(run_dir)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "PYTHONPATH": pythonpath(), **(env or {})},
    )


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL a process and everything it started (Ray's raylet, GCS and workers)."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for p in family:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)
    psutil.wait_procs(family, timeout=30)


def wait_for(predicate, timeout: float, proc: subprocess.Popen | None = None, what: str = ""):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited ({proc.returncode}) before {what}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture(scope="module")
def ray_cluster():
    """One private, loopback Ray for all in-process training of a module (saves ~10 s a run).

    ``ray_session`` reuses it. PYTHONPATH is set first so env runners can import faulty_envs.
    """
    import ray

    from ddrl.training.runtime import ray_session

    os.environ["PYTHONPATH"] = pythonpath()
    with ray_session(num_cpus=2):
        yield ray
    assert not ray.is_initialized()


@pytest.fixture(autouse=True)
def _no_ray_left_running(request):
    """As in tests/conftest.py, except for tests sharing the module's ``ray_cluster``."""
    yield
    if "ray_cluster" not in request.fixturenames and "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()
