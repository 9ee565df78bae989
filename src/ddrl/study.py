"""A study: the config file, validated, expanded into runs with stable ids."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator, Mapping

import jsonschema
import yaml

from ddrl.algorithms import get_algorithm
from ddrl.envs import check_env_id
from ddrl.errors import ConfigError
from ddrl.schema import RESOURCES, config_schema

HASH_LEN = 8


def _plain(value: Any) -> Any:
    """JSON encoder fallback: mappings and sequences that are not dicts or lists."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"run spec value {value!r} ({type(value).__name__}) is not JSON data")


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides one training run's result. Its hash is part of the run id.

    Treat it as immutable, nested mappings included: the id and JSON form are computed once.
    """

    algorithm: str
    env: str
    seed: int
    resources: Mapping[str, int]
    budget: Mapping[str, float]
    hyperparameters: Mapping[str, Any]
    checkpoint_every: int = 10
    env_config: Mapping[str, Any] = field(default_factory=dict)
    fault_tolerance: Mapping[str, Any] = field(default_factory=dict)
    on_missing_gpu: str = "error"

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON copy (a new dict each call; the encoding is computed once)."""
        return json.loads(self._json)

    @functools.cached_property
    def _json(self) -> str:
        # The fields are plain JSON data; dataclasses.asdict's deep copy is the slow part
        # of expanding a large study (bench/dag.py), and the JSON round trip copies anyway.
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)}, default=_plain)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunSpec":
        try:
            return cls(**data)
        except TypeError as err:
            raise ConfigError(f"not a run spec: {err}") from None

    @functools.cached_property
    def digest(self) -> str:
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LEN]

    @property
    def resource_label(self) -> str:
        """Short resource tag, e.g. ``r2x1c1g0`` (runners x envs, CPUs, GPUs) or with ``n2``."""
        r = self.resources
        label = (
            f"r{r['num_env_runners']}x{r['num_envs_per_env_runner']}"
            f"c{r['num_cpus_per_env_runner']}g{r['num_gpus_per_learner']}"
        )
        return label + (f"n{r['nodes']}" if r.get("nodes", 1) > 1 else "")

    @functools.cached_property
    def run_id(self) -> str:
        env = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.env)
        return f"{self.algorithm.lower()}-{env}-{self.resource_label}-s{self.seed}-{self.digest}"

    @property
    def cpus(self) -> int:
        """CPUs the run uses on its nodes: env runners plus the driver/learner."""
        r = self.resources
        return r["num_env_runners"] * r["num_cpus_per_env_runner"] + 1

    @property
    def gpus(self) -> int:
        return self.resources["num_gpus_per_learner"]


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file; syntax errors name the file, line and column."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"cannot read config {path}: {err.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise ConfigError(f"{path}: YAML syntax error at {where}: {err.problem}") from None


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


def check_run(where: str, spec: RunSpec) -> None:
    """What a job would find minutes in: the env's spaces against the algorithm, and
    contradictions between hyperparameters, resources and budget (ddrl.config)."""
    from ddrl.config.relations import check_relations
    from ddrl.config.spaces import check_algorithm_spaces, env_spaces

    try:
        spaces = env_spaces(spec.env, spec.env_config)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    check_algorithm_spaces(spec.algorithm, spec.env, spaces, spec.hyperparameters, where)
    check_relations(where, spec.algorithm, spec.hyperparameters, spec.resources, spec.budget)


def _resources_with_defaults(res: Mapping[str, Any]) -> dict[str, int]:
    defaults = {k: v["default"] for k, v in RESOURCES["properties"].items()}
    return {**defaults, **res}


def expand_runs(config: Mapping[str, Any], source: str = "config",
                inputs: dict[str, list[str]] | None = None) -> dict[str, RunSpec]:
    """All runs of a validated config, keyed by run id, in config order.

    An experiment with ``hyperparameters_from`` whose file does not exist yet is skipped
    (ddrl.search.attach_searches says why); ``inputs`` collects each run's input files.
    """
    from ddrl.search import best_hyperparameters

    runs: dict[str, RunSpec] = {}
    origin: dict[str, str] = {}
    study_hp = config.get("hyperparameters", {})
    ft_defaults = {"max_env_runner_restarts": 10, "restart_delay_s": 1}
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
            spec = RunSpec(
                algorithm=algo,
                env=env,
                seed=seed,
                resources=_resources_with_defaults(res),
                budget=dict(exp["budget"]),
                hyperparameters=hp,
                checkpoint_every=exp.get("checkpoint_every", config.get("checkpoint_every", 10)),
                env_config=dict(exp.get("env_config", {})),
                fault_tolerance={**ft_defaults, **config.get("fault_tolerance", {})},
                on_missing_gpu=config.get("on_missing_gpu", "error"),
            )
            where = f"experiments.{i}"
            check_run(f"{source}: {where} ({algo} on {env})", spec)
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
    searches: list = field(default_factory=list)  # ddrl.search.Search
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
        from ddrl.search import attach_searches

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
