"""Hyperparameter search spaces: the ``search:`` entries of a study, checked against the
registry and expanded into runs, and ``best.yaml`` fed back into experiments.

A study config may declare searches (``search:``), one algorithm on one env each::

    search:
      - algorithm: PPO
        env: InvertedPendulumBulletEnv-v0
        kind: grid                  # grid: ordinary runs; tune: one Ray Tune job (ddrl.search.tune)
        seeds: [1]
        budget: {env_steps: 20000}
        hyperparameters: {train_batch_size: 1000}      # fixed for every trial
        space:
          lr: {loguniform: [1.0e-5, 1.0e-3]}         # sampled, log scale
          clip_param: [0.1, 0.2, 0.3]                  # a grid axis (tune: a categorical)
          num_epochs: {randint: [5, 20]}               # sampled integer, both ends included
          lambda_: {uniform: [0.9, 1.0]}
        num_samples: 2              # grid: samples per grid point; tune: the trial budget
        metric: {column: episode_return_mean, last: 5, mode: max}

``kind: grid`` crosses the lists and draws every range ``num_samples`` times per grid point
from a seeded generator, so the same config always gives the same trials, and each trial
(times each seed) becomes an ordinary run in ``Study.runs``. ``kind: tune`` hands the same
space to Optuna's TPE sampler with ASHA early stopping (:mod:`ddrl.search.tune`).

The metric of a trial is the mean of ``column`` over its last ``last`` iterations (the
mean over seeds when there are several); trials are ranked by it
(:mod:`ddrl.search.grid`).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema

from ddrl.config.loading import load_yaml
from ddrl.errors import ConfigError
from ddrl.runs import budget_with_defaults
from ddrl.runs import RunSpec, safe_name
from ddrl.study.defaults import RunDefaults, resources_with_defaults

RANGE_KINDS = ("uniform", "loguniform", "randint")
SIGNIFICANT_DIGITS = 6
DEFAULT_METRIC = {"column": "episode_return_mean", "last": 5, "mode": "max"}
DEFAULT_TUNE = {"grace_period": 1, "reduction_factor": 3, "max_concurrent_trials": 1}


# --------------------------------------------------------------------------- the space


@dataclass(frozen=True)
class Dimension:
    """One searched hyperparameter: a list of choices or a range."""

    name: str
    kind: str  # "choice" or one of RANGE_KINDS
    values: tuple[Any, ...] = ()  # choices
    low: float | None = None
    high: float | None = None

    @property
    def is_range(self) -> bool:
        return self.kind != "choice"

    def sample(self, rng: random.Random) -> Any:
        if self.kind == "choice":
            return self.values[rng.randrange(len(self.values))]
        if self.kind == "randint":
            return rng.randint(int(self.low), int(self.high))
        if self.kind == "loguniform":
            value = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            value = rng.uniform(self.low, self.high)
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}")

    def describe(self) -> str:
        if self.kind == "choice":
            return json.dumps(list(self.values))
        return f"{self.kind}[{self.low}, {self.high}]"


@dataclass(frozen=True)
class Metric:
    column: str = "episode_return_mean"
    last: int = 5
    mode: str = "max"

    @property
    def label(self) -> str:
        return f"{self.column} (mean of last {self.last})"

    def of_series(self, values: Iterable[Any]) -> float:
        """Mean of the last ``last`` finite values; NaN when there are none."""
        finite = [float(v) for v in values if is_finite(v)]
        tail = finite[-self.last:]
        return sum(tail) / len(tail) if tail else math.nan


@dataclass(frozen=True)
class Search:
    """A validated search entry of a study config."""

    id: str
    kind: str
    algorithm: str
    env: str
    seeds: tuple[int, ...]
    dimensions: tuple[Dimension, ...]
    fixed: Mapping[str, Any]  # hyperparameters every trial shares (study level + entry)
    num_samples: int
    sampler_seed: int
    metric: Metric
    budget: Mapping[str, float]
    resources: Mapping[str, int]
    checkpoint_every: int
    env_config: Mapping[str, Any] = field(default_factory=dict)
    tune: Mapping[str, Any] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """Everything that decides the search's result, as plain data (a Snakemake param,
        so that a changed search reruns; the tune job compares it to its experiment's)."""
        return json.loads(json.dumps({
            "id": self.id, "kind": self.kind, "algorithm": self.algorithm, "env": self.env,
            "seeds": self.seeds, "fixed": self.fixed, "num_samples": self.num_samples,
            "sampler_seed": self.sampler_seed, "budget": self.budget,
            "resources": self.resources, "checkpoint_every": self.checkpoint_every,
            "env_config": self.env_config, "tune": self.tune,
            "metric": [self.metric.column, self.metric.last, self.metric.mode],
            "space": [[d.name, d.kind, d.values, d.low, d.high] for d in self.dimensions],
        }))

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    def trials(self) -> list[dict[str, Any]]:
        """Grid expansion: the searched values of every trial, in a fixed order.

        Lists are crossed (in the order the space names them); every range is drawn
        ``num_samples`` times per grid point from ``random.Random(sampler_seed)``.
        """
        rng = random.Random(self.sampler_seed)
        axes = [d for d in self.dimensions if not d.is_range]
        ranges = [d for d in self.dimensions if d.is_range]
        out = []
        for point in itertools.product(*(d.values for d in axes)):
            for _ in range(self.num_samples):
                values = dict(zip((d.name for d in axes), point))
                values.update({d.name: d.sample(rng) for d in ranges})
                out.append({name: values[name] for name in self.names})
        return out

    def run_spec(self, values: Mapping[str, Any], seed: int) -> RunSpec:
        """The run of one trial (its searched ``values`` over the fixed ones) and seed."""
        from ddrl.algorithms import get_algorithm

        hp = get_algorithm(self.algorithm).resolve({**self.fixed, **values})
        return self._defaults.run_spec(
            algorithm=self.algorithm, env=self.env, seed=seed, resources=self.resources,
            budget=self.budget, hyperparameters=hp, checkpoint_every=self.checkpoint_every,
            env_config=self.env_config)

    def run_specs(self) -> list[tuple[int, dict[str, Any], RunSpec]]:
        """``(trial index, searched values, RunSpec)`` for every trial and seed."""
        return [(index, values, self.run_spec(values, seed))
                for index, values in enumerate(self.trials()) for seed in self.seeds]

    # Set by parse_searches from the study config (not part of the search's identity).
    _defaults: RunDefaults = field(default_factory=RunDefaults, compare=False, repr=False)


def trial_name(index: int) -> str:
    return f"t{index:03d}"


def search_id(entry: Mapping[str, Any]) -> str:
    if entry.get("name"):
        return entry["name"]
    return f"{entry['algorithm'].lower()}-{safe_name(entry['env'])}"


def is_finite(value: Any) -> bool:
    """A number (or a string of one) that is neither NaN nor infinite."""
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _check_value(where: str, name: str, schema: Mapping[str, Any], value: Any) -> None:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as err:
        raise ConfigError(f"{where}: {name}={value!r} is not a valid value: {err.message}") from None


def parse_dimension(where: str, algo: Any, name: str, raw: Any) -> Dimension:
    """Validate one entry of a search space against the algorithm's parameter."""
    param = algo.params[name]
    where = f"{where}.space.{name}"
    if isinstance(raw, list):
        if not raw:
            raise ConfigError(f"{where}: empty list of choices; give at least one value")
        for value in raw:
            _check_value(where, name, param.schema, value)
        return Dimension(name, "choice", values=tuple(raw))
    if not isinstance(raw, dict) or len(raw) != 1 or next(iter(raw)) not in RANGE_KINDS:
        raise ConfigError(
            f"{where}: expected a list of choices or one of "
            + ", ".join(f"{{{k}: [low, high]}}" for k in RANGE_KINDS) + f", got {raw!r}"
        )
    kind, bounds = next(iter(raw.items()))
    if (not isinstance(bounds, list) or len(bounds) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)):
        raise ConfigError(f"{where}: {kind} needs [low, high] (two numbers), got {bounds!r}")
    low, high = bounds
    if not low < high:
        raise ConfigError(f"{where}: empty range {kind} [{low}, {high}]; low must be below high")
    if kind == "loguniform" and low <= 0:
        raise ConfigError(
            f"{where}: loguniform needs positive bounds, got [{low}, {high}]; "
            "use uniform for ranges that include 0 or negative values"
        )
    types = param.schema.get("type")
    types = set(types if isinstance(types, list) else [types])
    if kind == "randint":
        if not all(float(b).is_integer() for b in bounds):
            raise ConfigError(f"{where}: randint needs integer bounds, got [{low}, {high}]")
        if not types & {"integer", "number"}:
            raise ConfigError(f"{where}: {name} is not numeric; list its choices instead")
        low, high = int(low), int(high)
    elif not types & {"number"}:
        hint = "use randint" if "integer" in types else "list its choices instead"
        raise ConfigError(f"{where}: {name} does not take real values; {hint}")
    for bound in (low, high):
        _check_value(where, name, param.schema, bound)
    return Dimension(name, kind, low=low, high=high)


def parse_searches(config: Mapping[str, Any], source: str = "config") -> list[Search]:
    """The ``search`` entries of a schema-valid config, checked against the registry."""
    from ddrl.algorithms import get_algorithm

    searches: list[Search] = []
    seen: dict[str, int] = {}
    study_hp = config.get("hyperparameters", {})
    defaults = RunDefaults.from_config(config)
    for i, entry in enumerate(config.get("search") or []):
        where = f"{source}: search.{i}"
        algo = get_algorithm(entry["algorithm"])
        sid = search_id(entry)
        if sid in seen:
            raise ConfigError(
                f"{where}: search id {sid!r} is also used by search.{seen[sid]}; give one of "
                "them a distinct `name`"
            )
        seen[sid] = i
        fixed = {**study_hp.get(algo.name, {}), **entry.get("hyperparameters", {})}
        searches.append(_parse_search(where, entry, algo, sid, fixed, defaults))
    return searches


def _parse_search(where: str, entry: Mapping[str, Any], algo: Any, sid: str,
                  fixed: Mapping[str, Any], defaults: RunDefaults) -> Search:
    """The :class:`Search` of one ``search`` entry (id ``sid``), checked against ``algo``;
    ``fixed``: the study's hyperparameters for the algorithm, overridden by the entry's."""
    _check_known_hyperparameters(f"{where}.space", algo, entry["space"])
    _check_known_hyperparameters(f"{where}.hyperparameters", algo, fixed)
    for name, value in entry.get("hyperparameters", {}).items():
        _check_value(f"{where}.hyperparameters", name, algo.params[name].schema, value)
    dims = tuple(parse_dimension(where, algo, n, raw) for n, raw in entry["space"].items())
    metric = _parse_metric(where, entry.get("metric", {}))
    _check_search_env(where, entry["env"])
    search = Search(
        id=sid, kind=entry.get("kind", "grid"), algorithm=algo.name, env=entry["env"],
        seeds=tuple(entry.get("seeds", [0])), dimensions=dims, fixed=fixed,
        num_samples=entry.get("num_samples", 1), sampler_seed=entry.get("seed", 0),
        metric=metric, budget=budget_with_defaults(entry["budget"]),
        resources=resources_with_defaults(entry.get("resources")),
        checkpoint_every=entry.get("checkpoint_every", defaults.checkpoint_every),
        env_config=dict(entry.get("env_config", {})),
        tune={**DEFAULT_TUNE, **entry.get("tune", {})},
        _defaults=defaults,
    )
    if search.kind == "tune" and len(search.seeds) > 1:
        raise ConfigError(f"{where}.seeds: a tune search runs one seed per trial; give one seed")
    return search


def _check_known_hyperparameters(where: str, algo: Any, names: Iterable[str]) -> None:
    """Every one of ``names`` is a hyperparameter of ``algo``."""
    unknown = sorted(set(names) - set(algo.params))
    if unknown:
        raise ConfigError(
            f"{where}: unknown {algo.name} hyperparameter(s) {unknown}; "
            f"{algo.name} accepts: {', '.join(sorted(algo.params))}"
        )


def _parse_metric(where: str, raw: Mapping[str, Any]) -> Metric:
    """A search's ``metric`` over :data:`DEFAULT_METRIC`; its column must be one runs record."""
    from ddrl.training.progress import COLUMNS

    metric = Metric(**{**DEFAULT_METRIC, **raw})
    if metric.column not in COLUMNS:
        raise ConfigError(
            f"{where}.metric.column: runs do not record {metric.column!r}; "
            f"progress.csv has: {', '.join(COLUMNS)}"
        )
    return metric


def _check_search_env(where: str, env: str) -> None:
    """``env`` is a known env id; the error says which search names it."""
    from ddrl.envs import check_env_id

    try:
        check_env_id(env)
    except ConfigError as err:
        raise ConfigError(f"{where}.env: {err}") from None


# --------------------------------------------------------------------------- feeding back
def read_best(path: str | Path, algorithm: str | None = None) -> dict[str, Any]:
    """The hyperparameters of a ``best.yaml``, checked against the registry."""
    from ddrl.algorithms import get_algorithm

    record = load_yaml(path)
    if not isinstance(record, dict) or not isinstance(record.get("hyperparameters"), dict):
        raise ConfigError(f"{path}: not a search result (no `hyperparameters` mapping)")
    algo = record.get("algorithm")
    if algorithm is not None and algo != algorithm:
        raise ConfigError(f"{path}: holds {algo} hyperparameters, but the experiment trains {algorithm}")
    get_algorithm(algo).resolve(record["hyperparameters"])  # unknown names are an error
    return record


def best_hyperparameters(experiment: Mapping[str, Any], where: str) -> dict[str, dict] | None:
    """``{algorithm: hyperparameters}`` from an experiment's ``hyperparameters_from``.

    ``{}`` when it has none; ``None`` when the file does not exist (yet).
    """
    path = experiment.get("hyperparameters_from")
    if not path:
        return {}
    if not Path(path).exists():
        return None
    record = read_best(path)
    if record["algorithm"] not in experiment["algorithms"]:
        raise ConfigError(
            f"{where}.hyperparameters_from: {path} holds {record['algorithm']} hyperparameters, "
            f"but the experiment trains {experiment['algorithms']}"
        )
    return {record["algorithm"]: dict(record["hyperparameters"])}


def best_path(root: str | Path, sid: str) -> Path:
    return Path(root) / "search" / sid / "best.yaml"
