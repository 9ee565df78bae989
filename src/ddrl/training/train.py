"""Train one run: build the RLlib algorithm, iterate to the budget, checkpoint, resume.

The iterations are :mod:`ddrl.training.loop`'s; this module puts the run folder around them
(:class:`ddrl.runs.RunFolder`'s layout): resume, the checkpoint policy, the SIGTERM stop,
and the run record. A rerun of a killed job resumes from the newest complete checkpoint in
``work/``.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ddrl import atomic
from ddrl.training import checkpoints, faults, provenance
from ddrl.errors import CheckpointError, ConfigError, DdrlError, TrainingInterrupted  # noqa: F401
from ddrl.training.loop import (  # noqa: F401  (build_algorithm_config: imported from here too)
    Progress,
    build_algorithm_config,
    iterate,
    restore_algorithm,
    start_algorithm,
)
from ddrl.training.progress import ProgressLog
from ddrl.algorithms.threads import learner_threads
from ddrl.training.runtime import ray_session
from ddrl.cluster.ray_nodes import env_runner_placement
from ddrl.runs import RunFolder, RunSpec, run_record
from ddrl.training.tracking import Tracker

log = logging.getLogger(__name__)
KEEP_CHECKPOINTS = 3


def keep_checkpoints(config: dict[str, Any] | None) -> int:
    """Intermediate checkpoints to keep: all (0) when the study evaluates them
    (``evaluation.intermediate``), else the newest :data:`KEEP_CHECKPOINTS`. Not part of the
    run id or the train rule's params: it does not change the result."""
    from ddrl.config.eval_config import evaluation_settings

    return 0 if evaluation_settings(config)["intermediate"] else KEEP_CHECKPOINTS


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
    folder.work.mkdir(parents=True, exist_ok=True)
    config = build_algorithm_config(spec)
    started = _first_start(run_dir, provenance.now_iso())
    progress_log = ProgressLog(folder.work_progress_csv)
    resume = checkpoints.latest_valid(folder.work_checkpoints, spec.run_id)
    tracker = Tracker(tracking, spec, run_dir, int(resume[1]["env_steps"]) if resume else 0)
    attempt = _Attempt(spec, folder, progress_log, keep_checkpoints, print_fn, on_iteration,
                       tracker, session=_next_session(progress_log))

    with tracker, ray_session(num_cpus=spec.cpus, num_gpus=spec.gpus, address=ray_address), \
            learner_threads(), _StopFlag() as stop:
        algo = start_algorithm(config, spec.env)
        placement = env_runner_placement(algo)  # nodes and env runners per node
        try:
            progress = attempt.resume(algo, resume)
            reason = attempt.train(algo, progress, stop, last_saved=progress.iteration
                                   if resume else -1)
            rllib_config = _plain(algo.config.to_dict())
        finally:
            algo.stop()
    return attempt.finish(progress, reason, rllib_config=rllib_config, placement=placement,
                          started=started)


def _next_session(progress_log: ProgressLog) -> int:
    """This attempt's number: one past the highest session in the progress so far."""
    return int(max((float(r["session"]) for r in progress_log.rows), default=-1)) + 1


@dataclass
class _Attempt:
    """One attempt at a run: its folder, its progress log and where it reports."""

    spec: RunSpec
    folder: RunFolder
    log: ProgressLog
    keep: int
    print_fn: Callable[[str], None]
    on_iteration: Callable[[dict[str, Any]], None] | None
    tracker: Tracker
    session: int

    def resume(self, algo: Any, resume: tuple[Path, dict[str, Any]] | None) -> Progress:
        """Restore the newest valid checkpoint, if any, and the progress up to it."""
        if resume:
            path, manifest = resume
            restore_algorithm(algo, path)
            self.log.truncate_after(manifest["iteration"])
            self.print_fn(f"ddrl {self.spec.run_id} resuming from {path.name} "
                          f"(iteration {manifest['iteration']}, {manifest['env_steps']} env steps)")
        elif self.log.rows:
            self.log.rows = []  # progress without a checkpoint cannot be continued
        return Progress.from_rows(self.spec.budget, self.log.rows, session=self.session,
                                  iteration=int(algo.iteration))

    def train(self, algo: Any, progress: Progress, stop: _StopFlag, last_saved: int) -> str:
        """Iterate to the budget, checkpointing every ``checkpoint_every`` iterations, on
        SIGTERM (then raise :class:`TrainingInterrupted`) and at the end."""
        for _, row in iterate(algo, progress):
            self.report(row)
            faults.check_env_runners(algo, self.spec.env,
                                     self.spec.fault_tolerance["max_env_runner_restarts"])
            if progress.iteration % self.spec.checkpoint_every == 0 or stop.raised:
                self.save(algo, progress)
                last_saved = progress.iteration
            if stop.raised:
                raise TrainingInterrupted(
                    f"run {self.spec.run_id} interrupted at iteration {progress.iteration}; "
                    "rerun the job to resume from its checkpoint"
                )
        reason = progress.stop_reason()
        self.print_fn(f"ddrl {self.spec.run_id} stopped: {reason} (iteration "
                      f"{progress.iteration}, {progress.env_steps} env steps)")
        if last_saved != progress.iteration:
            self.save(algo, progress)
        return reason

    def report(self, row: dict[str, Any]) -> None:
        """An iteration's row: into progress.csv, the log line, tracking and the callback."""
        self.log.append(row)
        self.print_fn(progress_line(self.spec.run_id, self.spec, row, self.log.rows))
        self.tracker.log(row)
        if self.on_iteration:
            self.on_iteration(row)

    def save(self, algo: Any, progress: Progress) -> None:
        root = self.folder.work_checkpoints
        meta = {"run_id": self.spec.run_id, "algorithm": self.spec.algorithm,
                "env": self.spec.env, "env_steps": progress.env_steps}
        checkpoints.save(algo, root, progress.iteration, meta)
        checkpoints.prune(root, self.keep)

    def finish(self, progress: Progress, reason: str, **facts: Any) -> dict[str, Any]:
        """The final checkpoint and progress.csv in place, and ``run.json`` written."""
        root, run_id = self.folder.work_checkpoints, self.spec.run_id
        final = checkpoints.latest_valid(root, run_id)
        if final is None or final[1]["iteration"] != progress.iteration:
            raise CheckpointError(
                f"run {run_id}: the checkpoint of the last iteration ({progress.iteration}) in "
                f"{root} is missing or fails its manifest check; rerun the job to resume"
            )
        atomic.replace_dir(final[0], self.folder.checkpoint)
        self.log.flush(self.folder.progress_csv)
        record = run_record(
            self.spec, iterations=progress.iteration, env_steps=progress.env_steps,
            time_total_s=progress.time_total_s,
            episode_return_mean=(self.log.last or {}).get("episode_return_mean"),
            episodes=progress.episodes, stop_reason=reason, sessions=self.session + 1,
            finished=provenance.now_iso(), command=sys.argv, provenance=provenance.collect(),
            **facts,
        )
        self.folder.write_record(record)
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
