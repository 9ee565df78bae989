"""Slurm: what a training run asks the scheduler for, and checks before submission.

The Snakemake Slurm executor submits every training run as one job. A run's resources
become its request (:func:`job_request`): one task per node, ``cpus_per_task`` = env runners
on that node x CPUs per runner, + 1 for the driver/learner on the first node, GPUs for the
learner, memory per CPU from the profile, and a runtime that grows with the attempt.

A run with ``nodes > 1`` trains on a Ray cluster started inside the job:
:mod:`ddrl.cluster.ray_nodes`.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ddrl.errors import ConfigError, DdrlError
from ddrl.runs import RunSpec

#: ``software:`` in a study config: how cluster jobs get their software. Training and the
#: other rules load these environment modules (``--sdm env-modules``) or run in this
#: container (``--sdm apptainer``); the image is the one built from the project's Dockerfile.
SOFTWARE_SCHEMA = {
    "type": "object",
    "description": "software on a cluster: environment modules and/or a container image",
    "properties": {
        "envmodules": {"type": "array", "items": {"type": "string", "minLength": 1},
                       "description": "modules to load, e.g. [python/3.11, ray/2.60]"},
        "container": {"type": "string", "minLength": 1,
                      "description": "image URI for --sdm apptainer, e.g. docker://REGISTRY/ddrl:TAG"},
    },
    "additionalProperties": False,
}

SLURM_SCHEMA = {
    "type": "object",
    "description": "how training jobs ask Slurm for resources (Slurm profiles)",
    "properties": {
        "gpu_request": {
            "enum": ["gpus", "gres"], "default": "gpus",
            "description": "gpus: --gpus=N (a job total); gres: --gres=gpu:N (per node, as "
                           "CTE-POWER's job scripts ask)"},
    },
    "additionalProperties": False,
}


# -- the job request ----------------------------------------------------------------------

#: Runtime (minutes) of a training job whose budget has no time limit, on the first attempt.
DEFAULT_TRAIN_RUNTIME_MIN = 120
#: Minutes added to a time-limited budget for start-up, checkpoints and the final save.
RUNTIME_MARGIN_MIN = 10
#: Seconds a tune trial is assumed to take when its budget has no time limit.
DEFAULT_TRIAL_S = 3600


class SlurmError(DdrlError):
    """A Slurm request cannot be satisfied, or the Ray cluster inside a job failed."""


def runners_per_node(num_env_runners: int, nodes: int) -> list[int]:
    """Env runners on each node, first node first: as even as possible, the first nodes
    taking the remainder. Raises when some node would have none."""
    if nodes < 1:
        raise ConfigError(f"nodes must be >= 1, got {nodes}")
    if num_env_runners < nodes:
        raise ConfigError(
            f"nodes={nodes} but num_env_runners={num_env_runners}: a multi-node run needs at "
            f"least one env runner per node; set num_env_runners >= {nodes} or fewer nodes"
        )
    base, extra = divmod(num_env_runners, nodes)
    return [base + (1 if i < extra else 0) for i in range(nodes)]


def runtime_min(spec: RunSpec, attempt: int = 1) -> int:
    """Slurm runtime (minutes) of a training job: the budget's time limit plus a margin (or
    :data:`DEFAULT_TRAIN_RUNTIME_MIN`), times the attempt, so a retry after a timeout gets
    more time and resumes from the last checkpoint."""
    limit = spec.budget.get("time_limit_s")
    base = (math.ceil(limit / 60) + RUNTIME_MARGIN_MIN) if limit else DEFAULT_TRAIN_RUNTIME_MIN
    return base * max(1, int(attempt))


def tune_job_runtime_min(*, num_samples: int, max_concurrent_trials: int,
                         time_budget_s: float | None = None,
                         trial_time_limit_s: float | None = None, attempt: int = 1) -> int:
    """Slurm runtime (minutes) of a tune job: its time budget, else ``num_samples`` trials of
    ``trial_time_limit_s`` each (:data:`DEFAULT_TRIAL_S` when None) run
    ``max_concurrent_trials`` at a time; 10% and :data:`RUNTIME_MARGIN_MIN` on top, times the
    attempt (the tune job resumes its experiment)."""
    trial_s = DEFAULT_TRIAL_S if trial_time_limit_s is None else trial_time_limit_s
    seconds = time_budget_s or num_samples * trial_s / max_concurrent_trials
    return int(seconds * 1.1 / 60 + RUNTIME_MARGIN_MIN) * attempt


def tune_runtime_min(search: Any, attempt: int = 1) -> int:
    """:func:`tune_job_runtime_min` of a search's settings (its ``tune``, ``num_samples`` and
    ``budget``). Kept for workflow/rules/common.smk, which passes the search; new callers pass
    the numbers."""
    return tune_job_runtime_min(
        num_samples=search.num_samples,
        max_concurrent_trials=search.tune["max_concurrent_trials"],
        time_budget_s=search.tune.get("time_budget_s"),
        trial_time_limit_s=search.budget.get("time_limit_s"), attempt=attempt)


@dataclass(frozen=True)
class JobRequest:
    """What one training run asks Slurm for (per node where it says so)."""

    nodes: int
    tasks: int                 # one task per node
    cpus_per_task: int         # per node: the busiest node's runners x CPUs + driver
    gpus: int                  # learner GPUs, on the first node
    runners_per_node: tuple[int, ...]

    def as_resources(self, gpu_request: str = "gpus") -> dict[str, int | str]:
        """Snakemake resources for snakemake-executor-plugin-slurm (2.x).

        ``gpu_request`` (config ``slurm.gpu_request``) says how the GPUs are asked for:

        - ``gpus``: resource ``gpu`` -> ``--gpus=N`` (a job total). The plugin then also
          adds ``--ntasks-per-gpu=<tasks>`` in place of ``--ntasks``; with one task a node
          and one node that is one task, as wanted.
        - ``gres``: resource ``gres`` -> ``--gres=gpu:N`` (per node), as CTE-POWER's job
          scripts ask (``--gres=gpu:4``). ``tasks_per_gpu: 0`` keeps the plugin from adding
          ``--ntasks-per-gpu``, which with N GPUs on each of several nodes would ask for
          nodes x N x tasks tasks; Slurm's default, one task a node, is what ddrl starts.
          A CPU-only run gets no ``--gres``.
        """
        res: dict[str, int | str] = {"nodes": self.nodes, "tasks": self.tasks,
                                     "cpus_per_task": self.cpus_per_task}
        if gpu_request == "gres":
            return {**res, "gpu": 0, "gres": f"gpu:{self.gpus}" if self.gpus else "",
                    "tasks_per_gpu": 0}
        if gpu_request != "gpus":
            raise ValueError(f"slurm.gpu_request: {gpu_request!r}; expected 'gpus' or 'gres'")
        return {**res, "gpu": self.gpus, "gres": "", "tasks_per_gpu": self.tasks}


def job_request(spec: RunSpec) -> JobRequest:
    r = spec.resources
    nodes = int(r.get("nodes", 1))
    per_node = runners_per_node(r["num_env_runners"], nodes)
    cpus = per_node[0] * r["num_cpus_per_env_runner"] + 1  # the first node is the busiest
    return JobRequest(nodes=nodes, tasks=nodes, cpus_per_task=cpus,
                      gpus=int(r["num_gpus_per_learner"]), runners_per_node=tuple(per_node))


# -- what the cluster offers --------------------------------------------------------------

def _scontrol(*args: str) -> str:
    exe = shutil.which("scontrol")
    if exe is None:
        raise SlurmError("scontrol not found: run this where Slurm's client commands are on PATH")
    proc = subprocess.run([exe, "-o", *args], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise SlurmError(f"scontrol {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout}")
    return proc.stdout


def parse_records(text: str) -> list[dict[str, str]]:
    """``scontrol -o show ...`` output: one record a line, ``Key=Value`` tokens."""
    records = []
    for line in text.splitlines():
        rec: dict[str, str] = {}
        # values may contain spaces only in a few keys (Reason=...); those come last
        for m in re.finditer(r"(\w+)=(\S*)", line):
            rec.setdefault(m.group(1), m.group(2))
        if rec:
            records.append(rec)
    return records


def _gres_gpus(gres: str) -> int:
    total = 0
    for item in filter(None, gres.split(",")):
        parts = re.sub(r"\(.*\)", "", item).split(":")
        if parts[0] == "gpu":
            total += int(parts[-1]) if parts[-1].isdigit() else 1
    return total


@dataclass(frozen=True)
class Node:
    name: str
    cpus: int
    mem_mb: int
    gpus: int
    addr: str


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[Node, ...]
    max_nodes: int | None
    max_time_min: int | None
    default: bool = False


def _minutes(value: str) -> int | None:
    """Slurm time (``[D-]HH:MM:SS``, ``MM``, ``UNLIMITED``) in minutes."""
    if not value or value.upper() in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    days = 0
    if "-" in value:
        d, value = value.split("-", 1)
        days = int(d)
    parts = [int(p) for p in value.split(":")]
    if len(parts) == 1:
        h, m, s = 0, parts[0], 0
    elif len(parts) == 2:
        h, m, s = 0, parts[0], parts[1]
    else:
        h, m, s = parts[-3:]
    return days * 1440 + h * 60 + m + (1 if s else 0)


def expand_hostlist(expr: str) -> list[str]:
    """Slurm's compressed host list (``n[1-3,7],gpu01``) as names, through scontrol."""
    exe = shutil.which("scontrol")
    if exe is None:
        raise SlurmError("scontrol not found: cannot expand the node list")
    out = subprocess.run([exe, "show", "hostnames", expr], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return out.split()


def read_partitions() -> dict[str, Partition]:
    nodes = {rec["NodeName"]: Node(name=rec["NodeName"], cpus=int(rec.get("CPUTot", 0)),
                                   mem_mb=int(rec.get("RealMemory", 0)),
                                   gpus=_gres_gpus(rec.get("Gres", "")),
                                   addr=rec.get("NodeAddr") or rec["NodeName"])
             for rec in parse_records(_scontrol("show", "node")) if "NodeName" in rec}
    parts = {}
    for rec in parse_records(_scontrol("show", "partition")):
        if "PartitionName" not in rec:
            continue
        names = expand_hostlist(rec["Nodes"]) if rec.get("Nodes") not in (None, "", "(null)") else []
        max_nodes = rec.get("MaxNodes", "UNLIMITED")
        parts[rec["PartitionName"]] = Partition(
            name=rec["PartitionName"],
            nodes=tuple(nodes[n] for n in names if n in nodes),
            max_nodes=None if max_nodes.upper() == "UNLIMITED" else int(max_nodes),
            max_time_min=_minutes(rec.get("MaxTime", "")),
            default=rec.get("Default", "NO").upper() == "YES",
        )
    return parts


# -- checks before submission -------------------------------------------------------------

def request_problem(name: str, partition: str | None, partitions: Mapping[str, Partition], *,
                    nodes: int, cpus: int, mem_mb: int, gpus: int) -> str | None:
    """Why a request (per node) cannot run in ``partition`` (None: the default), or None."""
    if partition is None:
        partition = next((p.name for p in partitions.values() if p.default), None)
        if partition is None:
            return (f"{name}: no slurm_partition set and the cluster has no default partition; "
                    "set slurm_partition in the profile's default-resources")
    if partition not in partitions:
        return (f"{name}: Slurm partition {partition!r} does not exist on this cluster; "
                f"available: {', '.join(sorted(partitions)) or 'none'} (set slurm_partition "
                "in the profile's default-resources)")
    part = partitions[partition]
    what = f"{cpus} CPUs, {mem_mb} MB" + (f", {gpus} GPU(s)" if gpus else "") + " per node"
    fits = [n for n in part.nodes if n.cpus >= cpus and n.mem_mb >= mem_mb and n.gpus >= gpus]
    if not fits:
        big = max(part.nodes, key=lambda n: (n.cpus, n.mem_mb, n.gpus), default=None)
        largest = f"{big.cpus} CPUs, {big.mem_mb} MB, {big.gpus} GPUs" if big else "no nodes"
        return (f"{name}: asks for {what}, larger than any node of partition {partition!r} "
                f"(largest: {largest}); use fewer env runners or CPUs per runner, more "
                "nodes, or less memory per CPU")
    if nodes > len(fits):
        return (f"{name}: asks for {nodes} nodes with {what}, but partition {partition!r} "
                f"has only {len(fits)} such node(s)")
    if part.max_nodes is not None and nodes > part.max_nodes:
        return (f"{name}: asks for {nodes} nodes; partition {partition!r} allows at most "
                f"{part.max_nodes} per job")
    return None


def _raise_problems(problems: list[str]) -> None:
    if problems:
        raise ConfigError("the Slurm request cannot be met, nothing was submitted:\n  "
                          + "\n  ".join(problems))


def check_runs(runs: Mapping[str, RunSpec], partition: str | None, mem_mb_per_cpu: int = 0,
               partitions: Mapping[str, Partition] | None = None) -> None:
    """Check a study's training runs against the cluster (``ddrl slurm-check``)."""
    problems, requests = [], {}
    for run_id, spec in runs.items():
        try:
            requests[run_id] = job_request(spec)
        except ConfigError as err:
            problems.append(f"run {run_id}: {err}")
    _raise_problems(problems)
    partitions = read_partitions() if partitions is None else partitions
    for run_id, req in requests.items():
        problem = request_problem(f"run {run_id}", partition, partitions, nodes=req.nodes,
                                  cpus=req.cpus_per_task, mem_mb=mem_mb_per_cpu * req.cpus_per_task,
                                  gpus=req.gpus)
        problems += [problem] if problem else []
    _raise_problems(problems)


def _job_value(job: Any, *names: str) -> Any:
    for name in names:
        value = job.resources.get(name)
        if value is not None:
            return value.strip("'\"") if isinstance(value, str) else value
    return None


def check_jobs(jobs: Iterable[Any], partitions: Mapping[str, Partition] | None = None) -> None:
    """Refuse Snakemake jobs whose evaluated Slurm request no node of their partition can
    meet. The workflow calls this from ``onstart`` when the Slurm executor is in use: after
    the profile's resources are applied, before anything is submitted."""
    jobs = [j for j in jobs if not j.is_local]
    if not jobs:
        return
    partitions = read_partitions() if partitions is None else partitions
    problems = []
    for job in jobs:
        name = job.rule.name + (f" {dict(job.wildcards)}" if len(job.wildcards) else "")
        cpus = int(_job_value(job, "cpus_per_task") or job.threads)
        per_cpu = _job_value(job, "mem_mb_per_cpu")
        problem = request_problem(
            name, _job_value(job, "slurm_partition"), partitions,
            nodes=int(_job_value(job, "nodes") or 1), cpus=cpus,
            mem_mb=int(per_cpu) * cpus if per_cpu else int(_job_value(job, "mem_mb") or 0),
            gpus=int(_job_value(job, "gpu", "gpus") or 0))
        problems += [problem] if problem else []
    _raise_problems(problems)


def describe(runs: Iterable[Any]) -> list[str]:
    """One line per run: its job request (for `ddrl slurm-check --verbose`)."""
    lines = []
    for spec in runs:
        req = job_request(spec)
        lines.append(f"{spec.run_id}: nodes={req.nodes} cpus_per_task={req.cpus_per_task} "
                     f"gpus={req.gpus} runners_per_node={list(req.runners_per_node)} "
                     f"runtime={runtime_min(spec)}min")
    return lines
