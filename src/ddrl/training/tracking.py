"""Experiment tracking for training runs: TensorBoard event files, opt-in MLflow and W&B.

The ``tracking:`` section of a study config (defaults shown; it never enters run ids)::

    tracking:
      tensorboard: true            # runs/<run_id>/tb/ event files (tensorboardX, a Ray dependency)
      mlflow:
        enabled: false
        tracking_uri: null         # sqlite:///mlflow.db, file:///abs/mlruns, http://host:5000;
                                   # null: $MLFLOW_TRACKING_URI, else MLflow's default
        experiment: null           # null: the study name
      wandb:
        enabled: false
        mode: offline              # offline writes runs/<run_id>/wandb/ only; online uploads
        project: null              # null: the study name
        entity: null

Each progress row (one per iteration) becomes scalars ``train/<column>`` at step = env steps
lifetime, so curves of runs with different batch sizes line up. A resumed run continues the
same MLflow run (found by its ``ddrl.run_id`` tag) and the same W&B run (id from the run id);
TensorBoard gets ``purge_step`` just past the checkpoint's env steps, so rows replayed after a
resume replace the old ones instead of doubling back.

No credentials live in configs: the schema has no key for them. MLflow servers and W&B
online read theirs from the environment (``MLFLOW_TRACKING_TOKEN``, ``WANDB_API_KEY``).
A sink that fails to start stops the run before training with an error naming the setting;
one that fails while logging is switched off with a warning (training goes on).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from pathlib import Path
from typing import Any, Mapping

from ddrl.errors import ConfigError, DdrlError

log = logging.getLogger(__name__)

TB_DIR = "tb"
WANDB_DIR = "wandb"
RUN_ID_TAG = "ddrl.run_id"
# Progress columns that are not metrics.
SKIP_COLUMNS = {"iteration", "env_steps", "session", "timestamp"}

TRACKING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Experiment tracking (off by default except TensorBoard event files); "
                   "never part of run ids.",
    "properties": {
        "tensorboard": {"type": "boolean", "default": True,
                        "description": "write runs/<run_id>/tb/ event files"},
        "mlflow": {
            "type": "object",
            "properties": {
                "enabled": {"type": "boolean", "default": False},
                "tracking_uri": {"type": ["string", "null"], "default": None,
                                 "description": "e.g. sqlite:///mlflow.db; null: "
                                                "$MLFLOW_TRACKING_URI or MLflow's default"},
                "experiment": {"type": ["string", "null"], "default": None,
                               "description": "null: the study name"},
            },
            "additionalProperties": False,
        },
        "wandb": {
            "type": "object",
            "properties": {
                "enabled": {"type": "boolean", "default": False},
                "mode": {"enum": ["offline", "online"], "default": "offline",
                         "description": "offline: files under runs/<run_id>/wandb/ only "
                                        "(`wandb sync` uploads them later)"},
                "project": {"type": ["string", "null"], "default": None,
                            "description": "null: the study name"},
                "entity": {"type": ["string", "null"], "default": None},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}


def tracking_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The study's ``tracking`` section with defaults filled in (errors name the key)."""
    from ddrl.config.sections import merge_section

    s = merge_section(TRACKING_SCHEMA, (config or {}).get("tracking"), "tracking")
    if s["wandb"]["mode"] not in ("offline", "online"):
        raise ConfigError(f"tracking.wandb.mode: expected offline or online, "
                          f"got {s['wandb']['mode']!r}")
    for key in ("tensorboard",):
        if not isinstance(s[key], bool):
            raise ConfigError(f"tracking.{key}: expected true or false, got {s[key]!r}")
    for sink in ("mlflow", "wandb"):
        if not isinstance(s[sink]["enabled"], bool):
            raise ConfigError(f"tracking.{sink}.enabled: expected true or false, "
                              f"got {s[sink]['enabled']!r}")
    s["study"] = (config or {}).get("study")
    return s


def metrics_of(row: Mapping[str, Any]) -> dict[str, float]:
    """``train/<column>`` -> value for the finite numeric columns of a progress row."""
    out = {}
    for key, value in row.items():
        if key in SKIP_COLUMNS or isinstance(value, bool):
            continue
        try:
            v = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v):
            out[f"train/{key}"] = v
    return out


def flat_params(spec: Any) -> dict[str, str]:
    """Run settings as flat ``key -> str`` (MLflow params, W&B config keys)."""
    d = spec.to_dict()
    out = {"run_id": spec.run_id, "algorithm": spec.algorithm, "env": spec.env,
           "seed": str(spec.seed), "resources": spec.resource_label}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = str(value)[:500]  # MLflow caps a param value at 6000 chars

    for key in ("hyperparameters", "budget", "resources"):
        walk(key, d.get(key, {}))
    return out


class _TensorBoard:
    def __init__(self, run_dir: Path, spec: Any, resumed_at: int) -> None:
        from tensorboardX import SummaryWriter

        if not resumed_at and (run_dir / TB_DIR).is_dir():
            import shutil

            shutil.rmtree(run_dir / TB_DIR)  # a fresh start: the old curves are stale
        self.writer = SummaryWriter(logdir=str(run_dir / TB_DIR),
                                    # TensorBoard drops events at steps >= purge_step; the checkpoint's own step stays
                                    purge_step=resumed_at + 1 if resumed_at else None,
                                    flush_secs=30,
                                    # two sessions in one second would share a file name
                                    filename_suffix=f".{time.time_ns()}")
        if not resumed_at:
            self.writer.add_text("run", "\n".join(f"    {k}: {v}"
                                                  for k, v in flat_params(spec).items()), 0)

    def log(self, row: Mapping[str, Any]) -> None:
        step = int(float(row["env_steps"]))
        for tag, value in metrics_of(row).items():
            self.writer.add_scalar(tag, value, step, walltime=float(row["timestamp"]))
        self.writer.flush()  # a live run is readable while it trains

    def close(self, status: str) -> None:
        self.writer.close()


class _MLflow:
    def __init__(self, settings: Mapping[str, Any], study: str | None, spec: Any,
                 resumed_at: int) -> None:
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ConfigError("tracking.mlflow.enabled needs MLflow: pip install 'ddrl[mlflow]'"
                              ) from None
        uri = settings["tracking_uri"]
        name = settings["experiment"] or study or "ddrl"
        try:
            self.client = MlflowClient(tracking_uri=uri)
            exp = self.client.get_experiment_by_name(name)
            exp_id = exp.experiment_id if exp else self.client.create_experiment(name)
            found = self.client.search_runs(
                [exp_id], filter_string=f"tags.`{RUN_ID_TAG}` = '{spec.run_id}'",
                max_results=1, order_by=["attributes.start_time DESC"])
            if found and resumed_at:  # resumed from a checkpoint: continue its run
                self.run_id = found[0].info.run_id
                self.client.update_run(self.run_id, status="RUNNING")
            else:
                run = self.client.create_run(exp_id, run_name=spec.run_id,
                                             tags={RUN_ID_TAG: spec.run_id})
                self.run_id = run.info.run_id
                from mlflow.entities import Param

                self.client.log_batch(self.run_id, params=[
                    Param(k, v) for k, v in flat_params(spec).items()])
        except Exception as err:  # noqa: BLE001 - any store error: name the setting
            raise DdrlError(f"tracking.mlflow: cannot start a run in experiment {name!r} at "
                            f"tracking_uri {uri or '(default)'}: {type(err).__name__}: {err}"
                            ) from None

    def log(self, row: Mapping[str, Any]) -> None:
        from mlflow.entities import Metric

        step = int(float(row["env_steps"]))
        ts = int(float(row["timestamp"]) * 1000)
        self.client.log_batch(self.run_id, metrics=[
            Metric(k, v, ts, step) for k, v in metrics_of(row).items()])

    def close(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=status)


class _Wandb:
    def __init__(self, settings: Mapping[str, Any], study: str | None, spec: Any,
                 run_dir: Path) -> None:
        try:
            import wandb
        except ImportError:
            raise ConfigError("tracking.wandb.enabled needs wandb: pip install 'ddrl[wandb]'"
                              ) from None
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.run = wandb.init(
                project=settings["project"] or study or "ddrl", entity=settings["entity"],
                name=spec.run_id, id=wandb_id(spec.run_id), resume="allow",
                mode=settings["mode"], dir=str(run_dir),  # W&B adds wandb/
                config=flat_params(spec), reinit="create_new",
                settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))
        except Exception as err:  # noqa: BLE001
            raise DdrlError(f"tracking.wandb: cannot start a {settings['mode']} run: "
                            f"{type(err).__name__}: {err}") from None
        self.run.define_metric("env_steps")
        self.run.define_metric("train/*", step_metric="env_steps")

    def log(self, row: Mapping[str, Any]) -> None:
        self.run.log({"env_steps": int(float(row["env_steps"])), **metrics_of(row)})

    def close(self, status: str) -> None:
        self.run.finish(exit_code=0 if status == "FINISHED" else 1)


def wandb_id(run_id: str) -> str:
    """A W&B run id (no slashes or dots, short) that stays the same across resumes."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:16]


class Tracker:
    """The sinks of one training session; a context manager whose exit records the status
    (FINISHED, KILLED for an interrupt, FAILED otherwise)."""

    def __init__(self, settings: Mapping[str, Any] | None, spec: Any, run_dir: str | Path,
                 resumed_at: int = 0) -> None:
        s = settings if settings is not None else tracking_settings(None)
        run_dir = Path(run_dir)
        self.sinks: list[Any] = []
        try:
            if s["tensorboard"]:
                self.sinks.append(_TensorBoard(run_dir, spec, resumed_at))
            if s["mlflow"]["enabled"]:
                self.sinks.append(_MLflow(s["mlflow"], s.get("study"), spec, resumed_at))
            if s["wandb"]["enabled"]:
                self.sinks.append(_Wandb(s["wandb"], s.get("study"), spec, run_dir))
        except BaseException:
            self.close("FAILED")
            raise

    def log(self, row: Mapping[str, Any]) -> None:
        for sink in list(self.sinks):
            try:
                sink.log(row)
            except Exception as err:  # noqa: BLE001 - tracking must not stop training
                log.warning("tracking: %s failed (%s: %s); it is off for the rest of this run",
                            type(sink).__name__.strip("_"), type(err).__name__, err)
                self.sinks.remove(sink)

    def close(self, status: str) -> None:
        for sink in self.sinks:
            try:
                sink.close(status)
            except Exception as err:  # noqa: BLE001
                log.warning("tracking: closing %s failed: %s", type(sink).__name__, err)
        self.sinks = []

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        from ddrl.errors import TrainingInterrupted

        if exc_type is None:
            status = "FINISHED"
        elif issubclass(exc_type, (TrainingInterrupted, KeyboardInterrupt)):
            status = "KILLED"
        else:
            status = "FAILED"
        self.close(status)
