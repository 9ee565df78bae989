"""Endpoint deploy, smoke test and teardown against moto's server on loopback."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
import requests
import torch

from aws.aws_helpers import BUCKET, IMAGE, ROLE, sagemaker_section, write_policy
from ddrl.aws.deploy import EndpointFailed, deploy, teardown
from ddrl.aws.serve import create_app
from ddrl.aws.settings import SageMakerSettings

OBS, ACT = 5, 2


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "runs" / "ppo-test-run"
    write_policy(run, OBS, ACT, seed=4)
    (run / "run.json").write_text(json.dumps({"run_id": "ppo-test-run",
                                              "spec": {"env": "InvertedPendulumBulletEnv-v0"}}))
    return run


def _queue_endpoint_answer(moto_url: str, body: str) -> None:
    """What the endpoint answers: moto runs no container, so tell it (its documented API)."""
    r = requests.post(f"{moto_url}/moto-api/static/sagemaker/endpoint-results", timeout=10, json={
        "account_id": "123456789012", "region": "eu-west-1",
        "results": [{"Body": body, "ContentType": "application/json",
                     "InvokedProductionVariant": "AllTraffic", "CustomAttributes": ""}]})
    r.raise_for_status()


def test_deploy_invoke_and_teardown(session, aws, run_dir):
    # the answer our own server gives to the smoke test's request, queued as the endpoint's
    client = create_app(run_dir).test_client()
    answer = client.post("/invocations", json={"observations": [[0.0] * OBS]})
    assert answer.status_code == 200
    _queue_endpoint_answer(aws, answer.get_data(as_text=True))

    settings = SageMakerSettings.from_config(sagemaker_section())
    out = run_dir / "endpoint.json"
    printed: list[str] = []
    record = deploy(run_dir, settings, "awstiny", out, name="ddrl-test-endpoint",
                    session=session, print_fn=printed.append, sleep=lambda _: None)
    assert json.loads(out.read_text()) == record
    assert record["smoke_test"] == {"observation_size": OBS, "action_size": ACT}
    assert record["usd_per_hour"] == pytest.approx(0.115)
    assert any("$0.115 per hour" in l for l in printed)
    assert any("InService" in l for l in printed)

    sm = session.client("sagemaker")
    assert sm.describe_endpoint(EndpointName="ddrl-test-endpoint")["EndpointStatus"] == "InService"
    model = sm.describe_model(ModelName="ddrl-test-endpoint")
    assert model["PrimaryContainer"]["Image"] == IMAGE and model["ExecutionRoleArn"] == ROLE
    variant = sm.describe_endpoint_config(EndpointConfigName="ddrl-test-endpoint")["ProductionVariants"][0]
    assert (variant["InstanceType"], variant["InitialInstanceCount"]) == ("ml.m5.large", 1)
    # the uploaded artifact is what SageMaker unpacks into /opt/ml/model for `serve`
    assert model["PrimaryContainer"]["ModelDataUrl"] == \
        f"s3://{BUCKET}/studies/awstiny/models/ppo-test-run/model.tar.gz"
    body = session.client("s3").get_object(Bucket=BUCKET, Key="studies/awstiny/models/ppo-test-run/model.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        assert tar.getnames() == ["policy.pt"]
        served = torch.jit.load(io.BytesIO(tar.extractfile("policy.pt").read()))
    obs = torch.zeros(1, OBS)
    assert served(obs).tolist() == json.loads(answer.get_data())["actions"]

    deleted = teardown(out, session=session, print_fn=printed.append)
    assert deleted == ["endpoint ddrl-test-endpoint", "endpoint_config ddrl-test-endpoint",
                       "model ddrl-test-endpoint"]
    assert sm.list_endpoints()["Endpoints"] == []
    assert sm.list_endpoint_configs()["EndpointConfigs"] == []
    assert sm.list_models()["Models"] == []
    assert not out.exists()


def test_failed_smoke_test_deletes_what_was_created(session, aws, run_dir):
    _queue_endpoint_answer(aws, "<html>502</html>")
    out = run_dir / "endpoint.json"
    with pytest.raises(EndpointFailed, match="expected"):
        deploy(run_dir, SageMakerSettings.from_config(sagemaker_section()), "awstiny", out,
               name="ddrl-bad-endpoint", session=session, print_fn=lambda _: None,
               sleep=lambda _: None)
    sm = session.client("sagemaker")
    assert sm.list_endpoints()["Endpoints"] == []
    assert sm.list_models()["Models"] == []
    assert not out.exists()


def test_deploy_needs_an_exported_policy(session, tmp_path):
    from ddrl.errors import DdrlError

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "r", "spec": {}}))
    with pytest.raises(DdrlError, match="export the run's policy"):
        deploy(run, SageMakerSettings.from_config(sagemaker_section()), "s", run / "endpoint.json",
               session=session)


def test_cli_deploy_and_teardown(session, aws, run_dir, capsys):
    import yaml

    from aws.aws_helpers import TINY_SAGEMAKER_STUDY
    from ddrl.cli import main

    answer = create_app(run_dir).test_client().post(
        "/invocations", json={"observations": [[0.0] * OBS]}).get_data(as_text=True)
    _queue_endpoint_answer(aws, answer)
    config = run_dir.parent / "study.yaml"
    config.write_text(yaml.safe_dump({**TINY_SAGEMAKER_STUDY,
                                      "sagemaker": sagemaker_section(poll_s=0.01)}))
    assert main(["deploy", str(run_dir), "--config", str(config), "--name", "ddrl-cli-endpoint"]) == 0
    record = json.loads((run_dir / "endpoint.json").read_text())
    assert record["endpoint_name"] == "ddrl-cli-endpoint" and record["region"] == "eu-west-1"
    assert "ddrl teardown" in capsys.readouterr().out
    assert main(["teardown", str(run_dir / "endpoint.json")]) == 0
    assert session.client("sagemaker").list_endpoints()["Endpoints"] == []
    # a config without the account-specific settings is refused with a clear message
    config.write_text(yaml.safe_dump({**TINY_SAGEMAKER_STUDY, "sagemaker": {"prefix": "x"}}))
    assert main(["deploy", str(run_dir), "--config", str(config)]) == 2
    assert "sagemaker.image (or $DDRL_SAGEMAKER_IMAGE)" in capsys.readouterr().err
