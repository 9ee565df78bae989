"""How many threads a CPU learner uses, and how: ``$DDRL_LEARNER_THREADS`` and
``$DDRL_LEARNER_THREAD_MODE``, read by the off-policy learners
(:func:`ddrl.algorithms.offpolicy.limit_learner_threads`) and, for the driver process where a
local learner trains, by the train loop (:func:`learner_threads`)."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

LEARNER_THREADS_ENV = "DDRL_LEARNER_THREADS"


def learner_thread_count() -> int:
    """torch intra-op threads for a CPU learner: ``$DDRL_LEARNER_THREADS``, default 1.

    A training job holds one CPU for the driver (where a local learner trains) plus one per
    env runner, so one thread is what it was given. Small-MLP updates gain little from more,
    and torch's OpenMP threads spin when a core is busy elsewhere: PPO on the humanoid, 1 env
    runner, 2-core box with background load, 389 env steps/s with 1 thread vs 80 with 2
    (bench/scaling.py); SAC on the humanoid, 1 env runner, quiet 2-core box: 73.5 env steps/s
    with 1 thread, 18.5 with 2, 41.3 with 2 and OMP_WAIT_POLICY=PASSIVE (2026-12-03).
    """
    raw = os.environ.get(LEARNER_THREADS_ENV, "1")
    try:
        threads = int(raw)
        if threads < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"${LEARNER_THREADS_ENV} must be an integer >= 1, got {raw!r}") from None
    return threads


# How a CPU learner given 2+ threads uses them (ddrl.algorithms.offpolicy.limit_learner_threads).
LEARNER_THREAD_MODE_ENV = "DDRL_LEARNER_THREAD_MODE"
LEARNER_THREAD_MODES = ("kernels", "parts")


def learner_thread_mode() -> str:
    """``$DDRL_LEARNER_THREAD_MODE``: ``kernels`` (default; torch's threads share each op,
    dropped to one while the env runners sample) or ``parts`` (the minibatch split over
    Python threads)."""
    mode = os.environ.get(LEARNER_THREAD_MODE_ENV, LEARNER_THREAD_MODES[0])
    if mode not in LEARNER_THREAD_MODES:
        raise ValueError(f"${LEARNER_THREAD_MODE_ENV} must be one of {list(LEARNER_THREAD_MODES)}, "
                         f"got {mode!r}")
    return mode


@contextlib.contextmanager
def learner_threads() -> Iterator[int]:
    """Set torch's intra-op threads in this (driver) process, where a local CPU learner
    trains, to :func:`learner_thread_count`; restore them on exit. Ray's workers (env
    runners, Tune trials) already get one thread per CPU they hold."""
    import torch

    threads = learner_thread_count()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
