"""Slurm: what a training run asks the scheduler for, checks before submission, and a
multi-node Ray cluster inside one Slurm job.

The Snakemake Slurm executor submits every training run as one job. A run's resources
become its request (:func:`job_request`): one task per node, ``cpus_per_task`` = env runners
on that node x CPUs per runner, + 1 for the driver/learner on the first node, GPUs for the
learner, memory per CPU from the profile, and a runtime that grows with the attempt.

A run with ``nodes > 1`` trains on a Ray cluster that :func:`ray_cluster` starts inside the
job: a Ray head on the node the training step runs on, a Ray worker on every other node of
the allocation (through ``srun``), token authentication between them, ports derived from the
job id, and everything stopped again when training ends, also when it fails.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from ddrl.errors import ConfigError, DdrlError
from ddrl.runs import RunSpec

if TYPE_CHECKING:
    from ddrl.config.search_space import Search

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


def tune_runtime_min(search: Search, attempt: int = 1) -> int:
    """Slurm runtime (minutes) of a tune job: its time budget, else its trials' time limits
    run ``max_concurrent_trials`` at a time; 10% and :data:`RUNTIME_MARGIN_MIN` on top, times
    the attempt (the tune job resumes its experiment)."""
    seconds = search.tune.get("time_budget_s") or (
        search.num_samples * search.budget.get("time_limit_s", DEFAULT_TRIAL_S)
        / search.tune["max_concurrent_trials"]
    )
    return int(seconds * 1.1 / 60 + RUNTIME_MARGIN_MIN) * attempt


@dataclass(frozen=True)
class JobRequest:
    """What one training run asks Slurm for (per node where it says so)."""

    nodes: int
    tasks: int                 # one task per node
    cpus_per_task: int         # per node: the busiest node's runners x CPUs + driver
    gpus: int                  # learner GPUs, on the first node
    runners_per_node: tuple[int, ...]

    def as_resources(self) -> dict[str, int]:
        return {"nodes": self.nodes, "tasks": self.tasks, "cpus_per_task": self.cpus_per_task,
                "gpu": self.gpus}


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


# -- a Ray cluster inside one Slurm job ---------------------------------------------------

#: Ray ports of one job are ``base .. base + PORT_BLOCK - 1``, base derived from the job id,
#: inside [PORT_LOW, PORT_HIGH): below Linux's ephemeral range and above Ray's defaults.
PORT_LOW, PORT_HIGH, PORT_BLOCK = 20000, 32700, 100


def job_ports(job_id: int | str) -> dict[str, int]:
    """Every port the job's Ray uses, so two jobs sharing a node never clash."""
    slots = (PORT_HIGH - PORT_LOW) // PORT_BLOCK
    base = PORT_LOW + (int(job_id) % slots) * PORT_BLOCK
    return {
        "port": base,                        # GCS, on the head node
        "node-manager-port": base + 1,
        "object-manager-port": base + 2,
        "dashboard-agent-grpc-port": base + 3,
        "dashboard-agent-listen-port": base + 4,
        "metrics-export-port": base + 5,
        "runtime-env-agent-port": base + 6,
        "min-worker-port": base + 10,
        "max-worker-port": base + PORT_BLOCK - 1,
    }


def node_address(name: str) -> str:
    """IPv4 address other nodes reach ``name`` at: its Slurm NodeAddr, resolved."""
    recs = parse_records(_scontrol("show", "node", name))
    addr = recs[0].get("NodeAddr", name) if recs else name
    try:
        return socket.getaddrinfo(addr, None, socket.AF_INET)[0][4][0]
    except socket.gaierror as err:
        raise SlurmError(f"cannot resolve the address {addr!r} of node {name}: {err}") from None


def job_nodelist(job_id: str) -> str:
    """The whole allocation's node list. Not $SLURM_JOB_NODELIST: inside a job step (the
    Snakemake jobstep runs training through ``srun -n1``) that names the step's nodes only."""
    recs = parse_records(_scontrol("show", "job", str(job_id)))
    nodelist = recs[0].get("NodeList") if recs else None
    if not nodelist or nodelist == "(null)":
        raise SlurmError(f"Slurm job {job_id} has no nodes allocated (scontrol show job)")
    return nodelist


@dataclass
class Allocation:
    job_id: str
    nodes: list[str]           # first = where the driver runs (the Ray head)
    addresses: dict[str, str]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Allocation":
        env = os.environ if env is None else env
        job_id = env.get("SLURM_JOB_ID")
        if not job_id:
            raise SlurmError("a multi-node run must run inside a Slurm job (SLURM_JOB_ID is "
                             "unset); use --profile profiles/slurm")
        nodes = expand_hostlist(job_nodelist(job_id))
        here = env.get("SLURMD_NODENAME")
        if here in nodes:
            nodes.remove(here)
            nodes.insert(0, here)
        return cls(job_id, nodes, {n: node_address(n) for n in nodes})


def _stop(proc: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM the process group we started, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _ray_exe() -> str:
    exe = Path(sys.executable).with_name("ray")
    return str(exe) if exe.exists() else (shutil.which("ray") or "ray")


@contextlib.contextmanager
def ray_cluster(spec: RunSpec, work_dir: str | Path, *, allocation: Allocation | None = None,
                print_fn: Callable[[str], None] = print,
                timeout_s: float = 180) -> Iterator[str | None]:
    """For ``nodes > 1``: a Ray cluster over the job's nodes, connected; yields its address.

    For one node, yields None (train_run starts its private Ray). The driver is connected
    with ``ray.init`` here, so ``train_run`` uses this cluster; everything started here is
    stopped on exit, also when the body raises.
    """
    req = job_request(spec)
    if req.nodes == 1:
        yield None
        return
    cpus = spec.resources["num_cpus_per_env_runner"]
    with ray_cluster_on_nodes([n * cpus for n in req.runners_per_node], work_dir,
                              gpus=req.gpus, allocation=allocation, print_fn=print_fn,
                              timeout_s=timeout_s,
                              what=f"env runners per node {list(req.runners_per_node)}") as address:
        yield address


@contextlib.contextmanager
def ray_cluster_on_nodes(cpus_per_node: list[int], work_dir: str | Path, *, gpus: int = 0,
                         allocation: Allocation | None = None,
                         print_fn: Callable[[str], None] = print, timeout_s: float = 180,
                         what: str = "") -> Iterator[str]:
    """A Ray cluster over the first ``len(cpus_per_node)`` nodes of this Slurm job, with
    that many CPUs on each (``gpus`` on the first, the head); the driver is connected to it.
    Yields its address. Multi-node training (:func:`ray_cluster`) and the multi-node tune
    job (:mod:`ddrl.search.tune`) both start their Ray here."""
    import ray

    alloc = allocation or Allocation.from_env()
    wanted = len(cpus_per_node)
    if len(alloc.nodes) < wanted:
        raise SlurmError(f"run asks for {wanted} nodes but the job has {len(alloc.nodes)}: "
                         f"{', '.join(alloc.nodes)}")
    nodes = alloc.nodes[:wanted]
    ports = job_ports(alloc.job_id)
    head = nodes[0]
    address = f"{alloc.addresses[head]}:{ports['port']}"
    state = Path(work_dir) / f"ray-{alloc.job_id}"
    state.mkdir(parents=True, exist_ok=True)
    token = state / "auth_token"
    fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32))
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
           "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    common = [f"--{k}={v}" for k, v in ports.items() if k != "port"]
    common += ["--disable-usage-stats", "--block"]
    procs: list[tuple[str, subprocess.Popen]] = []

    def spawn(name: str, cmd: list[str]) -> None:
        log = open(state / f"{name}.log", "ab")
        procs.append((name, subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True)))

    try:
        tmp = f"/tmp/ddrl-ray-{alloc.job_id}"
        spawn(f"head-{head}", [
            _ray_exe(), "start", "--head", f"--node-ip-address={alloc.addresses[head]}",
            f"--port={ports['port']}", f"--num-cpus={cpus_per_node[0]}",
            f"--num-gpus={gpus}", "--include-dashboard=false", f"--temp-dir={tmp}-{head}",
            *common])
        for node, cpus in zip(nodes[1:], cpus_per_node[1:]):
            spawn(f"worker-{node}", [
                "srun", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={node}",
                f"--cpus-per-task={cpus}", "--kill-on-bad-exit=1",
                _ray_exe(), "start", f"--address={address}",
                f"--node-ip-address={alloc.addresses[node]}", f"--num-cpus={cpus}",
                "--num-gpus=0", f"--temp-dir={tmp}-{node}", *common])
        print_fn(f"ddrl ray cluster: head {head} at {address}, workers on "
                 f"{', '.join(nodes[1:])}; " + (what or f"CPUs per node {list(cpus_per_node)}"))
        _use_token_in_this_process(token)
        _connect(ray, address, procs, wanted, timeout_s, state)
        print_fn(f"ddrl ray cluster: {wanted} nodes up")
        yield address
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        for _, proc in reversed(procs):  # workers first, the head last
            _stop(proc)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        token.unlink(missing_ok=True)
        with contextlib.suppress(Exception):
            _refresh_ray_auth()


def _refresh_ray_auth() -> None:
    """Make an already-imported Ray re-read RAY_AUTH_MODE / RAY_AUTH_TOKEN_PATH (it caches
    both when it is imported; this is what Ray itself does when it enables token auth)."""
    from ray._private.authentication.authentication_token_setup import AuthenticationTokenLoader
    from ray._raylet import Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _use_token_in_this_process(token: Path) -> None:
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)})
    _refresh_ray_auth()


def _connect(ray: Any, address: str, procs: list, nodes: int, timeout_s: float,
             state: Path) -> None:
    """Wait for the head's port, connect the driver, wait for every node; fail fast when a
    Ray process we started exits."""
    deadline = time.monotonic() + timeout_s
    host, port = address.rsplit(":", 1)

    def check_procs() -> None:
        for name, proc in procs:
            if proc.poll() is not None:
                log = (state / f"{name}.log").read_text(errors="replace")[-2000:]
                raise SlurmError(f"Ray {name} exited with {proc.returncode} while the cluster "
                                 f"was starting; its log ({state / name}.log) ends:\n{log}")

    while True:  # ray.init would block for minutes on a head that never comes up
        check_procs()
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=2):
            break
        if time.monotonic() > deadline:
            raise SlurmError(f"the Ray head at {address} did not open its port within "
                             f"{timeout_s:.0f}s; logs in {state}")
        time.sleep(1)
    ray.init(address=address, log_to_driver=True, logging_level="WARNING")
    while True:
        check_procs()
        if sum(1 for n in ray.nodes() if n.get("Alive")) >= nodes:
            return
        if time.monotonic() > deadline:
            raise SlurmError(f"the Ray cluster at {address} did not reach {nodes} nodes "
                             f"within {timeout_s:.0f}s; logs in {state}")
        time.sleep(1)


# -- records ------------------------------------------------------------------------------

def _where() -> dict[str, str]:
    import ray

    return {"node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
            "ip": ray.util.get_node_ip_address()}


def env_runner_placement(algo: Any) -> dict[str, Any]:
    """Where the algorithm's remote env runners run: per node, and the node list."""
    try:
        places = algo.env_runner_group.foreach_env_runner(
            lambda _runner: _where(), local_env_runner=False)
    except Exception as err:  # noqa: BLE001 - a record must never fail a run
        return {"error": f"could not locate env runners: {err}"}
    per_node: dict[str, int] = {}
    for p in places:
        key = f"{p['node']} ({p['ip']})"
        per_node[key] = per_node.get(key, 0) + 1
    record: dict[str, Any] = {"env_runners_per_node": per_node}
    if os.environ.get("SLURM_JOB_ID"):
        record["slurm_job_id"] = os.environ["SLURM_JOB_ID"]
        with contextlib.suppress(Exception):
            record["slurm_nodes"] = expand_hostlist(job_nodelist(os.environ["SLURM_JOB_ID"]))
    return record


def describe(runs: Iterable[Any]) -> list[str]:
    """One line per run: its job request (for `ddrl slurm-check --verbose`)."""
    lines = []
    for spec in runs:
        req = job_request(spec)
        lines.append(f"{spec.run_id}: nodes={req.nodes} cpus_per_task={req.cpus_per_task} "
                     f"gpus={req.gpus} runners_per_node={list(req.runners_per_node)} "
                     f"runtime={runtime_min(spec)}min")
    return lines
