"""A study: the config file, validated, expanded into runs with stable ids."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import jsonschema

from ddrl.algorithms import get_algorithm
from ddrl.config.loading import load_yaml
from ddrl.envs import check_env_id
from ddrl.errors import ConfigError
from ddrl.runs import RunSpec
from ddrl.runs import budget_with_defaults, check_budget
from ddrl.study.defaults import RunDefaults
from ddrl.study.schema import config_schema
from ddrl.study.search_space import Search, best_hyperparameters, best_path, parse_searches

__all__ = ["Experiment", "RunSpec", "Study", "attach_searches", "expand_runs",
           "experiment_run_ids", "load_yaml", "validate_config"]

# What an experiment is for, and the per-run outputs each purpose asks for by default:
# timing runs are evaluated (cheap, and it checks they learn at all) but not rendered or
# exported, which in the thesis study saved three of every four jobs of a timing run.
PURPOSES = ("learning", "timing", "both")
RUN_OUTPUTS = ("eval", "video", "policy")
DEFAULT_OUTPUTS = {"learning": RUN_OUTPUTS, "both": RUN_OUTPUTS, "timing": ("eval",)}


@dataclass(frozen=True)
class Experiment:
    """An experiment's name, what it is for, and which per-run outputs it wants.

    Figures and tables group runs by experiment, so a learning run and a timing run with
    the same algorithm, env and resources never share a curve or a speedup cell.
    """

    name: str
    purpose: str = "both"
    outputs: tuple[str, ...] = RUN_OUTPUTS

    @classmethod
    def from_config(cls, exp: Mapping[str, Any], index: int) -> "Experiment":
        purpose = exp.get("purpose", "both")
        outputs = exp.get("outputs", DEFAULT_OUTPUTS[purpose])
        return cls(exp.get("name") or f"experiment-{index + 1}", purpose, tuple(outputs))

    def is_for(self, purpose: str) -> bool:
        """Learning or timing: does this experiment's data feed that kind of figure?"""
        return self.purpose in (purpose, "both")

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
        check_budget(exp["budget"], f"{source}: experiments.{i}.budget")
    for i, entry in enumerate(config.get("search") or []):
        check_budget(entry["budget"], f"{source}: search.{i}.budget")


def check_run(where: str, spec: RunSpec) -> None:
    """What a job would find minutes in: the env's spaces against the algorithm, and
    contradictions between hyperparameters, resources and budget (ddrl.config)."""
    from ddrl.config.relations import check_relations
    from ddrl.envs.spaces import check_algorithm_spaces, env_spaces

    try:
        spaces = env_spaces(spec.env, spec.env_config)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    check_algorithm_spaces(spec.algorithm, spec.env, spaces, spec.hyperparameters, where)
    check_relations(where, spec.algorithm, spec.hyperparameters, spec.resources, spec.budget)



def expand_runs(config: Mapping[str, Any], source: str = "config",
                inputs: dict[str, list[str]] | None = None,
                experiment_of: dict[str, str] | None = None) -> dict[str, RunSpec]:
    """All runs of a validated config, keyed by run id, in config order.

    An experiment with ``hyperparameters_from`` whose file does not exist yet is skipped
    (:func:`attach_searches` says why); ``inputs`` collects each run's input
    files and ``experiment_of`` each run's experiment name.
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
                algorithm=algo, env=env, seed=seed, resources=res, budget=budget_with_defaults(exp["budget"]),
                hyperparameters=hp, checkpoint_every=exp.get("checkpoint_every"),
                env_config=exp.get("env_config"),
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
            if experiment_of is not None:
                experiment_of[spec.run_id] = Experiment.from_config(exp, i).name
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
    experiments: dict[str, Experiment] = field(default_factory=dict)  # by name, config order
    experiment_of: dict[str, str] = field(default_factory=dict)  # run id -> experiment name

    @classmethod
    def from_config(cls, config: Mapping[str, Any], source: str = "config",
                    results_dir: str | Path = "results") -> "Study":
        config = json.loads(json.dumps(config))  # plain, detached copy
        validate_config(config, source)
        inputs: dict[str, list[str]] = {}
        experiment_of: dict[str, str] = {}
        experiments: dict[str, Experiment] = {}
        for i, exp in enumerate(config["experiments"]):
            e = Experiment.from_config(exp, i)
            if e.name in experiments:
                raise ConfigError(f"{source}: experiments.{i}.name: {e.name!r} is already the "
                                  "name of another experiment; experiment names must be unique")
            experiments[e.name] = e
        study = cls(config["study"], config,
                    expand_runs(config, source, inputs, experiment_of),
                    Path(results_dir), run_inputs=inputs, experiments=experiments,
                    experiment_of=experiment_of)
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

    def experiment_runs(self, purpose: str | None = None, output: str | None = None) -> list[str]:
        """Run ids of the experiments (not search trials), in config order, optionally only
        those for ``purpose`` ("learning" or "timing") or that want ``output``."""
        if purpose is not None and purpose not in ("learning", "timing"):
            raise ValueError(f"purpose must be 'learning' or 'timing', got {purpose!r}")
        if output is not None and output not in RUN_OUTPUTS:
            raise ValueError(f"output must be one of {RUN_OUTPUTS}, got {output!r}")
        out = []
        for run_id, name in self.experiment_of.items():
            exp = self.experiments[name]
            if purpose is not None and not exp.is_for(purpose):
                continue
            if output is not None and output not in exp.outputs:
                continue
            out.append(run_id)
        return out


def attach_searches(study: Study, source: str = "config") -> None:
    """Add the searches of ``study.config`` to a :class:`Study`.

    Grid trials become ordinary runs (``study.runs``, listed per search in
    ``study.search_runs``). An experiment whose ``hyperparameters_from`` file is missing
    is deferred when a search of this study writes that file, and an error otherwise.
    """
    import os

    study.searches = parse_searches(study.config, source)
    for search in study.searches:
        if search.kind != "grid":
            continue
        ids = study.search_runs.setdefault(search.id, [])
        for _index, _values, spec in search.run_specs():
            study.runs.setdefault(spec.run_id, spec)  # a trial equal to a run shares it
            ids.append(spec.run_id)
    produced = {os.path.normpath(best_path(study.root, s.id)): s.id for s in study.searches}
    for i, exp in enumerate(study.config["experiments"]):
        path = exp.get("hyperparameters_from")
        if not path or Path(path).exists():
            continue
        if os.path.normpath(path) not in produced:
            written = sorted(str(best_path(study.root, s)) for s in produced.values())
            raise ConfigError(
                f"{source}: experiments.{i}.hyperparameters_from: {path} does not exist and no "
                f"search of this study writes it"
                + (f"; searches write {written}" if written else "")
            )
        study.deferred.append(
            f"experiments.{i} waits for {path} (search {produced[os.path.normpath(path)]}); "
            "the workflow trains it on its next invocation after the search"
        )


def experiment_run_ids(study: Study) -> list[str]:
    """Run ids of the study's experiments (not its search trials)."""
    trials = {r for ids in study.search_runs.values() for r in ids}
    return [r for r in study.runs if r not in trials]
