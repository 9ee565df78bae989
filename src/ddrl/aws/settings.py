"""The ``sagemaker:`` section of a study config, completed from the environment.

Account-specific values (image URI, IAM role ARN, bucket) may be left out of the config and
given as ``DDRL_SAGEMAKER_IMAGE``, ``DDRL_SAGEMAKER_ROLE`` and ``DDRL_SAGEMAKER_BUCKET``, so a
study file can be committed without naming an account.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from ddrl.errors import ConfigError

ENV_FALLBACKS = {
    "image": "DDRL_SAGEMAKER_IMAGE",
    "role": "DDRL_SAGEMAKER_ROLE",
    "bucket": "DDRL_SAGEMAKER_BUCKET",
}

SAGEMAKER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "SageMaker training and endpoints (train_backend: sagemaker, ddrl deploy). "
                   "image, role and bucket may come from DDRL_SAGEMAKER_IMAGE/_ROLE/_BUCKET.",
    "properties": {
        "image": {"type": "string", "minLength": 1,
                  "description": "container image URI (ECR), built from the Dockerfile"},
        "role": {"type": "string", "pattern": "^arn:aws[a-z-]*:iam::",
                 "description": "IAM role ARN that SageMaker assumes"},
        "bucket": {"type": "string", "pattern": "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
                   "description": "S3 bucket for model artifacts and checkpoints"},
        "prefix": {"type": "string", "default": "ddrl", "pattern": "^[A-Za-z0-9_.\\-/]*$",
                   "description": "key prefix inside the bucket"},
        "region": {"type": "string", "description": "default: boto3's (AWS_REGION, ~/.aws/config)"},
        "instance_type": {"type": "string", "pattern": "^ml\\.", "default": "ml.c5.2xlarge"},
        "instance_count": {"type": "integer", "minimum": 1, "maximum": 1, "default": 1,
                           "description": "one host per run (multi-host Ray is not implemented)"},
        "volume_gb": {"type": "integer", "minimum": 1, "default": 30},
        "spot": {"type": "boolean", "default": False,
                 "description": "managed spot training; resumes from the synced checkpoints"},
        "max_runtime_s": {"type": "integer", "minimum": 60, "maximum": 2419200, "default": 14400,
                          "description": "StoppingCondition.MaxRuntimeInSeconds (the cost cap)"},
        "max_wait_s": {"type": "integer", "minimum": 60,
                       "description": "spot only: MaxWaitTimeInSeconds (default 2 x max_runtime_s)"},
        "max_cost_usd": {"type": "number", "exclusiveMinimum": 0,
                         "description": "refuse to submit a job whose worst-case cost is higher"},
        "prices": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0},
                   "description": "USD per instance-hour, by instance type (for the estimate)"},
        "poll_s": {"type": "number", "exclusiveMinimum": 0, "default": 30},
        "serve_instance_type": {"type": "string", "pattern": "^ml\\.", "default": "ml.m5.large"},
        "serve_instance_count": {"type": "integer", "minimum": 1, "default": 1},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "additionalProperties": False,
}

BACKEND_SCHEMA: dict[str, Any] = {
    "enum": ["local", "sagemaker"],
    "default": "local",
    "description": "where the train rule trains: here (local, Slurm, Batch) or a SageMaker job",
}


def _defaults() -> dict[str, Any]:
    return {k: v["default"] for k, v in SAGEMAKER_SCHEMA["properties"].items() if "default" in v}


@dataclass(frozen=True)
class SageMakerSettings:
    image: str
    role: str
    bucket: str
    prefix: str = "ddrl"
    region: str | None = None
    instance_type: str = "ml.c5.2xlarge"
    instance_count: int = 1
    volume_gb: int = 30
    spot: bool = False
    max_runtime_s: int = 14400
    max_wait_s: int | None = None
    max_cost_usd: float | None = None
    prices: Mapping[str, float] = field(default_factory=dict)
    poll_s: float = 30
    serve_instance_type: str = "ml.m5.large"
    serve_instance_count: int = 1
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None,
                    env: Mapping[str, str] | None = None) -> "SageMakerSettings":
        """Settings from a validated ``sagemaker:`` section plus the environment fallbacks."""
        env = os.environ if env is None else env
        values = {**_defaults(), **(section or {})}
        missing = []
        for key, var in ENV_FALLBACKS.items():
            if not values.get(key) and env.get(var):
                values[key] = env[var]
            if not values.get(key):
                missing.append(f"sagemaker.{key} (or ${var})")
        if missing:
            raise ConfigError("SageMaker needs " + ", ".join(missing) + "; none was given")
        if not re.match(r"^arn:aws[a-z-]*:iam::", values["role"]):
            raise ConfigError(f"sagemaker.role: {values['role']!r} is not an IAM role ARN "
                              "(expected arn:aws:iam::<account>:role/<name>)")
        if values["spot"]:
            values.setdefault("max_wait_s", 2 * values["max_runtime_s"])
            if values["max_wait_s"] is None:
                values["max_wait_s"] = 2 * values["max_runtime_s"]
            if values["max_wait_s"] < values["max_runtime_s"]:
                raise ConfigError(
                    f"sagemaker.max_wait_s ({values['max_wait_s']}) must be >= max_runtime_s "
                    f"({values['max_runtime_s']}) for spot training"
                )
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"sagemaker: unknown key(s) {sorted(unknown)}")
        return cls(**values)

    def s3_uri(self, *parts: str) -> str:
        key = "/".join(p.strip("/") for p in (self.prefix, *parts) if p and p.strip("/"))
        return f"s3://{self.bucket}/{key}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
