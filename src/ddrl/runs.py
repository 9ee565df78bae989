"""A run: its spec (everything that decides its result), its id, and its folder.

Depends on nothing else in ddrl but errors and atomic, so every stage (training, the
workflow's input functions, analysis, AWS) reads and writes run folders through this module.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ddrl.errors import ConfigError

HASH_LEN = 8


def safe_name(text: str) -> str:
    """``text`` with every run of characters a path or run id cannot hold replaced by ``_``
    (env ids such as ``module:Env-v0`` go into run ids and search ids)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


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
        return f"{self.algorithm.lower()}-{safe_name(self.env)}-{self.resource_label}-s{self.seed}-{self.digest}"

    @property
    def cpus(self) -> int:
        """CPUs the run uses on its nodes: env runners plus the driver/learner."""
        r = self.resources
        return r["num_env_runners"] * r["num_cpus_per_env_runner"] + 1

    @property
    def gpus(self) -> int:
        return self.resources["num_gpus_per_learner"]
