"""Algorithm registry: one entry per algorithm ddrl can train.

Each entry names the hyperparameters it accepts (with types and defaults) and builds an
RLlib ``AlgorithmConfig`` from a resolved run spec. Adding an algorithm means adding one
module here that calls :func:`register`.
"""

from __future__ import annotations

from ddrl.algorithms.base import ALGORITHMS, AlgorithmSpec, Param, get_algorithm, register

# Importing the modules registers them.
from ddrl.algorithms import ppo as _ppo  # noqa: F401,E402
from ddrl.algorithms import sac as _sac  # noqa: F401,E402
from ddrl.algorithms import td3 as _td3  # noqa: F401,E402

__all__ = ["ALGORITHMS", "AlgorithmSpec", "Param", "get_algorithm", "register"]
