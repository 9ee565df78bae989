"""The workflow with S3 as its default storage (the real storage plugin) against moto, and
the AWS profile submitting to moto's Batch through the real executor plugin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from aws.aws_helpers import BUCKET, FAKE_ENV, moto_batch_queue
REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "workflow" / "Snakefile"
PREFIX = "wf"


def _snakemake(workdir: Path, config: Path, profile: str, *args: str,
               env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--directory",
         str(workdir), "--configfile", str(config), "--profile", str(REPO / "profiles" / profile),
         *args], capture_output=True, text=True, env=env or dict(os.environ), timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return proc


def test_plot_rule_reads_and_writes_s3(container_run, session, aws, tmp_path):
    """A trained run exists only in S3; the plot rule reads it there and writes back."""
    import yaml

    from aws.aws_helpers import TINY_SAGEMAKER_STUDY

    root, _, spec = container_run
    s3 = session.client("s3")
    run_prefix = f"{PREFIX}/results/awstiny/runs/{spec.run_id}"
    for path in sorted((root / "model").rglob("*")):
        if path.is_file() and path.name != "policy.pt":
            s3.upload_file(str(path), BUCKET, f"{run_prefix}/{path.relative_to(root / 'model').as_posix()}")
    workdir = tmp_path / "wd"
    workdir.mkdir()
    config = workdir / "study.yaml"
    config.write_text(yaml.safe_dump(TINY_SAGEMAKER_STUDY))
    target = "results/awstiny/figures/fig12-14_reward_curves.png"
    proc = _snakemake(
        workdir, config, "local", target, "--cores", "1",
        "--default-storage-provider", "s3",
        "--default-storage-prefix", f"s3://{BUCKET}/{PREFIX}",
        "--storage-s3-endpoint-url", aws,
        "--storage-s3-region", FAKE_ENV["AWS_REGION"],
    )
    log = proc.stdout + proc.stderr
    assert "rule plot_rewards" in log
    assert "rule train:" not in log  # the run in S3 counts as done: nothing retrained
    # the outputs went back to S3 ...
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX)["Contents"]}
    for name in ("fig12-14_reward_curves.png", "fig12-14_reward_curves.pdf"):
        assert f"{PREFIX}/results/awstiny/figures/{name}" in keys
    png = s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/{target}")["Body"].read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert f"{PREFIX}/results/awstiny/logs/plot_rewards.log" in keys
    assert not (workdir / "results").exists()  # nothing written outside the storage
    # ... and no secret reached the logs
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_SESSION_TOKEN"]):
        assert secret not in log


def test_aws_profile_submits_batch_jobs(session, aws, tmp_path):
    """The aws profile through the real Batch executor plugin against moto's Batch: the job
    definition carries the image, the profile's timeout and the rule's CPUs, and no secret.
    (Moto runs no containers, so the job itself fails; that is all it can tell.)"""
    import boto3

    role, queue = moto_batch_queue("ddrl-batch")
    batch = boto3.client("batch")
    env = {**os.environ, "DDRL_IMAGE": "registry.invalid/ddrl:test",
           "DDRL_S3_PREFIX": f"{BUCKET}/batch-test",
           "SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": aws,
           "SNAKEMAKE_AWS_BATCH_JOB_QUEUE": queue, "SNAKEMAKE_AWS_BATCH_JOB_ROLE": role}
    config = shutil.copy(REPO / "tests" / "data" / "tiny.yaml", tmp_path / "tiny.yaml")
    from ddrl.study.study import Study

    run_id = next(r for r, s in Study.from_file(config).runs.items()
                  if s.algorithm == "PPO" and s.resources["num_env_runners"] == 2)
    # Batch jobs get the workflow sources through the storage: they must lie below the
    # directory Snakemake runs in (as in a checkout of this repository)
    shutil.copytree(REPO / "workflow", tmp_path / "workflow",
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "tiny.yaml",
         "--profile", str(REPO / "profiles" / "aws"), "--retries", "0",
         f"results/tiny/runs/{run_id}/run.json"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "AWS Batch job failed" in out, out[-3000:]
    # the profile's storage prefix, from the environment
    assert f"s3://{BUCKET}/batch-test/results/tiny/runs/{run_id}/run.json" in out
    (jobdef,) = batch.describe_job_definitions()["jobDefinitions"]
    props = jobdef["containerProperties"]
    assert props["image"] == "registry.invalid/ddrl:test"
    assert props["jobRoleArn"] == role
    assert jobdef["timeout"] == {"attemptDurationSeconds": 86400}
    assert {"type": "VCPU", "value": "4"} in props["resourceRequirements"]  # 2 runners + driver, rounded up
    assert {"type": "MEMORY", "value": "8192"} in props["resourceRequirements"]
    assert "snakemake" in " ".join(props["command"]) and run_id in " ".join(props["command"])
    (job,) = batch.list_jobs(jobQueue=queue, jobStatus="FAILED")["jobSummaryList"]
    text = json.dumps(jobdef) + out
    for secret in (FAKE_ENV["AWS_SECRET_ACCESS_KEY"], FAKE_ENV["AWS_SESSION_TOKEN"]):
        assert secret not in text
