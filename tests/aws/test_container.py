"""The SageMaker container's train entry, run for real on a tiny PPO run."""

from __future__ import annotations

import json
import re

import pytest

from ddrl.training import checkpoints
from ddrl.aws.container import spec_from_hyperparameters, train_entry
from ddrl.aws.sagemaker import METRIC_DEFINITIONS, hyperparameters
from ddrl.errors import ConfigError
from ddrl.runs import read_run

from aws.aws_helpers import tiny_spec


def test_hyperparameters_round_trip_to_the_same_run():
    spec = tiny_spec()
    hp = hyperparameters(spec)
    assert all(isinstance(v, str) for v in hp.values())  # SageMaker passes strings
    assert spec_from_hyperparameters(hp) == spec
    tampered = {**hp, "seed": "4"}
    with pytest.raises(ConfigError, match="run_id says"):
        spec_from_hyperparameters(tampered)


def test_train_entry_writes_a_run_into_the_model_dir(container_run):
    root, lines, spec = container_run
    model = root / "model"
    record, progress = read_run(model)
    assert record["run_id"] == spec.run_id and record["status"] == "complete"
    assert progress["env_steps"].iloc[-1] >= 200
    manifest = checkpoints.read_manifest(model / "checkpoint")
    assert manifest["run_id"] == spec.run_id
    # the resumable state lives under /opt/ml/checkpoints, which SageMaker syncs to S3
    synced = root / "checkpoints" / spec.run_id / "work" / "checkpoints"
    assert checkpoints.latest_valid(synced, spec.run_id) is not None
    assert not (root / "output" / "failure").exists()
    assert any(line.startswith(f"ddrl {spec.run_id} iter=1 ") for line in lines)
    # the exported policy that the serve entry loads: raw observation batch -> action batch
    import torch

    from ddrl.agents.export import load_exported

    module, meta = load_exported(model / "policy.pt")
    assert meta["run_id"] == spec.run_id and meta["observation_shape"] == [5]
    assert module(torch.zeros(3, 5)).shape == (3, 1)


def test_metric_regexes_match_real_progress_lines(container_run):
    _, lines, spec = container_run
    _, progress = read_run(container_run[0] / "model")
    line = next(l for l in lines if l.startswith(f"ddrl {spec.run_id} iter=1 "))
    values = {}
    for metric in METRIC_DEFINITIONS:
        match = re.search(metric["Regex"], line)
        assert match, f"{metric['Name']} regex {metric['Regex']!r} does not match {line!r}"
        values[metric["Name"]] = float(match.group(1))
    row = progress.iloc[0]
    assert values["iteration"] == 1
    assert values["env_steps"] == row["env_steps"]
    assert values["env_steps_per_s"] == pytest.approx(row["env_steps_per_s"], abs=0.06)
    assert values["iter_s"] == pytest.approx(row["time_this_iter_s"], abs=0.006)
    ret = row["episode_return_mean"]
    assert values["episode_return_mean"] == pytest.approx(ret, abs=0.006)
    # Lines that are not ddrl's progress lines give no metric values
    for metric in METRIC_DEFINITIONS:
        assert not re.search(metric["Regex"], "INFO ray: iter=3 return=5.0 steps_per_s=9")


def test_return_regex_skips_nan_and_reads_negative_exponent():
    regex = next(m["Regex"] for m in METRIC_DEFINITIONS if m["Name"] == "episode_return_mean")
    base = "ddrl ppo-x-r1x1c1g0-s1-abcd1234 iter=2 env_steps=400/800 return={} steps_per_s=10.0 iter_s=1.00 eta=0:00:01"
    assert re.search(regex, base.format("nan")) is None
    assert float(re.search(regex, base.format("-1.5e-03")).group(1)) == -1.5e-03
    steps = next(m["Regex"] for m in METRIC_DEFINITIONS if m["Name"] == "env_steps")
    assert re.search(steps, base.format("1.0")).group(1) == "400"


def test_train_entry_trains_where_the_synced_checkpoints_are(container_run, tmp_path):
    """A spot restart: SageMaker restores /opt/ml/checkpoints before `train` starts; the
    entry hands train_run exactly that run folder, whose newest valid checkpoint train_run
    resumes from (train_run's resume is tested with the training tests)."""
    import shutil

    root, _, spec = container_run
    restarted = tmp_path / "opt_ml"
    shutil.copytree(root / "input", restarted / "input")
    shutil.copytree(root / "checkpoints", restarted / "checkpoints")
    seen = {}

    def train(spec_arg, run_dir, print_fn):
        seen["spec"], seen["run_dir"] = spec_arg, run_dir
        seen["resume"] = checkpoints.latest_valid(run_dir / "work" / "checkpoints", spec.run_id)
        return json.loads((run_dir / "run.json").read_text())

    train_entry(restarted, train=train, print_fn=lambda _: None)
    assert seen["spec"] == spec
    assert seen["run_dir"] == restarted / "checkpoints" / spec.run_id
    assert seen["resume"] is not None and seen["resume"][1]["iteration"] == 1
    assert (restarted / "model" / "policy.pt").exists()


def test_bad_hyperparameters_write_the_failure_reason(tmp_path):
    hp = hyperparameters(tiny_spec())
    hp["run_id"] = "ppo-other-run"
    (tmp_path / "input" / "config").mkdir(parents=True)
    (tmp_path / "input" / "config" / "hyperparameters.json").write_text(json.dumps(hp))
    with pytest.raises(ConfigError):
        train_entry(tmp_path)
    failure = (tmp_path / "output" / "failure").read_text()
    assert "ConfigError" in failure and "ppo-other-run" in failure
    assert not (tmp_path / "model").exists()
