"""The built image, run the way each platform runs it (docker run, real HTTP, real S3 API).

The image is built once, outside the tests (`make image`, which .ci/run calls); the tests
find it by tag: $DDRL_TEST_IMAGE, default ddrl:test. Without a Docker daemon or without the
image they are skipped with the reason, unless DDRL_TEST_REQUIRE_IMAGE=1 (CI sets it), which
turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

# The moto server on loopback of the AWS tests (the Batch test's bucket).
from aws.conftest import aws, moto_server, session  # noqa: F401  (fixtures)
from aws.aws_helpers import FAKE_ENV, tiny_spec

IMAGE_ENV = "DDRL_TEST_IMAGE"
DEFAULT_IMAGE = "ddrl:test"
# Apptainer's way: nothing in the image is writable; /tmp and the bound folders are.
READ_ONLY = ["--read-only", "--tmpfs", "/tmp:rw,exec,size=2g"]


def _unavailable(reason: str):
    if os.environ.get("DDRL_TEST_REQUIRE_IMAGE") == "1":
        pytest.fail(f"container tests required (DDRL_TEST_REQUIRE_IMAGE=1), but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def image() -> str:
    """The image's tag, once it is known that a daemon answers and the image exists."""
    tag = os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
    if shutil.which("docker") is None:
        _unavailable("no docker client on PATH")
    info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                          capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        _unavailable(f"no Docker daemon answers ({info.stderr.strip()[:200]})")
    found = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, text=True,
                           timeout=60)
    if found.returncode != 0:
        _unavailable(f"image {tag} is not built (run `make image`, or set {IMAGE_ENV})")
    return tag


def docker_run(image: str, *command: str, mounts: dict[Path, str] = {}, env: dict[str, str] = {},
               read_only: bool = False, network: str | None = None, timeout: float = 600,
               extra: list[str] = []) -> tuple[subprocess.CompletedProcess, float]:
    """``docker run --rm`` to completion; returns the process and its wall time in seconds."""
    name = f"ddrl-test-{uuid.uuid4().hex[:10]}"
    args = ["docker", "run", "--rm", "--name", name, "--shm-size", "512m"]
    if read_only:
        args += READ_ONLY
    if network:
        args += ["--network", network]
    for host, target in mounts.items():
        args += ["-v", f"{host}:{target}"]
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    args += [*extra, image, *command]
    start = time.monotonic()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        raise
    return proc, time.monotonic() - start


def opt_ml(root: Path, hyperparameters: dict) -> Path:
    """An /opt/ml as SageMaker prepares it before ``<image> train``: the three contract files
    under input/config (a training job without input channels), empty model/output dirs."""
    config = root / "input" / "config"
    config.mkdir(parents=True)
    (config / "hyperparameters.json").write_text(json.dumps(hyperparameters))
    (config / "resourceconfig.json").write_text(json.dumps({
        "current_host": "algo-1", "current_instance_type": "ml.c5.xlarge",
        "current_group_name": "homogeneousCluster", "hosts": ["algo-1"],
        "instance_groups": [{"instance_group_name": "homogeneousCluster",
                             "instance_type": "ml.c5.xlarge", "hosts": ["algo-1"]}],
        "network_interface_name": "eth0"}))
    (config / "inputdataconfig.json").write_text("{}")
    for sub in ("model", "output", "checkpoints", "input/data"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def trained(image, tmp_path_factory):
    """``<image> train`` on the tiny PPO run, read-only as Apptainer runs it, with the /opt/ml
    folder mounted as SageMaker mounts it. Returns ``(root, process, seconds, spec)``."""
    from ddrl.aws.sagemaker import hyperparameters

    spec = tiny_spec()
    root = opt_ml(tmp_path_factory.mktemp("opt_ml"), hyperparameters(spec))
    proc, seconds = docker_run(image, "train", mounts={root: "/opt/ml"}, read_only=True,
                               env=FAKE_ENV, timeout=900)
    (root.parent / "train.stdout").write_text(proc.stdout)
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-6000:])
    return root, proc, seconds, spec
