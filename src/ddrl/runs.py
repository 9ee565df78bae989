"""A run: its spec (everything that decides its result), its id, its labels, and its folder.

Layout of a run folder (:class:`RunFolder`)::

    runs/<run_id>/
      work/progress.csv          live progress, rewritten atomically each iteration
      work/checkpoints/iter_N/   intermediate checkpoints (newest few kept)
      progress.csv  run.json  checkpoint/    final outputs, written only at the end

Depends on nothing else in ddrl but errors and atomic, so every stage (training, the
workflow's input functions, analysis, AWS) reads and writes run folders through this module.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ddrl import atomic
from ddrl.errors import ConfigError, DdrlError

if TYPE_CHECKING:
    import pandas as pd

HASH_LEN = 8
HP_KEY_LEN = 6


def content_hash(data: Any, length: int) -> str:
    """Hex digest of ``data``'s canonical JSON: the one hash behind run ids and
    hyperparameter keys."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:length]


def hyperparameter_key(hyperparameters: Mapping[str, Any]) -> str:
    """Short stable key of a run's hyperparameters (runs with other values are another series)."""
    return content_hash(dict(hyperparameters), HP_KEY_LEN)


# Resource settings a scaling series varies: runs that differ only in these (and the seed)
# are one series at several worker counts.
SCALED_RESOURCES = ("num_env_runners", "num_gpus_per_learner", "nodes")


def config_identity(spec: Mapping[str, Any], *, without_resources: tuple[str, ...] = ()) -> str:
    """Short hash of a run spec (``RunSpec.to_dict()``, or ``run.json``'s ``spec``) without
    its seed: runs that share it differ in the seed alone, so they are seeds of one
    configuration. ``without_resources`` leaves those resource settings out as well
    (:data:`SCALED_RESOURCES`: one key per scaling series)."""
    data = {k: v for k, v in spec.items() if k != "seed"}
    if without_resources:
        data["resources"] = {k: v for k, v in dict(data.get("resources") or {}).items()
                             if k not in without_resources}
    return content_hash(data, HASH_LEN)


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
        return content_hash(self.to_dict(), HASH_LEN)

    @property
    def config_id(self) -> str:
        """:func:`config_identity`: the same for every seed of this configuration."""
        return config_identity(self.to_dict())

    @property
    def resource_label(self) -> str:
        """Short resource tag, e.g. ``r2x1c1g0`` (runners x envs, CPUs, GPUs) or with ``n2``."""
        return resource_tag(self.resources)

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


# --------------------------------------------------------------------------- labels


def resource_tag(resources: Mapping[str, int]) -> str:
    """The run-id resource tag, e.g. ``r2x1c1g0`` (runners x envs, CPUs, GPUs) or with ``n2``;
    also the key of ``cost.resource_prices``."""
    r = resources
    label = (
        f"r{r['num_env_runners']}x{r['num_envs_per_env_runner']}"
        f"c{r['num_cpus_per_env_runner']}g{r['num_gpus_per_learner']}"
    )
    return label + (f"n{r['nodes']}" if r.get("nodes", 1) > 1 else "")


def resources_legend(resources: Mapping[str, int]) -> str:
    """Resources in words for figure legends, e.g. ``2 runnersx4 envs, 1 GPU``."""
    res = resources
    gpu = f", {res['num_gpus_per_learner']} GPU" if res["num_gpus_per_learner"] else ""
    envs = f"x{res['num_envs_per_env_runner']} envs" if res["num_envs_per_env_runner"] > 1 else ""
    return f"{res['num_env_runners']} runner{'s' if res['num_env_runners'] > 1 else ''}{envs}{gpu}"


def workers_label(runners: int, gpus: int, nodes: int) -> str:
    """A scaling configuration in words for tables, e.g. ``4 runners + 1 GPU on 2 nodes``."""
    label = f"{runners} runner{'s' if runners != 1 else ''}"
    if gpus:
        label += f" + {gpus} GPU"
    if nodes > 1:
        label += f" on {nodes} nodes"
    return label


# --------------------------------------------------------------------------- the run folder

RUN_JSON = "run.json"
PROGRESS_CSV = "progress.csv"
CHECKPOINT = "checkpoint"
WORK = "work"


class RunNotFinished(DdrlError):
    """A run folder without its final outputs (``run.json``, ``progress.csv``)."""


class RunFolder:
    """Paths of one run folder, and its record (``run.json``) written and read back."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.run_json = self.path / RUN_JSON
        self.progress_csv = self.path / PROGRESS_CSV
        self.checkpoint = self.path / CHECKPOINT
        self.work = self.path / WORK
        self.work_progress_csv = self.work / PROGRESS_CSV
        self.work_checkpoints = self.work / "checkpoints"

    def write_record(self, record: Mapping[str, Any]) -> None:
        atomic.write_json(self.run_json, record)

    def read_record(self) -> dict[str, Any]:
        try:
            return json.loads(self.run_json.read_text())
        except FileNotFoundError:
            raise RunNotFinished(f"run {self.path.name} is not finished: {RUN_JSON} is missing") from None

    def read(self) -> tuple[dict[str, Any], "pd.DataFrame"]:
        """``(run.json, progress.csv)`` of a finished run."""
        import pandas as pd  # lazily: the workflow imports this module to parse

        record = self.read_record()
        try:
            progress = pd.read_csv(self.progress_csv)
        except FileNotFoundError:
            raise RunNotFinished(
                f"run {self.path.name} is not finished: {PROGRESS_CSV} is missing") from None
        return record, progress


def read_run(run_dir: str | Path) -> tuple[dict[str, Any], "pd.DataFrame"]:
    """``(run.json, progress.csv)`` of the finished run in ``run_dir``."""
    return RunFolder(run_dir).read()


def run_record(spec: RunSpec, *, iterations: int, env_steps: int, time_total_s: float,
               episode_return_mean: Any, rllib_config: Any, placement: Any, sessions: int,
               started: str, finished: str, command: list[str],
               provenance: Mapping[str, Any], episodes: float | None = None,
               stop_reason: str | None = None) -> dict[str, Any]:
    """The content of a finished run's ``run.json``; ``stop_reason`` says which budget limit
    ended the run (return_threshold, env_steps or time_limit_s)."""
    return {
        "run_id": spec.run_id,
        "status": "complete",
        "spec": spec.to_dict(),
        "rllib_config": rllib_config,
        "result": {
            "iterations": iterations,
            "env_steps": env_steps,
            "time_total_s": time_total_s,
            "episode_return_mean": episode_return_mean,
            "episodes": episodes,
            "stop_reason": stop_reason,
            "checkpoint": CHECKPOINT,
        },
        "placement": placement,
        "sessions": sessions,
        "started": started,
        "finished": finished,
        "command": command,
        **provenance,
    }


# --------------------------------------------------------------------------- budget

# RLlib's default metrics_num_episodes_for_smoothing (and RLlib 1.1's
# metrics_smoothing_episodes): keeping it as the default leaves runs without a threshold as
# they were.
DEFAULT_RETURN_WINDOW = 100



def return_window(budget: Mapping[str, Any]) -> int:
    """Episodes the return threshold averages over."""
    return int(budget.get("return_window", DEFAULT_RETURN_WINDOW))


def budget_with_defaults(budget: Mapping[str, Any]) -> dict[str, Any]:
    """The budget with its return window written out when it has a threshold."""
    out = dict(budget)
    if "return_threshold" in out:
        out.setdefault("return_window", DEFAULT_RETURN_WINDOW)
    return out


def check_budget(budget: Mapping[str, Any], where: str) -> None:
    """Rules the schema cannot say clearly; raises ConfigError naming ``where``."""
    if "env_steps" not in budget and "time_limit_s" not in budget:
        raise ConfigError(
            f"{where}: budget {dict(budget)} has no env_steps or time_limit_s; a run needs one "
            "of them (a return_threshold alone may never be reached)")
    if "return_window" in budget and "return_threshold" not in budget:
        raise ConfigError(
            f"{where}.return_window: {budget['return_window']!r} without return_threshold; "
            "set budget.return_threshold (the mean return to stop at) or drop return_window")
