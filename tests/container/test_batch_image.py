"""AWS Batch's contract with the built image: the job the aws profile submits, run for real.

Snakemake on the host submits one train job through the real Batch executor plugin to
moto's Batch (on loopback); the job definition then holds exactly what Batch would start:
the image's command ``["/bin/bash", "-c", "pip install ... && python -m snakemake
--deploy-sources ... && python -m snakemake ... --mode remote"]`` and its environment. The
test starts that command in the image (host network, so the container reaches moto's S3 on
127.0.0.1; fake credentials as environment variables only) and checks that the run's
outputs arrive in the bucket.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from aws.aws_helpers import BUCKET, FAKE_ENV, TINY_SAGEMAKER_STUDY, moto_batch_queue, tiny_spec
from container.conftest import docker_run

REPO = Path(__file__).resolve().parents[2]
# Moto's Batch would try to start the job's image itself when it can pull it; a name that
# cannot be pulled leaves the starting to this test.
SUBMITTED_IMAGE = "registry.invalid/ddrl:submitted"


def submitted_job(aws: str, workdir: Path) -> tuple[list[str], dict[str, str], str]:
    """Snakemake with the aws profile submits the tiny run's train job to moto's Batch;
    returns the job definition's command and environment, and the run id."""
    import boto3

    role, queue = moto_batch_queue("ddrl-image")
    batch = boto3.client("batch")
    spec = tiny_spec()
    (workdir / "study.yaml").write_text(yaml.safe_dump(TINY_SAGEMAKER_STUDY))
    shutil.copytree(REPO / "workflow", workdir / "workflow",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "DDRL_IMAGE": SUBMITTED_IMAGE, "DDRL_S3_PREFIX": f"{BUCKET}/batch",
           "SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": aws,
           "SNAKEMAKE_AWS_BATCH_JOB_QUEUE": queue, "SNAKEMAKE_AWS_BATCH_JOB_ROLE": role}
    # Stopped once the job is submitted: on the job's failure (moto starts no container)
    # Snakemake would delete the uploaded workflow sources that the job deploys.
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--configfile", "study.yaml",
         "--profile", str(REPO / "profiles" / "aws"), "--retries", "0",
         f"results/awstiny/runs/{spec.run_id}/run.json"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        while not batch.describe_job_definitions()["jobDefinitions"]:
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "no Batch job submitted within 300 s"
            time.sleep(0.2)
        time.sleep(1)  # the submission follows the job definition at once
    finally:
        proc.kill()
        out = proc.communicate(timeout=60)[0]
    assert f"s3://{BUCKET}/batch/results/awstiny/runs/{spec.run_id}/run.json" in out, out[-3000:]
    (jobdef,) = batch.describe_job_definitions()["jobDefinitions"]
    props = jobdef["containerProperties"]
    assert props["image"] == SUBMITTED_IMAGE
    job_env = {e["name"]: e["value"] for e in props.get("environment", [])}
    return props["command"], job_env, spec.run_id


def test_batch_job_command_trains_one_run_from_and_to_s3(image, session, aws, tmp_path):
    command, job_env, run_id = submitted_job(aws, tmp_path)
    assert command[:2] == ["/bin/bash", "-c"] and "-m snakemake" in command[2]
    assert f"run_id={run_id}" in command[2] or run_id in command[2]
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_SESSION_TOKEN"]):
        assert secret not in json.dumps([command, job_env])
    # Batch's role credentials reach a job as its environment; here fake ones, as variables
    proc, seconds = docker_run(image, *command, network="host",
                               env={**job_env, **FAKE_ENV}, timeout=900)
    print(f"Batch job in the image: {seconds:.1f} s\n$ {command[2]}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    s3 = session.client("s3")
    prefix = f"batch/results/awstiny/runs/{run_id}"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]}
    assert {f"{prefix}/run.json", f"{prefix}/progress.csv"} <= keys
    assert any(k.startswith(f"{prefix}/checkpoint/") for k in keys)
    record = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{prefix}/run.json")["Body"].read())
    assert record["run_id"] == run_id and record["status"] == "complete"
    progress = s3.get_object(Bucket=BUCKET, Key=f"{prefix}/progress.csv")["Body"].read().decode()
    assert progress.splitlines()[0].startswith(("iteration", "training_iteration")) or \
        "env_steps" in progress.splitlines()[0]
    assert len(progress.splitlines()) >= 2
    # the job's log went to the bucket too, and no secret reached it
    log_key = f"batch/results/awstiny/logs/train/{run_id}.log"
    assert log_key in {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="batch/")["Contents"]}
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_SESSION_TOKEN"]):
        assert secret not in out
