"""Starting and stopping Ray for one job."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterator

log = logging.getLogger(__name__)


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


# Ray 2.60 turns _node_ip_address="127.0.0.1" into the primary interface's address, and
# then its gRPC servers (GCS, raylet, workers) listen on all interfaces. With clusters
# "disabled" (its macOS/Windows default, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0) the node
# address stays 127.0.0.1 and every server binds to loopback (tests/faults/test_security.py).
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """While a private Ray starts: keep its node address, and so its listeners, on loopback.

    The processes ray.init starts (GCS, raylet, and the workers the raylet spawns) inherit
    the variable; the driver's setting is restored afterwards, so connecting to a real
    cluster later in the same process is unaffected.
    """
    from ray._private import ray_constants

    old_env, old_flag = os.environ.get(LOOPBACK_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[LOOPBACK_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False  # read at import; ray is imported already
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_flag
        if old_env is None:
            os.environ.pop(LOOPBACK_ENV, None)
        else:
            os.environ[LOOPBACK_ENV] = old_env


@contextlib.contextmanager
def ray_session(num_cpus: int, num_gpus: int = 0, address: str | None = None) -> Iterator[None]:
    """Use the Ray cluster at ``address`` (or ``$RAY_ADDRESS``), else start a private one.

    A private Ray listens on loopback only (:func:`loopback_only`), with the dashboard off,
    and is shut down on exit, also when the body raises. A cluster we connected to is left
    running (its owner stops it).
    """
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        log.info("connecting to the Ray cluster at %s", address)
        ray.init(address=address, log_to_driver=True)
    else:
        # Logical CPUs: the run's processes may outnumber cores on a laptop; Ray must not
        # refuse to place them.
        with loopback_only():
            ray.init(
                num_cpus=max(num_cpus, os.cpu_count() or 1),
                num_gpus=num_gpus,
                include_dashboard=False,
                # Private, kept: ray.init has no public argument to keep a local Ray on loopback.
                _node_ip_address="127.0.0.1",
                log_to_driver=True,
                configure_logging=True,
                logging_level=logging.WARNING,
            )
    try:
        yield
    finally:
        ray.shutdown()
