"""Starting and stopping Ray for one job."""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterator

log = logging.getLogger(__name__)


@contextlib.contextmanager
def ray_session(num_cpus: int, num_gpus: int = 0, address: str | None = None) -> Iterator[None]:
    """Use the Ray cluster at ``address`` (or ``$RAY_ADDRESS``), else start a private one.

    A private Ray binds to loopback, with the dashboard off, and is shut down on exit, also
    when the body raises. A cluster we connected to is left running (its owner stops it).
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
        ray.init(
            num_cpus=max(num_cpus, os.cpu_count() or 1),
            num_gpus=num_gpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=True,
            configure_logging=True,
            logging_level=logging.WARNING,
        )
    try:
        yield
    finally:
        ray.shutdown()
