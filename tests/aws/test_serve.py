"""The serve entry for real: gunicorn on a free loopback port, requests over HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
import requests
import torch

from aws.aws_helpers import write_policy

OBS, ACT = 5, 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("model")
    module = write_policy(model_dir, OBS, ACT)
    port = _free_port()
    log = open(model_dir.parent / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ddrl.cli", "container", "serve", "--model-dir", str(model_dir),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if requests.get(url + "/ping", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("serve did not come up:\n" + (model_dir.parent / "serve.log").read_text())
        time.sleep(0.3)
    yield url, module
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def _post(url, body, content_type="application/json"):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return requests.post(url + "/invocations", data=data, headers={"Content-Type": content_type},
                         timeout=30)


def test_actions_equal_the_policy_output(server):
    url, module = server
    batch = torch.randn(7, OBS, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = module(batch).tolist()
    r = _post(url, {"observations": batch.tolist()})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.json()["actions"] == want  # float32 -> JSON -> float32 is exact
    one = _post(url, {"observation": batch[0].tolist()})
    assert one.status_code == 200 and one.json() == {"action": want[0]}
    bare = _post(url, batch[:2].tolist(), "application/json; charset=utf-8")
    assert bare.status_code == 200 and bare.json() == {"actions": want[:2]}


@pytest.mark.parametrize("body,content_type,status,message", [
    ("{not json", "application/json", 400, "not valid JSON"),
    ({"observations": [[0.0] * OBS]}, "text/csv", 415, "send application/json"),
    ({"observations": [[0.0] * (OBS + 1)]}, "application/json", 400, f"expects {OBS}"),
    ('{"observations": [[NaN, 0, 0, 0, 0]]}', "application/json", 400, "NaN"),
    ({"observations": [[0.0] * OBS, [0.0] * 3]}, "application/json", 400, "different size"),
    ({"observations": [[0.0, "a", 0, 0, 0]]}, "application/json", 400, "expected a number"),
    ({"obs": [0.0] * OBS}, "application/json", 400, '"observation"'),
    ({"observations": []}, "application/json", 400, "non-empty"),
])
def test_bad_requests_get_a_clear_4xx_and_the_server_stays_up(server, body, content_type, status,
                                                              message):
    url, _ = server
    r = _post(url, body, content_type)
    assert r.status_code == status, r.text
    assert message in r.json()["error"]
    assert requests.get(url + "/ping", timeout=5).status_code == 200


def test_ping_is_503_without_a_policy(tmp_path):
    from ddrl.aws.serve import create_app

    client = create_app(tmp_path).test_client()
    r = client.get("/ping")
    assert r.status_code == 503 and "policy.pt" in r.get_json()["error"]
    assert client.post("/invocations", json={"observation": [0.0]}).status_code == 503
