"""A multi-node Ray cluster inside one Slurm job, shared by training and Tune.

A run with ``nodes > 1`` trains on a Ray cluster that :func:`ray_cluster` starts inside the
job: a Ray head on the node the training step runs on, a Ray worker on every other node of
the allocation (through ``srun``), token authentication between them, ports derived from the
job id, and everything stopped again when training ends, also when it fails. A tune job
(:mod:`ddrl.search.tune`) starts its Ray the same way (:func:`ray_cluster_on_nodes`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ddrl.cluster.slurm import SlurmError, _scontrol, expand_hostlist, job_request, parse_records
from ddrl.runs import RunSpec


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


#: Ray reads its token authentication from these; the driver process sets them while its
#: cluster runs and restores them afterwards.
_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")


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
    nodes = _first_nodes(alloc, wanted)
    ports = job_ports(alloc.job_id)
    head = nodes[0]
    address = f"{alloc.addresses[head]}:{ports['port']}"
    state = Path(work_dir) / f"ray-{alloc.job_id}"
    state.mkdir(parents=True, exist_ok=True)
    token = _write_auth_token(state)
    env = _ray_process_env(token)
    saved = {k: os.environ.get(k) for k in _AUTH_VARS}
    flags = _ray_node_flags(ports)
    procs: list[tuple[str, subprocess.Popen]] = []
    try:
        tmp = f"/tmp/ddrl-ray-{alloc.job_id}"
        procs.append(_spawn(f"head-{head}", _head_command(
            alloc.addresses[head], ports["port"], cpus_per_node[0], gpus, f"{tmp}-{head}", flags),
            env, state))
        for node, cpus in zip(nodes[1:], cpus_per_node[1:]):
            procs.append(_spawn(f"worker-{node}", _worker_command(
                node, alloc.addresses[node], address, cpus, f"{tmp}-{node}", flags), env, state))
        print_fn(f"ddrl ray cluster: head {head} at {address}, workers on "
                 f"{', '.join(nodes[1:])}; " + (what or f"CPUs per node {list(cpus_per_node)}"))
        _use_token_in_this_process(token)
        _connect(ray, address, procs, wanted, timeout_s, state)
        print_fn(f"ddrl ray cluster: {wanted} nodes up")
        yield address
    finally:
        _tear_down(ray, procs, saved, token)


def _first_nodes(alloc: Allocation, wanted: int) -> list[str]:
    """The first ``wanted`` nodes of the allocation (the head first); fails when it has fewer."""
    if len(alloc.nodes) < wanted:
        raise SlurmError(f"run asks for {wanted} nodes but the job has {len(alloc.nodes)}: "
                         f"{', '.join(alloc.nodes)}")
    return alloc.nodes[:wanted]


def _write_auth_token(state: Path) -> Path:
    """A fresh random Ray auth token in ``state/auth_token``, readable by its owner only."""
    token = state / "auth_token"
    fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32))
    return token


def _ray_process_env(token: Path) -> dict[str, str]:
    """Environment of the ``ray start`` processes: token auth, no usage stats, and no
    inherited RAY_ADDRESS."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
           "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    return env


def _ray_node_flags(ports: dict[str, int]) -> list[str]:
    """``ray start`` flags every node shares: the job's ports (but the GCS one) and
    blocking in the foreground without usage stats."""
    flags = [f"--{k}={v}" for k, v in ports.items() if k != "port"]
    return flags + ["--disable-usage-stats", "--block"]


def _head_command(ip: str, port: int, cpus: int, gpus: int, temp_dir: str,
                  flags: list[str]) -> list[str]:
    """``ray start --head`` on this node, at ``ip:port``."""
    return [_ray_exe(), "start", "--head", f"--node-ip-address={ip}", f"--port={port}",
            f"--num-cpus={cpus}", f"--num-gpus={gpus}", "--include-dashboard=false",
            f"--temp-dir={temp_dir}", *flags]


def _worker_command(node: str, ip: str, head_address: str, cpus: int, temp_dir: str,
                    flags: list[str]) -> list[str]:
    """``ray start`` of a worker joining ``head_address``, run on ``node`` through srun."""
    return ["srun", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={node}",
            f"--cpus-per-task={cpus}", "--kill-on-bad-exit=1",
            _ray_exe(), "start", f"--address={head_address}", f"--node-ip-address={ip}",
            f"--num-cpus={cpus}", "--num-gpus=0", f"--temp-dir={temp_dir}", *flags]


def _spawn(name: str, cmd: list[str], env: dict[str, str],
           state: Path) -> tuple[str, subprocess.Popen]:
    """Start ``cmd`` in its own session, its output appended to ``state/<name>.log``."""
    log = open(state / f"{name}.log", "ab")
    return name, subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)


def _tear_down(ray: Any, procs: list[tuple[str, subprocess.Popen]],
               saved: dict[str, str | None], token: Path) -> None:
    """Disconnect the driver, stop the Ray processes (workers first, the head last), restore
    this process's auth variables and remove the token."""
    with contextlib.suppress(Exception):
        ray.shutdown()
    for _, proc in reversed(procs):
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
    both when it is imported; this is what Ray itself does when it enables token auth).
    Private, kept: Ray has no public call to reload its auth settings in a live process."""
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
