"""A study: the config file, validated, expanded into runs with stable ids."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import jsonschema

from ddrl.algorithms import get_algorithm
from ddrl.config.defaults import RunDefaults
from ddrl.envs import check_env_id
from ddrl.config.loading import load_yaml
from ddrl.config.schema import config_schema
from ddrl.config.search_space import Search, attach_searches, best_hyperparameters
from ddrl.errors import ConfigError
from ddrl.runs import RunSpec

__all__ = ["RunSpec", "Study", "expand_runs", "load_yaml", "validate_config"]

def _describe(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "<top level>"
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        parts = list(error.absolute_path)
        if len(parts) >= 2 and parts[-2] == "hyperparameters":
            return (
                f"{path}: unknown {parts[-1]} hyperparameter(s) {extra}; "
                f"{parts[-1]} accepts: {', '.join(allowed)}"
            )
        if parts and parts[-1] == "hyperparameters":
            return f"{path}: unknown algorithm(s) {extra}; expected one of {allowed}"
        return f"{path}: unknown key(s) {extra}; allowed keys: {', '.join(allowed)}"
    if error.validator == "enum":
        return f"{path}: {error.instance!r} is not allowed; expected one of {error.validator_value}"
    if error.validator == "required":
        return f"{path}: {error.message}"
    if error.validator in ("type", "minimum", "exclusiveMinimum", "maximum", "minItems",
                           "minProperties", "uniqueItems", "pattern", "minLength"):
        return f"{path}: {error.message}"
    return f"{path}: {error.message}"


def validate_config(config: Any, source: str = "config") -> None:
    """Check ``config`` against the schema, then the rules a schema cannot say."""
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(config).__name__}")
    validator = jsonschema.Draft202012Validator(config_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [_describe(e) for e in errors[:10]]
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise ConfigError(f"{source}: invalid config:\n  " + "\n  ".join(lines) + more)
    for i, exp in enumerate(config["experiments"]):
        for env in exp["envs"]:
            try:
                check_env_id(env)
            except ConfigError as err:
                raise ConfigError(f"{source}: experiments.{i}.envs: {err}") from None


def expand_runs(config: Mapping[str, Any], source: str = "config",
                inputs: dict[str, list[str]] | None = None) -> dict[str, RunSpec]:
    """All runs of a validated config, keyed by run id, in config order.

    An experiment with ``hyperparameters_from`` whose file does not exist yet is skipped
    (ddrl.config.search_space.attach_searches says why); ``inputs`` collects each run's input
    files.
    """
    runs: dict[str, RunSpec] = {}
    origin: dict[str, str] = {}
    study_hp = config.get("hyperparameters", {})
    defaults = RunDefaults.from_config(config)
    for i, exp in enumerate(config["experiments"]):
        exp_hp = exp.get("hyperparameters", {})
        best_hp = best_hyperparameters(exp, f"{source}: experiments.{i}")
        if best_hp is None:
            continue
        resources = exp.get("resources") or [{}]
        grid = itertools.product(exp["algorithms"], exp["envs"], exp["seeds"], resources)
        for algo, env, seed, res in grid:
            algo_spec = get_algorithm(algo)
            hp = algo_spec.resolve({**study_hp.get(algo, {}), **best_hp.get(algo, {}),
                                    **exp_hp.get(algo, {})})
            spec = defaults.run_spec(
                algorithm=algo, env=env, seed=seed, resources=res, budget=exp["budget"],
                hyperparameters=hp, checkpoint_every=exp.get("checkpoint_every"),
                env_config=exp.get("env_config"),
            )
            where = f"experiments.{i}"
            if spec.run_id in runs:
                raise ConfigError(
                    f"{source}: duplicate run {spec.run_id} ({algo}, {env}, seed {seed}, "
                    f"{spec.resource_label}) defined by {origin[spec.run_id]} and {where}; "
                    "remove one of them"
                )
            runs[spec.run_id] = spec
            origin[spec.run_id] = where
            if inputs is not None and exp.get("hyperparameters_from"):
                inputs[spec.run_id] = [exp["hyperparameters_from"]]
    return runs


@dataclass
class Study:
    """A validated study config and its runs."""

    name: str
    config: dict[str, Any]
    runs: dict[str, RunSpec]
    results_dir: Path = Path("results")
    searches: list[Search] = field(default_factory=list)
    search_runs: dict[str, list[str]] = field(default_factory=dict)  # search id -> run ids
    run_inputs: dict[str, list[str]] = field(default_factory=dict)  # e.g. a best.yaml
    deferred: list[str] = field(default_factory=list)  # experiments waiting for a search

    @classmethod
    def from_config(cls, config: Mapping[str, Any], source: str = "config",
                    results_dir: str | Path = "results") -> "Study":
        config = json.loads(json.dumps(config))  # plain, detached copy
        validate_config(config, source)
        inputs: dict[str, list[str]] = {}
        study = cls(config["study"], config, expand_runs(config, source, inputs),
                    Path(results_dir), run_inputs=inputs)
        attach_searches(study, source)
        return study

    @classmethod
    def from_file(cls, path: str | Path, results_dir: str | Path = "results") -> "Study":
        return cls.from_config(load_yaml(path), str(path), results_dir)

    @property
    def root(self) -> Path:
        return self.results_dir / self.name

    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def __iter__(self) -> Iterator[RunSpec]:
        return iter(self.runs.values())
