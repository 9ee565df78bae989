"""Shared constants and helpers of the AWS tests (fixtures are in conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

# Fake values that are easy to grep for; they look nothing like real AWS keys.
FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "ddrl-test-fake-access-id",
    "AWS_SECRET_ACCESS_KEY": "ddrl-test-fake-secret-value",
    "AWS_SESSION_TOKEN": "ddrl-test-fake-session-token",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
}
ROLE = "arn:aws:iam::123456789012:role/ddrl-test-role"  # moto's default fake account
IMAGE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ddrl:test"
BUCKET = "ddrl-test-bucket"


def sagemaker_section(**overrides) -> dict:
    return {"image": IMAGE, "role": ROLE, "bucket": BUCKET, "prefix": "studies",
            "instance_type": "ml.c5.xlarge", "volume_gb": 20, "max_runtime_s": 3600,
            "prices": {"ml.c5.xlarge": 0.23, "ml.m5.large": 0.115}, "poll_s": 0.01,
            **overrides}


def write_policy(model_dir: Path, obs_dim: int = 5, act_dim: int = 2, seed: int = 0):
    """A TorchScript policy with ddrl.agents.export's contract: float32 [B, obs] -> [B, act]."""
    import torch

    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(obs_dim, 16), torch.nn.Tanh(),
                              torch.nn.Linear(16, act_dim), torch.nn.Tanh())
    module = torch.jit.script(net.eval())
    model_dir.mkdir(parents=True, exist_ok=True)
    meta = {"format": "ddrl-policy", "version": 1, "run_id": "test-policy",
            "observation_shape": [obs_dim], "action_shape": [act_dim]}
    torch.jit.save(module, str(model_dir / "policy.pt"), _extra_files={"ddrl.json": json.dumps(meta)})
    return module


TINY_SAGEMAKER_STUDY = {
    "study": "awstiny",
    "checkpoint_every": 1,
    "hyperparameters": {"PPO": {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1,
                                "fcnet_hiddens": [16, 16]}},
    "experiments": [{"algorithms": ["PPO"], "envs": ["InvertedPendulumBulletEnv-v0"],
                     "seeds": [3], "budget": {"env_steps": 200}}],
}


def tiny_spec():
    from ddrl.study.study import Study

    study = Study.from_config(TINY_SAGEMAKER_STUDY)
    (spec,) = study.runs.values()
    return spec


def moto_batch_queue(name: str) -> tuple[str, str]:
    """An IAM role and an enabled job queue on an unmanaged compute environment in moto's Batch,
    named after ``name``; returns (role ARN, queue ARN)."""
    import boto3

    iam = boto3.client("iam")
    role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    batch = boto3.client("batch")
    ce = batch.create_compute_environment(computeEnvironmentName=f"{name}-ce", type="UNMANAGED",
                                          state="ENABLED", serviceRole=role)["computeEnvironmentArn"]
    queue = batch.create_job_queue(jobQueueName=f"{name}-queue", state="ENABLED", priority=1,
                                   computeEnvironmentOrder=[{"order": 1, "computeEnvironment": ce}]
                                   )["jobQueueArn"]
    return role, queue
