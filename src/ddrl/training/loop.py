"""The training loop: build an RLlib algorithm, step it, and keep where its run stands.

Every place ddrl trains goes through this module:

- the workflow's run, :func:`ddrl.training.train.train_run`, puts resume, the checkpoint
  policy and the run record around :func:`iterate`;
- a Tune trial (:func:`ddrl.search.tune.make_trainable`) calls :meth:`Progress.step` once
  per Tune step and asks :meth:`Progress.stop_reason` whether it is done (Tune keeps the
  checkpoints);
- the bench harness (``bench/harness/throughput.py``) times :func:`iterate`'s iterations.

So a progress row, the stop rules (:mod:`ddrl.training.stop`) and the per-iteration timers
mean the same in all three.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ddrl.algorithms import get_algorithm
from ddrl.errors import ConfigError
from ddrl.runs import RunSpec
from ddrl.training import faults, provenance
from ddrl.training.progress import row_from_result, use_per_iteration_timers
from ddrl.training.stop import episodes_so_far, stop_reason

log = logging.getLogger(__name__)


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


def start_algorithm(config: Any, env: str) -> Any:
    """Build ``config``'s algorithm with per-iteration timers. When an env runner could not
    start, the error says why (:func:`ddrl.training.faults.startup_failure`)."""
    try:
        algo = config.build_algo()
    except Exception as err:
        failure = faults.startup_failure(env, err)
        if failure is None:
            raise
        raise failure from err
    use_per_iteration_timers(algo.metrics)
    return algo


def restore_algorithm(algo: Any, path: str | Path) -> None:
    """Restore ``algo`` from a checkpoint folder (its timers per iteration again: a restore
    replaces the metrics logger's stats with the checkpoint's)."""
    algo.restore_from_path(str(path))
    use_per_iteration_timers(algo.metrics)


@dataclass
class Progress:
    """Where a run stands after its last iteration: what the stop rules read.

    ``budget``: the run's budget (:mod:`ddrl.training.stop`); ``session``: the attempt
    number written into each progress row.
    """

    budget: Mapping[str, Any]
    session: int = 0
    iteration: int = 0
    env_steps: int = 0
    time_total_s: float = 0.0
    episodes: float = 0.0
    return_mean: Any = math.nan

    @classmethod
    def from_rows(cls, budget: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], *,
                  session: int, iteration: int) -> "Progress":
        """The progress of a resumed run: its rows so far (as ``progress.csv`` holds them)."""
        last = rows[-1] if rows else {}
        return cls(budget, session=session, iteration=iteration,
                   env_steps=int(float(last["env_steps"])) if last else 0,
                   time_total_s=float(last["time_total_s"]) if last else 0.0,
                   episodes=episodes_so_far(rows),
                   return_mean=last.get("episode_return_mean", math.nan))

    def step(self, algo: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """One ``algo.train()``: RLlib's result and the progress row made of it."""
        result = algo.train()
        self.iteration = int(algo.iteration)
        self.time_total_s += float(result["time_this_iter_s"])
        row = row_from_result(result, iteration=self.iteration, time_total_s=self.time_total_s,
                              session=self.session, timestamp=time.time())
        self.env_steps = row["env_steps"]
        self.episodes += episodes_so_far([row])
        self.return_mean = row["episode_return_mean"]
        return result, row

    def stop_reason(self) -> str | None:
        """Why the run stops now (:func:`ddrl.training.stop.stop_reason`), or None."""
        return stop_reason(self.budget, env_steps=self.env_steps, time_total_s=self.time_total_s,
                           return_mean=self.return_mean, episodes=self.episodes)


def iterate(algo: Any, progress: Progress) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Step ``algo`` until ``progress`` meets its budget; yield each iteration's result and
    row. The budget is checked before every iteration, so a run that has met it already
    (a resumed one) trains no further."""
    while progress.stop_reason() is None:
        yield progress.step(algo)
