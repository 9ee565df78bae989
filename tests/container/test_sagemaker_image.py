"""SageMaker's contract with the built image: ``<image> train`` and ``<image> serve``.

Training runs read-only (``--read-only`` with a tmpfs /tmp, as Apptainer runs the image) with
/opt/ml mounted; serving answers real HTTP on a published loopback port, writable and
read-only.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid

import pytest

from ddrl.aws.sagemaker import METRIC_DEFINITIONS, hyperparameters
from ddrl.runs import read_run
from ddrl.training import checkpoints

from aws.aws_helpers import tiny_spec
from container.conftest import READ_ONLY, docker_run, opt_ml


def test_train_writes_model_checkpoints_and_metric_lines(image, trained):
    root, proc, seconds, spec = trained
    print(f"<image> train (read-only): {seconds:.1f} s")
    model = root / "model"
    record, progress = read_run(model)
    assert record["run_id"] == spec.run_id and record["status"] == "complete"
    assert progress["env_steps"].iloc[-1] >= 200
    assert checkpoints.read_manifest(model / "checkpoint")["run_id"] == spec.run_id
    assert (model / "policy.pt").stat().st_size > 1000
    # the resumable state is where SageMaker syncs checkpoints to S3
    synced = root / "checkpoints" / spec.run_id / "work" / "checkpoints"
    assert checkpoints.latest_valid(synced, spec.run_id) is not None
    assert not (root / "output" / "failure").exists()
    # every metric the estimator scrapes from stdout, with the values progress.csv holds
    lines = proc.stdout.splitlines()
    line = next(l for l in lines if l.startswith(f"ddrl {spec.run_id} iter=1 "))
    row = progress.iloc[0]
    values = {}
    for metric in METRIC_DEFINITIONS:
        matches = [m for l in lines if (m := re.search(metric["Regex"], l))]
        assert matches, f"no stdout line matches {metric['Name']}: {metric['Regex']!r}"
        values[metric["Name"]] = float(re.search(metric["Regex"], line).group(1))
    assert values["iteration"] == 1 and values["env_steps"] == row["env_steps"]
    assert values["iter_s"] == pytest.approx(row["time_this_iter_s"], abs=0.006)
    # the image's commit (its label, from the build) reached run.json through DDRL_GIT_COMMIT
    label = subprocess.run(
        ["docker", "image", "inspect", image, "--format",
         '{{index .Config.Labels "org.opencontainers.image.revision"}}'],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert len(label) == 40 and record["git"]["commit"] == label


def test_train_failure_file_on_bad_hyperparameters(image, tmp_path):
    hp = hyperparameters(tiny_spec())
    hp["run_id"] = "ppo-some-other-run"
    root = opt_ml(tmp_path / "opt_ml", hp)
    proc, seconds = docker_run(image, "train", mounts={root: "/opt/ml"}, read_only=True,
                               timeout=300)
    print(f"<image> train, bad hyperparameters: {seconds:.1f} s")
    assert proc.returncode != 0
    failure = (root / "output" / "failure").read_text()
    assert failure.startswith("ConfigError") and "ppo-some-other-run" in failure
    assert list((root / "model").iterdir()) == []


class Server:
    def __init__(self, image: str, model_dir, read_only: bool) -> None:
        self.name = f"ddrl-serve-{uuid.uuid4().hex[:10]}"
        args = ["docker", "run", "-d", "--name", self.name, "-p", "127.0.0.1::8080",
                "-v", f"{model_dir}:/opt/ml/model:ro"]
        subprocess.run([*args, *(READ_ONLY if read_only else []), image, "serve"],
                       check=True, capture_output=True, text=True, timeout=120)
        port = subprocess.run(["docker", "port", self.name, "8080/tcp"], check=True,
                              capture_output=True, text=True, timeout=60).stdout
        self.url = "http://" + port.splitlines()[0].strip()

    def logs(self) -> str:
        proc = subprocess.run(["docker", "logs", self.name], capture_output=True, text=True,
                              timeout=60)
        return proc.stdout + proc.stderr

    def wait_ready(self, timeout: float = 120) -> float:
        import requests

        start = time.monotonic()
        while time.monotonic() - start < timeout:
            try:
                if requests.get(f"{self.url}/ping", timeout=5).status_code == 200:
                    return time.monotonic() - start
            except requests.RequestException:  # refused, reset or slow while the worker starts
                pass
            time.sleep(0.5)
        raise AssertionError(f"/ping not 200 after {timeout} s:\n{self.logs()[-4000:]}")

    def stop(self) -> None:
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True, timeout=60)


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read-only"])
def test_serve_answers_like_the_policy_in_process(image, trained, read_only):
    import requests

    from ddrl.aws.serve import Policy

    model = trained[0] / "model"
    policy = Policy(model)
    server = Server(image, model, read_only)
    try:
        ready = server.wait_ready()
        print(f"<image> serve ({'read-only' if read_only else 'writable'}): /ping 200 after "
              f"{ready:.1f} s")
        post = lambda body, **kw: requests.post(f"{server.url}/invocations", data=body, timeout=30, **kw)
        batch = [[0.1 * i - 0.2 * j for j in range(5)] for i in range(4)]
        reply = post(None, json={"observations": batch})
        assert reply.status_code == 200, reply.text
        expected = policy.act(batch)
        got = reply.json()["actions"]
        assert len(got) == 4 and all(len(a) == 1 for a in got)
        for g, e in zip(got, expected):
            assert g == pytest.approx(e, abs=1e-6)
        one = post(None, json={"observation": batch[2]})
        assert one.status_code == 200 and one.json()["action"] == pytest.approx(expected[2], abs=1e-6)
        # malformed requests: 4xx with a reason, and the server stays up
        bad = [
            (post("{not json", headers={"Content-Type": "application/json"}), 400, "not valid JSON"),
            (post("1,2,3", headers={"Content-Type": "text/csv"}), 415, "application/json"),
            (post(None, json={"observation": [1.0, 2.0]}), 400, "expects 5"),
            (post(None, json={"observations": []}), 400, "non-empty"),
            (post(None, json={"obs": [0.0] * 5}), 400, '"observation"'),
            (post('{"observation": [NaN, 0, 0, 0, 0]}',
                  headers={"Content-Type": "application/json"}), 400, "NaN"),
        ]
        for response, status, text in bad:
            assert response.status_code == status, response.text
            assert text in response.json()["error"]
        assert requests.get(f"{server.url}/ping", timeout=30).status_code == 200
        assert "POST /invocations" in server.logs()  # gunicorn's access log on stdout
    finally:
        server.stop()
