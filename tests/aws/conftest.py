"""A real moto server on loopback, and fake credentials for this test process only."""

from __future__ import annotations

import json
import os

import pytest

from aws.aws_helpers import BUCKET, FAKE_ENV, tiny_spec


@pytest.fixture(scope="session")
def moto_server():
    """``(endpoint_url, env)``: moto on 127.0.0.1 at a free port; env points boto3 at it."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    env = {**FAKE_ENV, "AWS_ENDPOINT_URL": url,
           # no shared config/credential files from the machine running the tests
           "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    yield url, env
    server.stop()


@pytest.fixture
def aws(moto_server, monkeypatch):
    """boto3 in this test talks to moto with fake credentials; moto is reset afterwards."""
    import requests

    url, env = moto_server
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SAGEMAKER",
                "DDRL_SAGEMAKER_IMAGE", "DDRL_SAGEMAKER_ROLE", "DDRL_SAGEMAKER_BUCKET"):
        monkeypatch.delenv(key, raising=False)
    yield url
    requests.post(f"{url}/moto-api/reset", timeout=10)


@pytest.fixture
def session(aws):
    import boto3

    sess = boto3.session.Session(region_name=FAKE_ENV["AWS_REGION"])
    sess.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": FAKE_ENV["AWS_REGION"]})
    return sess


@pytest.fixture(scope="session")
def container_run(tmp_path_factory):
    """The container's train entry, for real, on a tiny run in an /opt/ml-like root.

    Returns ``(root, printed lines, spec)``.
    """
    from ddrl.aws.container import train_entry
    from ddrl.aws.sagemaker import hyperparameters

    spec = tiny_spec()
    root = tmp_path_factory.mktemp("opt_ml")
    hp_file = root / "input" / "config" / "hyperparameters.json"
    hp_file.parent.mkdir(parents=True)
    hp_file.write_text(json.dumps(hyperparameters(spec)))
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        for key, value in FAKE_ENV.items():  # as in a job whose credentials are in its env
            mp.setenv(key, value)
        train_entry(root, print_fn=lines.append)
    (root / "train.log").write_text("\n".join(lines) + "\n")
    return root, lines, spec
