"""The SageMaker container contract, runnable without Docker.

SageMaker starts the image as ``<image> train`` or ``<image> serve``; the Dockerfile puts
two small scripts of those names on PATH that call ``ddrl container train|serve``.

Layout under the root (``/opt/ml`` in a real job; ``--root`` or ``$DDRL_SM_ROOT`` in tests)::

    input/config/hyperparameters.json   the run spec (see ddrl.aws.sagemaker.hyperparameters)
    checkpoints/<run_id>/               the run folder while training; SageMaker syncs it to S3
    model/                              progress.csv, run.json, checkpoint/, policy.pt (tarred)
    output/failure                      why training failed (SageMaker shows it as FailureReason)
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ddrl.errors import ConfigError, DdrlError
from ddrl.runs import CHECKPOINT, PROGRESS_CSV, RUN_JSON, RunFolder, RunSpec

log = logging.getLogger(__name__)
DEFAULT_ROOT = "/opt/ml"


@dataclass(frozen=True)
class ContainerPaths:
    root: Path

    @classmethod
    def from_env(cls, root: str | Path | None = None) -> "ContainerPaths":
        return cls(Path(root or os.environ.get("DDRL_SM_ROOT") or DEFAULT_ROOT))

    @property
    def hyperparameters(self) -> Path:
        return self.root / "input" / "config" / "hyperparameters.json"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def model(self) -> Path:
        return self.root / "model"

    @property
    def failure(self) -> Path:
        return self.root / "output" / "failure"


def spec_from_hyperparameters(hp: Mapping[str, Any]) -> RunSpec:
    """Rebuild the run spec; its id must equal the one the workflow asked for."""
    fields = [f for f in RunSpec.__dataclass_fields__ if f in hp]
    try:
        data = {f: json.loads(hp[f]) if isinstance(hp[f], str) else hp[f] for f in fields}
    except json.JSONDecodeError as err:
        raise ConfigError(f"hyperparameters: a run-spec field is not JSON: {err}") from None
    spec = RunSpec.from_dict(data)
    expected = hp.get("run_id")
    if expected is None:
        raise ConfigError("hyperparameters: run_id is missing")
    if spec.run_id != expected:
        raise ConfigError(
            f"hyperparameters describe run {spec.run_id}, but run_id says {expected}; "
            "the image's ddrl differs from the one that submitted the job"
        )
    return spec


def export_policy(spec: RunSpec, run_dir: Path, out: Path) -> Path:
    """Write the run's TorchScript ``policy.pt`` (see ddrl.agents.export) for the serve entry."""
    from ddrl.agents.export import export_run

    export_run(spec, run_dir, out)
    return out


def train_entry(root: str | Path | None = None, *,
                train: Callable[..., dict] | None = None,
                print_fn: Callable[[str], None] = print) -> dict[str, Any]:
    """``<image> train``: train the run in the hyperparameters, resuming from checkpoints."""
    paths = ContainerPaths.from_env(root)
    try:
        try:
            hp = json.loads(paths.hyperparameters.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ConfigError(f"cannot read {paths.hyperparameters}: {err}") from None
        spec = spec_from_hyperparameters(hp)
        if train is None:
            from ddrl.training.train import train_run as train
        run_dir = paths.checkpoints / spec.run_id
        print_fn(f"ddrl {spec.run_id} container train: run folder {run_dir}")
        record = train(spec, run_dir, print_fn=print_fn)
        paths.model.mkdir(parents=True, exist_ok=True)
        shutil.copytree(RunFolder(run_dir).checkpoint, paths.model / CHECKPOINT, dirs_exist_ok=True)
        for name in (PROGRESS_CSV, RUN_JSON):
            shutil.copyfile(run_dir / name, paths.model / name)
        export_policy(spec, run_dir, paths.model / "policy.pt")
        return record
    except BaseException as err:
        paths.failure.parent.mkdir(parents=True, exist_ok=True)
        detail = str(err) if isinstance(err, DdrlError) else traceback.format_exc()
        paths.failure.write_text(f"{type(err).__name__}: {detail}"[:1000])
        raise
