"""The pieces every algorithm entry shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ddrl.errors import ConfigError


@dataclass(frozen=True)
class Param:
    """One hyperparameter: its JSON-schema type, default and a one-line help text.

    ``implicit_default``: a setting added after runs existed, whose default is what those runs
    did. At its default it stays out of resolved hyperparameters (so out of run specs and run
    ids: existing results stay valid); builders read it with :meth:`AlgorithmSpec.setting`.
    """

    schema: dict[str, Any]
    default: Any
    help: str
    implicit_default: bool = False


@dataclass(frozen=True)
class AlgorithmSpec:
    """How ddrl trains one algorithm.

    ``build`` takes the run spec (a :class:`ddrl.runs.RunSpec`) and returns an RLlib
    ``AlgorithmConfig`` with environment, resources, seed and hyperparameters applied.
    """

    name: str
    params: dict[str, Param]
    build: Callable[[Any], Any]
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def defaults(self) -> dict[str, Any]:
        return {name: p.default for name, p in self.params.items()}

    def resolve(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """Defaults updated by ``overrides``; unknown names are an error."""
        unknown = sorted(set(overrides) - set(self.params))
        if unknown:
            raise ConfigError(
                f"unknown {self.name} hyperparameter(s) {unknown}; "
                f"{self.name} accepts: {', '.join(sorted(self.params))}"
            )
        resolved = {**self.defaults(), **overrides}
        return {name: value for name, value in resolved.items()
                if not (self.params[name].implicit_default and value == self.params[name].default)}

    def setting(self, hyperparameters: Mapping[str, Any], name: str) -> Any:
        """``hyperparameters[name]``, or the parameter's default where resolution left it out."""
        return hyperparameters[name] if name in hyperparameters else self.params[name].default


ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register(spec: AlgorithmSpec) -> AlgorithmSpec:
    ALGORITHMS[spec.name] = spec
    return spec


def get_algorithm(name: str) -> AlgorithmSpec:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ConfigError(
            f"unknown algorithm {name!r}; expected one of {sorted(ALGORITHMS)}"
        ) from None


# Shared parameter shapes.
HIDDENS = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}
ACTIVATION = {"enum": ["relu", "tanh", "elu", "silu", "linear"]}
POS_FLOAT = {"type": "number", "exclusiveMinimum": 0}
UNIT_FLOAT = {"type": "number", "minimum": 0, "maximum": 1}
POS_INT = {"type": "integer", "minimum": 1}
NONNEG_INT = {"type": "integer", "minimum": 0}
OBS_FILTER = {"enum": ["NoFilter", "MeanStdFilter"]}

# Hyperparameters every algorithm has, defined once.
GAMMA = Param(UNIT_FLOAT, 0.99, "discount factor")
OBSERVATION_FILTER = Param(OBS_FILTER, "NoFilter", "running mean/std observation normalisation")
