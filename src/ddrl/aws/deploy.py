"""Deploy a run's exported policy as a SageMaker endpoint; smoke-test it; tear it down.

``deploy`` packages the ``policy.pt`` of a run folder as ``model.tar.gz``,
uploads it, creates the Model, EndpointConfig and Endpoint, waits for InService, sends one
observation through ``invoke_endpoint`` and writes ``endpoint.json``. If the endpoint fails
to come up, what was created is deleted again (an endpoint bills by the hour).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import tarfile
import time
from pathlib import Path
from typing import Any, Callable

from ddrl import atomic
from ddrl.aws.sagemaker import estimate_cost
from ddrl.aws.settings import SageMakerSettings
from ddrl.aws.serve import POLICY_FILE
from ddrl.errors import DdrlError
from ddrl.runs import RunFolder


class EndpointFailed(DdrlError):
    """The endpoint did not reach InService."""


def endpoint_name(run_id: str, when: dt.datetime | None = None) -> str:
    when = when or dt.datetime.now(dt.timezone.utc)
    tail = when.strftime("-%Y%m%d-%H%M%S")
    head = re.sub(r"[^A-Za-z0-9]+", "-", f"ddrl-{run_id}").strip("-")
    return head[: 63 - len(tail)].rstrip("-") + tail


def package_model(run_dir: Path) -> bytes:
    """``model.tar.gz`` holding the serving files of a run (policy.pt at the top level)."""
    policy = run_dir / POLICY_FILE
    if not policy.exists():
        raise DdrlError(f"{policy} does not exist; export the run's policy before deploying")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(policy, arcname=POLICY_FILE)
    return buf.getvalue()


def observation_size(run_dir: Path) -> int:
    """From the metadata inside policy.pt, else from the run's environment."""
    from ddrl.agents.export import load_exported

    _, meta = load_exported(run_dir / POLICY_FILE)
    shape = meta.get("observation_shape")
    if not shape:
        from ddrl.envs import make_env

        record = RunFolder(run_dir).read_record()
        env = make_env(record["spec"]["env"], **record["spec"].get("env_config", {}))
        shape = env.observation_space.shape
        env.close()
    size = 1
    for n in shape:
        size *= int(n)
    return size


def deploy(run_dir: str | Path, settings: SageMakerSettings, study: str, out: str | Path, *,
           name: str | None = None, session: Any = None, print_fn: Callable[[str], None] = print,
           sleep: Callable[[float], None] = time.sleep, timeout_s: float = 3600) -> dict[str, Any]:
    """Deploy the run in ``run_dir``; write and return the endpoint record (``out``)."""
    from ddrl.aws import boto3

    run_dir = Path(run_dir)
    record = RunFolder(run_dir).read_record()
    run_id = record["run_id"]
    session = session or boto3().session.Session(region_name=settings.region)
    sm, s3 = session.client("sagemaker"), session.client("s3")
    name = name or endpoint_name(run_id)

    body = package_model(run_dir)
    key = settings.s3_uri(study, "models", run_id, "model.tar.gz").split("/", 3)[3]
    s3.put_object(Bucket=settings.bucket, Key=key, Body=body)
    model_data = f"s3://{settings.bucket}/{key}"
    tags = [{"Key": k, "Value": str(v)} for k, v in
            {"ddrl:study": study, "ddrl:run_id": run_id, **settings.tags}.items()]
    hourly = estimate_cost(settings, settings.serve_instance_type, settings.serve_instance_count, 1.0)
    print_fn(f"deploying {run_id} as endpoint {name} on {settings.serve_instance_count} x "
             f"{settings.serve_instance_type}: " + (f"${hourly:.3f} per hour until torn down"
                                                     if hourly is not None else "price unknown"))
    created: list[tuple[str, str]] = []
    try:
        sm.create_model(ModelName=name, ExecutionRoleArn=settings.role, Tags=tags,
                        PrimaryContainer={"Image": settings.image, "ModelDataUrl": model_data,
                                          "Environment": {"DDRL_RUN_ID": run_id}})
        created.append(("model", name))
        sm.create_endpoint_config(EndpointConfigName=name, Tags=tags, ProductionVariants=[{
            "VariantName": "AllTraffic", "ModelName": name,
            "InstanceType": settings.serve_instance_type,
            "InitialInstanceCount": settings.serve_instance_count}])
        created.append(("endpoint_config", name))
        sm.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=tags)
        created.append(("endpoint", name))
        desc = wait_in_service(sm, name, settings.poll_s, timeout_s, print_fn, sleep)
        smoke = smoke_test(session.client("sagemaker-runtime"), name, observation_size(run_dir))
        print_fn(f"endpoint {name}: smoke test returned {smoke}")
    except BaseException:
        print_fn(f"deploy of {name} failed; deleting what was created")
        _delete(sm, created, print_fn)
        raise
    result = {
        "endpoint_name": name,
        "endpoint_arn": desc.get("EndpointArn"),
        "endpoint_config_name": name,
        "model_name": name,
        "model_data": model_data,
        "image": settings.image,
        "region": session.region_name,
        "instance_type": settings.serve_instance_type,
        "instance_count": settings.serve_instance_count,
        "usd_per_hour": hourly,
        "run_id": run_id,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "smoke_test": smoke,
    }
    atomic.write_json(out, result)
    return result


def wait_in_service(sm: Any, name: str, poll_s: float, timeout_s: float,
                    print_fn: Callable[[str], None], sleep: Callable[[float], None]) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    last = None
    while True:
        desc = sm.describe_endpoint(EndpointName=name)
        status = desc["EndpointStatus"]
        if status != last:
            print_fn(f"endpoint {name}: {status}")
            last = status
        if status == "InService":
            return desc
        if status in ("Failed", "OutOfService", "Deleting"):
            raise EndpointFailed(f"endpoint {name} is {status}: {desc.get('FailureReason', 'no reason given')}")
        if time.monotonic() > deadline:
            raise EndpointFailed(f"endpoint {name} not InService after {timeout_s:.0f} s (still {status})")
        sleep(poll_s)


def smoke_test(runtime: Any, name: str, obs_size: int) -> dict[str, Any]:
    """One zero observation through the endpoint; the answer must be one action."""
    body = json.dumps({"observations": [[0.0] * obs_size]})
    response = runtime.invoke_endpoint(EndpointName=name, ContentType="application/json",
                                       Accept="application/json", Body=body)
    raw = response["Body"].read()
    try:
        actions = json.loads(raw)["actions"]
        ok = isinstance(actions, list) and len(actions) == 1 and all(
            isinstance(a, (int, float)) for a in actions[0])
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise EndpointFailed(f"endpoint {name} answered the smoke test with {raw[:200]!r}; "
                             'expected {"actions": [[numbers]]}')
    return {"observation_size": obs_size, "action_size": len(actions[0])}


def _delete(sm: Any, created: list[tuple[str, str]], print_fn: Callable[[str], None]) -> list[str]:
    deleted = []
    calls = {"endpoint": ("delete_endpoint", "EndpointName"),
             "endpoint_config": ("delete_endpoint_config", "EndpointConfigName"),
             "model": ("delete_model", "ModelName")}
    for kind, name in reversed(created):
        method, arg = calls[kind]
        try:
            getattr(sm, method)(**{arg: name})
            deleted.append(f"{kind} {name}")
            print_fn(f"deleted {kind} {name}")
        except Exception as err:  # noqa: BLE001 - keep deleting the rest
            print_fn(f"could not delete {kind} {name}: {err}")
    return deleted


def teardown(record_path: str | Path, *, session: Any = None, region: str | None = None,
             print_fn: Callable[[str], None] = print) -> list[str]:
    """Delete the endpoint, its config and its model named in ``endpoint.json``."""
    from ddrl.aws import boto3

    record = json.loads(Path(record_path).read_text())
    session = session or boto3().session.Session(region_name=region or record.get("region"))
    sm = session.client("sagemaker")
    created = [("model", record["model_name"]), ("endpoint_config", record["endpoint_config_name"]),
               ("endpoint", record["endpoint_name"])]
    deleted = _delete(sm, created, print_fn)
    if len(deleted) == len(created):
        Path(record_path).unlink()
    return deleted
