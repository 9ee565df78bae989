"""Starting and stopping Ray for one job."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterator

# Re-exported for bench/ (peers.py, sac_layouts.py, harness/throughput.py), which imports
# them from here; the learner-thread settings are the algorithms' (ddrl.algorithms.threads).
from ddrl.algorithms.threads import (  # noqa: F401
    LEARNER_THREAD_MODE_ENV, LEARNER_THREADS_ENV, learner_threads)

log = logging.getLogger(__name__)


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
