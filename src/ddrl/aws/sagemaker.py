"""SageMaker training backend for the train rule (``train_backend: sagemaker``).

One run becomes one SageMaker training job running this package's container (see
``ddrl.aws.container``). The job's hyperparameters carry the run spec, so the container
trains exactly the run whose id the workflow expects (it checks). Checkpoints sync to S3
(``CheckpointConfig``), so managed spot training resumes after an interruption, and a
rerun of the rule re-attaches to a job that is still running instead of paying twice.
On success the model artifact is unpacked into the run folder with the same layout as a
local run (``progress.csv``, ``run.json``, ``checkpoint/``), so later stages do not care
where the run trained.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from ddrl import atomic
from ddrl.training import checkpoints
from ddrl.aws.settings import SageMakerSettings
from ddrl.errors import ConfigError, DdrlError
from ddrl.runs import CHECKPOINT, PROGRESS_CSV, RUN_JSON, RunFolder, RunSpec

JOB_RECORD = "sagemaker_job.json"  # in run_dir/work/: the job to re-attach to
HYPERPARAMETER_LIMIT = 2500  # SageMaker's limit on one hyperparameter value
RUNNING = {"InProgress", "Stopping"}

# The number in ddrl's progress line (ddrl.training.train.progress_line). "nan" does not match, so
# an iteration without finished episodes reports no return rather than a bogus one.
_NUM = r"([-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
_LINE = r"ddrl \S+ iter=[0-9]+ "
METRIC_DEFINITIONS = [
    {"Name": "iteration", "Regex": r"ddrl \S+ iter=([0-9]+) env_steps="},
    {"Name": "env_steps", "Regex": _LINE + r"env_steps=([0-9]+)"},
    {"Name": "episode_return_mean", "Regex": _LINE + r"env_steps=\S+ return=" + _NUM},
    {"Name": "env_steps_per_s", "Regex": _LINE + r".*\bsteps_per_s=" + _NUM},
    {"Name": "iter_s", "Regex": _LINE + r".*\biter_s=" + _NUM},
]


class SageMakerJobFailed(DdrlError):
    """The training job ended Failed or Stopped."""


# --------------------------------------------------------------------------- the request

def job_name(spec: RunSpec, when: dt.datetime | None = None) -> str:
    """A unique, valid training-job name (63 chars at most) that still says which run."""
    when = when or dt.datetime.now(dt.timezone.utc)
    stamp = when.strftime("%Y%m%d-%H%M%S")
    tail = f"-s{spec.seed}-{spec.digest}-{stamp}"
    head = re.sub(r"[^A-Za-z0-9]+", "-", f"ddrl-{spec.algorithm.lower()}-{spec.env}").strip("-")
    return head[: 63 - len(tail)].rstrip("-") + tail


def hyperparameters(spec: RunSpec) -> dict[str, str]:
    """The run spec as SageMaker hyperparameters: one JSON value per field, plus the run id."""
    hp = {key: json.dumps(value, sort_keys=True) for key, value in spec.to_dict().items()}
    hp["run_id"] = spec.run_id
    for key, value in hp.items():
        if len(value) > HYPERPARAMETER_LIMIT:
            raise ConfigError(
                f"run {spec.run_id}: hyperparameter {key!r} is {len(value)} characters as JSON; "
                f"SageMaker accepts at most {HYPERPARAMETER_LIMIT}"
            )
    return hp


def checkpoint_uri(settings: SageMakerSettings, study: str, spec: RunSpec) -> str:
    """Stable per run, so a new job for the same run resumes from the old job's checkpoints."""
    return settings.s3_uri(study, "checkpoints", spec.run_id)


def training_job_request(spec: RunSpec, settings: SageMakerSettings, study: str,
                         name: str) -> dict[str, Any]:
    """The ``create_training_job`` arguments for one run."""
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": settings.max_runtime_s}
    if settings.spot:
        stopping["MaxWaitTimeInSeconds"] = settings.max_wait_s or 2 * settings.max_runtime_s
    tags = {"ddrl:study": study, "ddrl:run_id": spec.run_id, **settings.tags}
    return {
        "TrainingJobName": name,
        "HyperParameters": hyperparameters(spec),
        "AlgorithmSpecification": {
            "TrainingImage": settings.image,
            "TrainingInputMode": "File",
            "MetricDefinitions": METRIC_DEFINITIONS,
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "RoleArn": settings.role,
        "OutputDataConfig": {"S3OutputPath": settings.s3_uri(study, "output")},
        "ResourceConfig": {
            "InstanceType": settings.instance_type,
            "InstanceCount": settings.instance_count,
            "VolumeSizeInGB": settings.volume_gb,
        },
        "StoppingCondition": stopping,
        "CheckpointConfig": {
            "S3Uri": checkpoint_uri(settings, study, spec),
            "LocalPath": "/opt/ml/checkpoints",
        },
        "EnableManagedSpotTraining": settings.spot,
        "Tags": [{"Key": k, "Value": str(v)} for k, v in tags.items()],
    }


def estimate_cost(settings: SageMakerSettings, instance_type: str | None = None,
                  count: int | None = None, hours: float | None = None) -> float | None:
    """Worst-case USD: price x instances x hours (default: the training job's cap)."""
    instance_type = instance_type or settings.instance_type
    price = settings.prices.get(instance_type)
    if price is None:
        return None
    count = settings.instance_count if count is None else count
    hours = settings.max_runtime_s / 3600 if hours is None else hours
    return float(price) * count * hours


def cost_line(settings: SageMakerSettings) -> str:
    cost = estimate_cost(settings)
    hours = settings.max_runtime_s / 3600
    what = f"{settings.instance_count} x {settings.instance_type} for at most {hours:.2f} h"
    if cost is None:
        return (f"estimated cost: unknown ({what}); add sagemaker.prices."
                f"{settings.instance_type} (USD per hour) to see it")
    spot = " on-demand price; managed spot usually costs less" if settings.spot else ""
    return f"estimated cost: at most ${cost:.2f} ({what}{spot})"


def check_instance(spec: RunSpec, settings: SageMakerSettings) -> None:
    """A run with a GPU learner needs a GPU instance (ml.g*, ml.p*)."""
    if spec.gpus and not re.match(r"^ml\.(g|p)\d", settings.instance_type):
        raise ConfigError(
            f"run {spec.run_id} asks for num_gpus_per_learner={spec.gpus} but "
            f"sagemaker.instance_type {settings.instance_type} has no GPU; use an ml.g* or "
            "ml.p* type (and the CUDA image, see the Dockerfile)"
        )


def check_cost_cap(settings: SageMakerSettings) -> None:
    if settings.max_cost_usd is None:
        return
    cost = estimate_cost(settings)
    if cost is None:
        raise ConfigError(
            f"sagemaker.max_cost_usd is set but sagemaker.prices has no price for "
            f"{settings.instance_type}; add one so the cap can be checked"
        )
    if cost > settings.max_cost_usd:
        raise ConfigError(
            f"worst-case cost ${cost:.2f} exceeds sagemaker.max_cost_usd "
            f"${settings.max_cost_usd:.2f}; lower max_runtime_s or raise the cap"
        )


# --------------------------------------------------------------------------- running it

def _session(settings: SageMakerSettings):
    from ddrl.aws import boto3

    return boto3().session.Session(region_name=settings.region)


def train_on_sagemaker(
    spec: RunSpec,
    run_dir: str | Path,
    settings: SageMakerSettings,
    study: str,
    *,
    print_fn: Callable[[str], None] = print,
    session: Any = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Train ``spec`` as a SageMaker job and unpack its result into ``run_dir``.

    Returns the run record (``run.json``). Raises :class:`SageMakerJobFailed` with
    SageMaker's ``FailureReason`` if the job fails; then no output file is written.
    """
    run_dir = Path(run_dir)
    session = session or _session(settings)
    sm = session.client("sagemaker")
    record_path = RunFolder(run_dir).work / JOB_RECORD

    name = _reattachable(sm, record_path, spec, print_fn)
    if name is None:
        name = _submit_job(sm, record_path, spec, settings, study, print_fn)
    desc = _wait_until_done(sm, session, name, spec, settings, print_fn, sleep)
    status = desc["TrainingJobStatus"]
    if status != "Completed":
        reason = desc.get("FailureReason", "no reason given")
        raise SageMakerJobFailed(f"SageMaker job {name} {status}: {reason}")
    artifact = desc["ModelArtifacts"]["S3ModelArtifacts"]
    extra = _job_summary(desc, name, settings)
    return download_run(session.client("s3"), artifact, run_dir, spec.run_id, extra, print_fn)


def _submit_job(sm: Any, record_path: Path, spec: RunSpec, settings: SageMakerSettings,
                study: str, print_fn: Callable[[str], None]) -> str:
    """Check the instance and the cost cap, create the training job and record its name in
    ``record_path`` for a later attempt to re-attach to; returns the job name."""
    check_instance(spec, settings)
    check_cost_cap(settings)
    name = job_name(spec)
    request = training_job_request(spec, settings, study, name)
    print_fn(f"ddrl {spec.run_id} SageMaker job {name}: {cost_line(settings)}")
    sm.create_training_job(**request)
    atomic.write_json(record_path, {"job_name": name, "run_id": spec.run_id,
                                    "submitted": dt.datetime.now(dt.timezone.utc).isoformat()})
    print_fn(f"ddrl {spec.run_id} submitted {name} "
             f"(checkpoints: {request['CheckpointConfig']['S3Uri']})")
    return name


def _wait_until_done(sm: Any, session: Any, name: str, spec: RunSpec,
                     settings: SageMakerSettings, print_fn: Callable[[str], None],
                     sleep: Callable[[float], None]) -> dict[str, Any]:
    """:func:`wait_for_job` with the job's log lines; on Ctrl-C, says how to re-attach to
    or stop the job, which keeps running."""
    try:
        return wait_for_job(sm, name, settings.poll_s, print_fn=print_fn, sleep=sleep,
                            logs=_log_reader(session, name))
    except KeyboardInterrupt:
        print_fn(f"ddrl {spec.run_id} stopped waiting; SageMaker job {name} keeps running "
                 f"(at most {settings.max_runtime_s} s). Rerun to re-attach, or stop it with "
                 f"`aws sagemaker stop-training-job --training-job-name {name}`")
        raise


def _job_summary(desc: dict[str, Any], name: str, settings: SageMakerSettings) -> dict[str, Any]:
    """The ``sagemaker`` entry of the run record: the job, its instances and time, and its
    estimated and (given a price) billed cost."""
    extra = {
        "backend": "sagemaker",
        "job_name": name,
        "job_arn": desc.get("TrainingJobArn"),
        "model_artifact": desc["ModelArtifacts"]["S3ModelArtifacts"],
        "instance_type": desc.get("ResourceConfig", {}).get("InstanceType"),
        "instance_count": desc.get("ResourceConfig", {}).get("InstanceCount"),
        "spot": bool(desc.get("EnableManagedSpotTraining")),
        "training_time_s": desc.get("TrainingTimeInSeconds"),
        "billable_time_s": desc.get("BillableTimeInSeconds"),
        "estimated_max_cost_usd": estimate_cost(settings),
    }
    price = settings.prices.get(extra["instance_type"] or "")
    if price is not None and extra["billable_time_s"] is not None:
        extra["billed_cost_usd"] = price * extra["billable_time_s"] / 3600 * (extra["instance_count"] or 1)
    return extra


def _reattachable(sm: Any, record_path: Path, spec: RunSpec,
                  print_fn: Callable[[str], None]) -> str | None:
    """The job an earlier attempt started, if it is still running or has completed."""
    if not record_path.exists():
        return None
    try:
        name = json.loads(record_path.read_text())["job_name"]
        status = sm.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
    except Exception as err:  # noqa: BLE001 - unreadable record or job gone: start afresh
        print_fn(f"ddrl {spec.run_id} not re-attaching to the earlier job: {err}")
        return None
    if status in RUNNING or status == "Completed":
        print_fn(f"ddrl {spec.run_id} re-attaching to SageMaker job {name} ({status})")
        return name
    print_fn(f"ddrl {spec.run_id} earlier job {name} ended {status}; submitting a new one "
             "(it resumes from the synced checkpoints)")
    return None


def wait_for_job(sm: Any, name: str, poll_s: float, *, print_fn: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep,
                 logs: Callable[[], Iterable[str]] | None = None) -> dict[str, Any]:
    """Poll until the job ends; print status transitions and ddrl's own progress lines."""
    seen_status: tuple[str, str] | None = None
    seen_transitions = 0
    while True:
        desc = sm.describe_training_job(TrainingJobName=name)
        status = (desc["TrainingJobStatus"], desc.get("SecondaryStatus", ""))
        if status != seen_status:
            print_fn(f"SageMaker job {name}: {status[0]} / {status[1]}")
            seen_status = status
        transitions = desc.get("SecondaryStatusTransitions", [])
        for t in transitions[seen_transitions:]:
            message = t.get("StatusMessage", "")
            print_fn(f"SageMaker job {name}: {t.get('Status')}{': ' + message if message else ''}")
        seen_transitions = len(transitions)
        if logs is not None:
            for line in logs():
                print_fn(line)
        if desc["TrainingJobStatus"] not in RUNNING:
            return desc
        sleep(poll_s)


def _log_reader(session: Any, name: str) -> Callable[[], list[str]]:
    """New ddrl progress lines from the job's CloudWatch log streams (best effort)."""
    state: dict[str, Any] = {"start": 0, "client": None}

    def read() -> list[str]:
        try:
            if state["client"] is None:
                state["client"] = session.client("logs")
            events = state["client"].filter_log_events(logGroupName="/aws/sagemaker/TrainingJobs",
                                            logStreamNamePrefix=name + "/",
                                            startTime=state["start"]).get("events", [])
        except Exception:  # noqa: BLE001 - no logs yet, or no permission: status still shows
            return []
        lines = []
        for event in events:
            state["start"] = max(state["start"], int(event.get("timestamp", 0)) + 1)
            message = event.get("message", "").rstrip()
            if message.startswith("ddrl "):
                lines.append(message)
        return lines

    return read


# --------------------------------------------------------------------------- the artifact

def parse_s3_uri(uri: str) -> tuple[str, str]:
    match = re.match(r"^s3://([^/]+)/(.+)$", uri)
    if not match:
        raise DdrlError(f"not an S3 URI: {uri!r} (expected s3://bucket/key)")
    return match.group(1), match.group(2)


def download_run(s3: Any, artifact_uri: str, run_dir: str | Path, run_id: str,
                 extra: dict[str, Any], print_fn: Callable[[str], None] = print) -> dict[str, Any]:
    """Unpack a job's ``model.tar.gz`` into ``run_dir`` as a local run's outputs.

    The archive is checked first (run id, complete checkpoint); ``run.json`` is written
    last, so a run folder never looks finished when it is not.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    bucket, key = parse_s3_uri(artifact_uri)
    with tempfile.TemporaryDirectory(prefix=".sagemaker-", dir=run_dir) as tmp:
        archive = Path(tmp) / "model.tar.gz"
        try:
            s3.download_file(bucket, key, str(archive))
        except Exception as err:  # botocore's ClientError (404, 403) or a connection error
            raise DdrlError(f"cannot download the model artifact {artifact_uri}: {err}") from None
        unpacked = Path(tmp) / "model"
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")  # refuses absolute paths and ../
        missing = [n for n in (RUN_JSON, PROGRESS_CSV, CHECKPOINT) if not (unpacked / n).exists()]
        if missing:
            raise DdrlError(f"{artifact_uri} is not a ddrl run: {', '.join(missing)} missing")
        record = RunFolder(unpacked).read_record()
        if record.get("run_id") != run_id:
            raise DdrlError(f"{artifact_uri} holds run {record.get('run_id')!r}, expected {run_id!r}")
        checkpoints.read_manifest(unpacked / CHECKPOINT)
        atomic.replace_dir(unpacked / CHECKPOINT, RunFolder(run_dir).checkpoint)
        # policy.pt stays in the artifact: the export rule makes it here as for any run
        with atomic.atomic_path(RunFolder(run_dir).progress_csv) as part:
            shutil.copyfile(unpacked / PROGRESS_CSV, part)
        record["sagemaker"] = extra
        RunFolder(run_dir).write_record(record)
    print_fn(f"ddrl {run_id} downloaded {artifact_uri} into {run_dir}")
    return record
