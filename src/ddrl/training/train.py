"""Train one run: build the RLlib algorithm, iterate to the budget, checkpoint, resume.

The run folder's layout is :class:`ddrl.runs.RunFolder`'s. A rerun of a killed job resumes from the newest complete checkpoint in ``work/``.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ddrl import atomic
from ddrl.training import checkpoints, faults, provenance
from ddrl.algorithms import get_algorithm
from ddrl.errors import CheckpointError, ConfigError, DdrlError, TrainingInterrupted  # noqa: F401
from ddrl.training.progress import ProgressLog, row_from_result, use_per_iteration_timers
from ddrl.algorithms.threads import learner_threads
from ddrl.training.runtime import ray_session
from ddrl.cluster.ray_nodes import env_runner_placement
from ddrl.runs import RunFolder, RunSpec, run_record
from ddrl.training.stop import episodes_so_far, stop_reason
from ddrl.training.tracking import Tracker

log = logging.getLogger(__name__)
KEEP_CHECKPOINTS = 3


def keep_checkpoints(config: dict[str, Any] | None) -> int:
    """Intermediate checkpoints to keep: all (0) when the study evaluates them
    (``evaluation.intermediate``), else the newest :data:`KEEP_CHECKPOINTS`. Not part of the
    run id or the train rule's params: it does not change the result."""
    from ddrl.config.eval_config import evaluation_settings

    return 0 if evaluation_settings(config)["intermediate"] else KEEP_CHECKPOINTS


def build_algorithm_config(spec: RunSpec) -> Any:
    """The RLlib ``AlgorithmConfig`` for a run (GPU availability checked)."""
    spec = _check_gpus(spec)
    return get_algorithm(spec.algorithm).build(spec)


def _check_gpus(spec: RunSpec) -> RunSpec:
    if spec.gpus == 0:
        return spec
    import torch

    if torch.cuda.is_available():
        return spec
    if spec.on_missing_gpu == "cpu":
        log.warning("run asks for %d learner GPU(s) but none is visible; using the CPU "
                    "(on_missing_gpu: cpu)", spec.gpus)
        return RunSpec.from_dict({**spec.to_dict(),
                                  "resources": {**spec.resources, "num_gpus_per_learner": 0}})
    raise ConfigError(
        f"run asks for num_gpus_per_learner={spec.gpus} but torch sees no CUDA device on "
        f"{provenance.host_info()['hostname']}; set num_gpus_per_learner: 0, or "
        "on_missing_gpu: cpu to fall back with a warning"
    )


def budget_done(spec: RunSpec, env_steps: int, time_total_s: float,
                return_mean: float = math.nan, episodes: float = 0) -> bool:
    """Has the run's budget (env steps, time or return threshold) been reached?"""
    return stop_reason(spec.budget, env_steps=env_steps, time_total_s=time_total_s,
                       return_mean=return_mean, episodes=episodes) is not None


def _stop_reason(spec: RunSpec, rows: list[dict[str, Any]], env_steps: int,
                 time_total_s: float) -> str | None:
    last = rows[-1] if rows else {}
    return stop_reason(spec.budget, env_steps=env_steps, time_total_s=time_total_s,
                       return_mean=last.get("episode_return_mean", math.nan),
                       episodes=episodes_so_far(rows))


def _eta(spec: RunSpec, row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    recent = rows[-5:]
    secs = sum(float(r["time_this_iter_s"]) for r in recent)
    steps = sum(float(r["env_steps_this_iter"] or 0) for r in recent)
    remaining = []
    if spec.budget.get("env_steps") and steps > 0 and secs > 0:
        remaining.append(max(0.0, spec.budget["env_steps"] - row["env_steps"]) / (steps / secs))
    if spec.budget.get("time_limit_s"):
        remaining.append(max(0.0, spec.budget["time_limit_s"] - row["time_total_s"]))
    return str(dt.timedelta(seconds=round(min(remaining)))) if remaining else "?"


def progress_line(run_id: str, spec: RunSpec, row: dict[str, Any], rows: list[dict]) -> str:
    """One line per iteration. SageMaker metric regexes match these ``key=value`` pairs."""
    budget = spec.budget.get("env_steps")
    steps = f"{row['env_steps']}/{budget}" if budget else f"{row['env_steps']}"
    ret = row["episode_return_mean"]
    ret_s = "nan" if isinstance(ret, float) and math.isnan(ret) else f"{ret:.2f}"
    return (
        f"ddrl {run_id} iter={row['iteration']} env_steps={steps} return={ret_s} "
        f"steps_per_s={row['env_steps_per_s']:.1f} iter_s={row['time_this_iter_s']:.2f} "
        f"eta={_eta(spec, row, rows)}"
    )


class _StopFlag:
    """Turns SIGTERM into a flag checked between iterations."""

    def __init__(self) -> None:
        self.raised = False
        self._previous: Any = None

    def __enter__(self) -> "_StopFlag":
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread
            self._previous = None
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        log.warning("SIGTERM received: finishing this iteration, then checkpointing")
        self.raised = True

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def train_run(
    spec: RunSpec,
    run_dir: str | Path,
    *,
    ray_address: str | None = None,
    keep_checkpoints: int = KEEP_CHECKPOINTS,
    print_fn: Callable[[str], None] = print,
    on_iteration: Callable[[dict[str, Any]], None] | None = None,
    tracking: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train ``spec`` into ``run_dir``, resuming if an earlier attempt left checkpoints.
    ``tracking``: :func:`ddrl.training.tracking.tracking_settings` (default: TensorBoard only).

    Returns the content of ``run.json``.
    """
    run_dir = Path(run_dir).resolve()  # RLlib needs absolute checkpoint paths
    folder = RunFolder(run_dir)
    run_id = spec.run_id
    work = folder.work
    ckpt_root = folder.work_checkpoints
    work.mkdir(parents=True, exist_ok=True)
    config = build_algorithm_config(spec)

    started = _first_start(run_dir, provenance.now_iso())
    progress = ProgressLog(folder.work_progress_csv)
    resume = checkpoints.latest_valid(ckpt_root, run_id)
    sessions = int(max((float(r["session"]) for r in progress.rows), default=-1)) + 1
    meta = {"run_id": run_id, "algorithm": spec.algorithm, "env": spec.env}
    tracker = Tracker(tracking, spec, run_dir, int(resume[1]["env_steps"]) if resume else 0)

    with tracker, ray_session(num_cpus=spec.cpus, num_gpus=spec.gpus, address=ray_address), \
            learner_threads(), _StopFlag() as stop:
        try:
            algo = config.build_algo()
        except Exception as err:
            failure = faults.startup_failure(spec.env, err)
            if failure is None:
                raise
            raise failure from err
        use_per_iteration_timers(algo.metrics)
        placement = env_runner_placement(algo)  # nodes and env runners per node
        try:
            if resume:
                path, manifest = resume
                algo.restore_from_path(str(path))
                use_per_iteration_timers(algo.metrics)
                progress.truncate_after(manifest["iteration"])
                print_fn(f"ddrl {run_id} resuming from {path.name} "
                         f"(iteration {manifest['iteration']}, {manifest['env_steps']} env steps)")
            elif progress.rows:
                progress.rows = []  # progress without a checkpoint cannot be continued
            iteration = int(algo.iteration)
            last = progress.last
            time_total = float(last["time_total_s"]) if last else 0.0
            env_steps = int(float(last["env_steps"])) if last else 0
            last_saved = iteration if resume else -1
            reason = _stop_reason(spec, progress.rows, env_steps, time_total)
            while reason is None:
                result = algo.train()
                iteration = int(algo.iteration)
                time_total += float(result["time_this_iter_s"])
                row = row_from_result(result, iteration=iteration, time_total_s=time_total,
                                      session=sessions, timestamp=time.time())
                env_steps = row["env_steps"]
                progress.append(row)
                print_fn(progress_line(run_id, spec, row, progress.rows))
                tracker.log(row)
                if on_iteration:
                    on_iteration(row)
                faults.check_env_runners(algo, spec.env,
                                         spec.fault_tolerance["max_env_runner_restarts"])
                if iteration % spec.checkpoint_every == 0 or stop.raised:
                    checkpoints.save(algo, ckpt_root, iteration, {**meta, "env_steps": env_steps})
                    checkpoints.prune(ckpt_root, keep_checkpoints)
                    last_saved = iteration
                reason = _stop_reason(spec, progress.rows, env_steps, time_total)
                if stop.raised:
                    raise TrainingInterrupted(
                        f"run {run_id} interrupted at iteration {iteration}; "
                        "rerun the job to resume from its checkpoint"
                    )
            print_fn(f"ddrl {run_id} stopped: {reason} (iteration {iteration}, "
                     f"{env_steps} env steps)")
            if last_saved != iteration:
                checkpoints.save(algo, ckpt_root, iteration, {**meta, "env_steps": env_steps})
                checkpoints.prune(ckpt_root, keep_checkpoints)
            rllib_config = _plain(algo.config.to_dict())
        finally:
            algo.stop()

    final = checkpoints.latest_valid(ckpt_root, run_id)
    if final is None or final[1]["iteration"] != iteration:
        raise CheckpointError(
            f"run {run_id}: the checkpoint of the last iteration ({iteration}) in {ckpt_root} "
            "is missing or fails its manifest check; rerun the job to resume"
        )
    atomic.replace_dir(final[0], folder.checkpoint)
    progress.flush(folder.progress_csv)
    last = progress.last or {}
    record = run_record(
        spec, iterations=iteration, env_steps=env_steps, time_total_s=time_total,
        episode_return_mean=last.get("episode_return_mean"), rllib_config=rllib_config,
        episodes=episodes_so_far(progress.rows), stop_reason=reason,
        placement=placement, sessions=sessions + 1, started=started,
        finished=provenance.now_iso(), command=sys.argv, provenance=provenance.collect(),
    )
    folder.write_record(record)
    return record


def _first_start(run_dir: Path, started: str) -> str:
    """The start time of the first attempt, kept across resumes."""
    marker = RunFolder(run_dir).work / "started"
    if marker.exists():
        return marker.read_text().strip()
    atomic.write_text(marker, started)
    return started


def _plain(value: Any) -> Any:
    """JSON-safe copy of an RLlib config dict (classes and callables become names)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return getattr(value, "__name__", None) or repr(value)
