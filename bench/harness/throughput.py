"""Timing training throughput (env steps per second), for the benchmarks in ``bench/``."""

from __future__ import annotations

import math
import time
from typing import Any, Iterator


def time_training(spec: Any, warmup_steps: int, timed_steps: int, num_cpus: int | None = None
                  ) -> dict[str, Any]:
    """Build ``spec``'s algorithm, train ``warmup_steps`` env steps untimed, then time at least
    ``timed_steps`` more (whole training iterations: sampling, learning, weight syncs), with
    the training loop of every run (:mod:`ddrl.training.loop`).

    Returns env steps, seconds, env steps/s, iterations, gradient updates (off-policy; NaN
    for PPO), the learner's device ("remote" for learner actors), and the last iteration's timers
    (seconds per iteration, ddrl's per-iteration sums; see ``ddrl.training.progress``).
    """
    from ddrl.algorithms.threads import learner_threads
    from ddrl.training.loop import Progress, build_algorithm_config, start_algorithm
    from ddrl.training.runtime import ray_session

    with ray_session(num_cpus=num_cpus or max(2, spec.cpus), num_gpus=spec.gpus), \
            learner_threads():
        algo = start_algorithm(build_algorithm_config(spec), spec.env)
        local_learner = getattr(algo.learner_group, "_learner", None)
        try:
            progress = Progress({})
            for _ in _iterations_to(algo, progress, warmup_steps):
                pass
            start, t0, iters, timers, updates = progress.env_steps, time.perf_counter(), 0, {}, 0.0
            for result, _ in _iterations_to(algo, progress, start + timed_steps):
                iters += 1
                timers = result.get("timers", {})
                # Off-policy runs count their gradient updates (ddrl.algorithms.offpolicy).
                updates += float(result.get("ddrl", {}).get("num_gradient_updates", math.nan))
            elapsed = time.perf_counter() - t0
        finally:
            algo.stop()
    done = progress.env_steps
    return {"env_steps": done - start, "seconds": elapsed,
            "steps_per_s": (done - start) / elapsed, "iterations": iters,
            "seconds_per_iter": elapsed / max(iters, 1), "updates": updates,
            "updates_per_s": updates / elapsed,
            "learner_device": str(getattr(local_learner, "_device", "remote")),
            "timers_s": {k: float(v) for k, v in timers.items()
                         if isinstance(v, (int, float))}}


def _iterations_to(algo: Any, progress: Any, env_steps: int) -> Iterator[tuple[dict, dict]]:
    """Whole iterations until ``env_steps`` env steps are sampled (none if they are)."""
    from ddrl.training.loop import iterate

    if env_steps > progress.env_steps:
        progress.budget = {"env_steps": env_steps}
        yield from iterate(algo, progress)


def report_json(result: dict[str, Any], path: str | None = None) -> None:
    """A benchmark's closing output: ``result`` as one JSON line on stdout and, with
    ``path``, the same written atomically to that file."""
    import json

    from ddrl.atomic import write_json

    if path:
        write_json(path, result)
    print(json.dumps(result, default=str))
