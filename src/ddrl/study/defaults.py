"""Defaults of a run's settings, taken from the config schema, and the one place that turns a
study's settings into a :class:`~ddrl.runs.RunSpec` (study experiments, grid trials and
Tune trials alike)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ddrl.config.schema import CHECKPOINT_EVERY, FAULT_TOLERANCE, ON_MISSING_GPU, RESOURCES
from ddrl.runs import RunSpec


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``{name: default}`` of an object schema's properties that declare one."""
    return {k: v["default"] for k, v in schema["properties"].items() if "default" in v}


def resources_with_defaults(resources: Mapping[str, Any] | None) -> dict[str, int]:
    return {**schema_defaults(RESOURCES), **(resources or {})}


@dataclass(frozen=True)
class RunDefaults:
    """The study-level settings every run of a study shares (its top-level keys)."""

    checkpoint_every: int = CHECKPOINT_EVERY["default"]
    fault_tolerance: Mapping[str, Any] = field(default_factory=lambda: schema_defaults(FAULT_TOLERANCE))
    on_missing_gpu: str = ON_MISSING_GPU["default"]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "RunDefaults":
        return cls(
            checkpoint_every=config.get("checkpoint_every", CHECKPOINT_EVERY["default"]),
            fault_tolerance={**schema_defaults(FAULT_TOLERANCE), **config.get("fault_tolerance", {})},
            on_missing_gpu=config.get("on_missing_gpu", ON_MISSING_GPU["default"]),
        )

    def run_spec(self, *, algorithm: str, env: str, seed: int, resources: Mapping[str, Any] | None,
                 budget: Mapping[str, float], hyperparameters: Mapping[str, Any],
                 checkpoint_every: int | None = None,
                 env_config: Mapping[str, Any] | None = None) -> RunSpec:
        """A run of this study; ``checkpoint_every`` of an experiment or search overrides the
        study's. ``hyperparameters`` must be resolved (every parameter of the algorithm)."""
        fault_tolerance = dict(self.fault_tolerance)
        if (not fault_tolerance.get("store_buffer_in_checkpoints")
                or "replay_buffer_capacity" not in hyperparameters):
            # Off, or no replay buffer (PPO): it changes nothing, so it stays out of the id.
            fault_tolerance.pop("store_buffer_in_checkpoints", None)
        return RunSpec(
            algorithm=algorithm,
            env=env,
            seed=seed,
            resources=resources_with_defaults(resources),
            budget=dict(budget),
            hyperparameters=hyperparameters,
            checkpoint_every=self.checkpoint_every if checkpoint_every is None else checkpoint_every,
            env_config=dict(env_config or {}),
            fault_tolerance=fault_tolerance,
            on_missing_gpu=self.on_missing_gpu,
        )
