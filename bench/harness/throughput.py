"""Timing training throughput (env steps per second), for the benchmarks in ``bench/``."""

from __future__ import annotations

import math
import time
from typing import Any


def time_training(spec: Any, warmup_steps: int, timed_steps: int, num_cpus: int | None = None
                  ) -> dict[str, Any]:
    """Build ``spec``'s algorithm, train ``warmup_steps`` env steps untimed, then time at least
    ``timed_steps`` more (whole training iterations: sampling, learning, weight syncs).

    Returns env steps, seconds, env steps/s, iterations, gradient updates (off-policy; NaN
    for PPO), the learner's device ("remote" for learner actors), and the last iteration's timers
    (seconds per iteration, ddrl's per-iteration sums; see ``ddrl.training.train``).
    """
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    from ddrl.training.progress import use_per_iteration_timers
    from ddrl.training.runtime import learner_threads, ray_session
    from ddrl.training.train import build_algorithm_config

    with ray_session(num_cpus=num_cpus or max(2, spec.cpus), num_gpus=spec.gpus), \
            learner_threads():
        algo = build_algorithm_config(spec).build_algo()
        use_per_iteration_timers(algo.metrics)
        local_learner = getattr(algo.learner_group, "_learner", None)
        try:
            done = 0
            while done < warmup_steps:
                done = int(algo.train()[NUM_ENV_STEPS_SAMPLED_LIFETIME])
            start, t0, iters, timers, updates = done, time.perf_counter(), 0, {}, 0.0
            while done - start < timed_steps:
                result = algo.train()
                done = int(result[NUM_ENV_STEPS_SAMPLED_LIFETIME])
                iters += 1
                timers = result.get("timers", {})
                # Off-policy runs count their gradient updates (ddrl.algorithms.offpolicy).
                updates += float(result.get("ddrl", {}).get("num_gradient_updates", math.nan))
            elapsed = time.perf_counter() - t0
        finally:
            algo.stop()
    return {"env_steps": done - start, "seconds": elapsed,
            "steps_per_s": (done - start) / elapsed, "iterations": iters,
            "seconds_per_iter": elapsed / max(iters, 1), "updates": updates,
            "updates_per_s": updates / elapsed,
            "learner_device": str(getattr(local_learner, "_device", "remote")),
            "timers_s": {k: float(v) for k, v in timers.items()
                         if isinstance(v, (int, float))}}


def report_json(result: dict[str, Any], path: str | None = None) -> None:
    """A benchmark's closing output: ``result`` as one JSON line on stdout and, with
    ``path``, the same written atomically to that file."""
    import json

    from ddrl.atomic import write_json

    if path:
        write_json(path, result)
    print(json.dumps(result, default=str))
