"""Run specs for the algorithm unit tests, built the way the study expansion builds them."""

from __future__ import annotations

from typing import Any, Mapping

from ddrl.algorithms import get_algorithm
from ddrl.config.schema import RESOURCES
from ddrl.runs import RunSpec

# No env-runner restarts: a test should fail on the first runner error, not retry it.
NO_RESTARTS = {"max_env_runner_restarts": 0, "restart_delay_s": 1}


def unit_spec(algorithm: str, hyperparameters: Mapping[str, Any] | None = None, *,
              env: str = "Pendulum-v1", seed: int = 3, env_steps: int = 1000,
              fault_tolerance: Mapping[str, Any] | None = None, **resources: int) -> RunSpec:
    """A RunSpec at the schema's resource defaults (``resources`` overrides them, e.g.
    ``num_env_runners=0``), with ``hyperparameters`` resolved over the algorithm's defaults."""
    res = {k: v["default"] for k, v in RESOURCES["properties"].items()}
    unknown = set(resources) - set(res)
    if unknown:
        raise TypeError(f"unknown resource settings {sorted(unknown)}; known: {sorted(res)}")
    res.update(resources)
    return RunSpec(algorithm=algorithm, env=env, seed=seed, resources=res,
                   budget={"env_steps": env_steps},
                   hyperparameters=get_algorithm(algorithm).resolve(dict(hyperparameters or {})),
                   fault_tolerance={**NO_RESTARTS, **(fault_tolerance or {})})
