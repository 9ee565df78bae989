"""The SageMaker training backend against moto's server on loopback."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from aws.aws_helpers import BUCKET, IMAGE, ROLE, sagemaker_section, tiny_spec
from ddrl.training import checkpoints
from ddrl.aws.sagemaker import (JOB_RECORD, METRIC_DEFINITIONS, SageMakerJobFailed,
                                checkpoint_uri, cost_line, job_name, train_on_sagemaker,
                                training_job_request)
from ddrl.aws.settings import SageMakerSettings
from ddrl.errors import ConfigError
from ddrl.runs import read_run


def _model_tarball(model_dir: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for child in sorted(model_dir.iterdir()):
            tar.add(child, arcname=child.name)
    return buf.getvalue()


def _capture_and_finish(session, tarball: bytes | None):
    """Record the CreateTrainingJob request as sent; then play SageMaker's part by
    uploading the container's /opt/ml/model as the job's model.tar.gz."""
    sent = []

    def before(params, **_):
        sent.append(json.loads(json.dumps(params, default=str)))

    def after(**_):
        if tarball is None:
            return
        name = sent[-1]["TrainingJobName"]
        desc = session.client("sagemaker").describe_training_job(TrainingJobName=name)
        bucket, key = desc["ModelArtifacts"]["S3ModelArtifacts"][5:].split("/", 1)
        session.client("s3").put_object(Bucket=bucket, Key=key, Body=tarball)

    session.events.register("provide-client-params.sagemaker.CreateTrainingJob", before)
    session.events.register("after-call.sagemaker.CreateTrainingJob", after)
    return sent


def test_request_has_every_field(session):
    spec = tiny_spec()
    settings = SageMakerSettings.from_config(sagemaker_section(spot=True))
    req = training_job_request(spec, settings, "awstiny", job_name(spec))
    assert req["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert req["EnableManagedSpotTraining"] is True
    on_demand = training_job_request(spec, SageMakerSettings.from_config(sagemaker_section()),
                                     "awstiny", "x")
    assert on_demand["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600}
    # moto accepts it, and echoes what it stored
    session.client("sagemaker").create_training_job(**req)
    desc = session.client("sagemaker").describe_training_job(TrainingJobName=req["TrainingJobName"])
    assert desc["AlgorithmSpecification"]["TrainingImage"] == IMAGE
    assert desc["RoleArn"] == ROLE
    assert desc["ResourceConfig"] == {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1,
                                      "VolumeSizeInGB": 20}
    assert desc["StoppingCondition"]["MaxRuntimeInSeconds"] == 3600
    assert desc["CheckpointConfig"] == {
        "S3Uri": f"s3://{BUCKET}/studies/awstiny/checkpoints/{spec.run_id}",
        "LocalPath": "/opt/ml/checkpoints"}
    assert desc["HyperParameters"]["run_id"] == spec.run_id
    assert desc["OutputDataConfig"]["S3OutputPath"] == f"s3://{BUCKET}/studies/awstiny/output"
    assert len(req["TrainingJobName"]) <= 63


def test_training_job_downloads_a_run_folder_like_a_local_run(session, container_run, tmp_path):
    root, _, spec = container_run
    sent = _capture_and_finish(session, _model_tarball(root / "model"))
    settings = SageMakerSettings.from_config(sagemaker_section())
    printed: list[str] = []
    run_dir = tmp_path / "results" / "awstiny" / "runs" / spec.run_id
    record = train_on_sagemaker(spec, run_dir, settings, "awstiny", session=session,
                                print_fn=printed.append)

    (request,) = sent
    assert request["AlgorithmSpecification"]["MetricDefinitions"] == METRIC_DEFINITIONS
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600}
    assert request["CheckpointConfig"]["S3Uri"] == checkpoint_uri(settings, "awstiny", spec)
    # the estimate is printed before the job is created
    cost = next(i for i, l in enumerate(printed) if "estimated cost: at most $0.23" in l)
    submitted = next(i for i, l in enumerate(printed) if "submitted" in l)
    assert cost < submitted
    assert any("Completed" in l for l in printed)

    # same layout as a local run: later stages read it unchanged
    assert sorted(p.name for p in run_dir.iterdir() if not p.name.startswith(".")) == [
        "checkpoint", "progress.csv", "run.json", "work"]
    local_record, progress = read_run(run_dir)
    assert local_record["run_id"] == spec.run_id == record["run_id"]
    assert local_record["sagemaker"]["job_name"] == request["TrainingJobName"]
    assert local_record["sagemaker"]["model_artifact"].endswith("/output/model.tar.gz")
    assert progress.equals(read_run(root / "model")[1])
    assert checkpoints.read_manifest(run_dir / "checkpoint")["run_id"] == spec.run_id

    # a rerun of the rule re-attaches to the finished job instead of paying for another
    again: list[str] = []
    train_on_sagemaker(spec, run_dir, settings, "awstiny", session=session, print_fn=again.append)
    assert len(sent) == 1
    assert any("re-attaching" in l for l in again)
    assert len(session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]) == 1


def test_failed_job_reports_the_reason_and_writes_nothing(session, tmp_path):
    from botocore.stub import ANY, Stubber

    spec = tiny_spec()
    sm = session.client("sagemaker")
    stub = Stubber(sm)
    stub.add_response("create_training_job", {"TrainingJobArn": "arn:aws:sagemaker:eu-west-1:123456789012:training-job/x"},
                      {k: ANY for k in training_job_request(spec, SageMakerSettings.from_config(
                          sagemaker_section()), "awstiny", "x")})
    base = {"TrainingJobName": "x", "TrainingJobArn": "arn:aws:sagemaker:eu-west-1:123456789012:training-job/x",
            "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "ModelArtifacts": {"S3ModelArtifacts": ""}, "CreationTime": "2026-01-01T00:00:00Z",
            "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 20},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600}}
    stub.add_response("describe_training_job", {**base, "TrainingJobStatus": "InProgress",
                                                "SecondaryStatus": "Training"})
    stub.add_response("describe_training_job", {
        **base, "TrainingJobStatus": "Failed", "SecondaryStatus": "Failed",
        "FailureReason": "AlgorithmError: ConfigError: env not found"})
    stub.activate()

    class _Session:
        region_name = "eu-west-1"

        def client(self, name):
            return sm if name == "sagemaker" else session.client(name)

    run_dir = tmp_path / "run"
    with pytest.raises(SageMakerJobFailed, match="Failed: AlgorithmError: ConfigError: env not found"):
        train_on_sagemaker(spec, run_dir, SageMakerSettings.from_config(sagemaker_section()),
                           "awstiny", session=_Session(), print_fn=lambda _: None, sleep=lambda _: None)
    assert not any((run_dir / n).exists() for n in ("run.json", "progress.csv", "checkpoint"))
    stub.assert_no_pending_responses()


def test_cost_cap_refuses_before_anything_is_created(session, tmp_path):
    spec = tiny_spec()
    settings = SageMakerSettings.from_config(sagemaker_section(max_runtime_s=36000, max_cost_usd=1.0))
    assert "at most $2.30" in cost_line(settings)
    with pytest.raises(ConfigError, match=r"\$2.30 exceeds sagemaker.max_cost_usd \$1.00"):
        train_on_sagemaker(spec, tmp_path / "run", settings, "awstiny", session=session)
    assert session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
    assert not (tmp_path / "run" / "work" / JOB_RECORD).exists()
    unknown = SageMakerSettings.from_config(sagemaker_section(instance_type="ml.p3.2xlarge"))
    assert "estimated cost: unknown" in cost_line(unknown)
    gpu_spec = type(spec).from_dict({**spec.to_dict(),
                                     "resources": {**spec.resources, "num_gpus_per_learner": 1}})
    with pytest.raises(ConfigError, match="has no GPU"):
        train_on_sagemaker(gpu_spec, tmp_path / "run", SageMakerSettings.from_config(
            sagemaker_section()), "awstiny", session=session)


def test_settings_from_env_and_clear_errors():
    env = {"DDRL_SAGEMAKER_IMAGE": IMAGE, "DDRL_SAGEMAKER_ROLE": ROLE, "DDRL_SAGEMAKER_BUCKET": BUCKET}
    settings = SageMakerSettings.from_config({"instance_type": "ml.c5.xlarge"}, env=env)
    assert (settings.image, settings.role, settings.bucket) == (IMAGE, ROLE, BUCKET)
    with pytest.raises(ConfigError, match=r"sagemaker.role \(or \$DDRL_SAGEMAKER_ROLE\)"):
        SageMakerSettings.from_config({"image": IMAGE, "bucket": BUCKET}, env={})
    with pytest.raises(ConfigError, match="max_wait_s"):
        SageMakerSettings.from_config(sagemaker_section(spot=True, max_wait_s=60), env={})


def test_study_config_accepts_the_sagemaker_section():
    from ddrl.study.study import Study, validate_config
    from aws.aws_helpers import TINY_SAGEMAKER_STUDY

    Study.from_config({**TINY_SAGEMAKER_STUDY, "train_backend": "sagemaker",
                       "sagemaker": sagemaker_section(spot=True)})
    with pytest.raises(ConfigError, match="train_backend"):
        validate_config({**TINY_SAGEMAKER_STUDY, "train_backend": "ec2"})
    with pytest.raises(ConfigError, match="sagemaker"):
        validate_config({**TINY_SAGEMAKER_STUDY, "sagemaker": {"instance_typo": "ml.c5.xlarge"}})


def test_train_rule_uses_the_sagemaker_backend(session, aws, container_run, tmp_path):
    """The workflow's train rule with `train_backend: sagemaker`: first a job it submits
    itself (moto has no artifact for it, so the rule fails cleanly), then a rerun that
    re-attaches to a finished job and unpacks its artifact into the run folder."""
    import os
    import subprocess
    import sys

    import yaml

    from aws.aws_helpers import TINY_SAGEMAKER_STUDY

    root, _, spec = container_run
    repo = Path(__file__).resolve().parents[2]
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump({**TINY_SAGEMAKER_STUDY, "train_backend": "sagemaker",
                                      "sagemaker": sagemaker_section()}))
    run_dir = tmp_path / "results" / "awstiny" / "runs" / spec.run_id
    target = f"results/awstiny/runs/{spec.run_id}/run.json"

    def snakemake():
        return subprocess.run(
            [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "workflow" / "Snakefile"),
             "--directory", str(tmp_path), "--configfile", str(config), "--cores", "1", target],
            capture_output=True, text=True, env=dict(os.environ), timeout=600)

    first = snakemake()
    log = (tmp_path / "results" / "awstiny" / "logs" / "train" / f"{spec.run_id}.log").read_text()
    assert first.returncode != 0
    assert "estimated cost: at most $0.23" in log and "submitted ddrl-ppo-" in log
    assert "cannot download the model artifact s3://" in log, log[-2000:]
    assert not (run_dir / "run.json").exists() and not (run_dir / "checkpoint").exists()
    (job,) = session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]

    # SageMaker's part: the job's model.tar.gz holds the container's /opt/ml/model
    desc = session.client("sagemaker").describe_training_job(TrainingJobName=job["TrainingJobName"])
    bucket, key = desc["ModelArtifacts"]["S3ModelArtifacts"][5:].split("/", 1)
    session.client("s3").put_object(Bucket=bucket, Key=key, Body=_model_tarball(root / "model"))
    second = snakemake()
    assert second.returncode == 0, second.stderr[-3000:]
    log = (tmp_path / "results" / "awstiny" / "logs" / "train" / f"{spec.run_id}.log").read_text()
    assert f"re-attaching to SageMaker job {job['TrainingJobName']}" in log
    record, _ = read_run(run_dir)
    assert record["sagemaker"]["job_name"] == job["TrainingJobName"]
    assert len(session.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]) == 1
