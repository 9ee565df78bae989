"""A real Slurm cluster on one machine, for tests: slurmctld plus two slurmd.

Node ``n1`` is this machine's network namespace; node ``n2`` is a second network namespace
joined to it by a veth pair, so the two nodes have distinct addresses and a multi-node Ray
cluster across them really talks over a network link. Everything it creates (config, state,
namespace, veth, daemons) is removed again by :meth:`SlurmTestCluster.stop`, and daemons are
stopped by the process ids it started.

Needs root and Debian's ``slurm-wlm`` (``slurmctld``, ``slurmd``, ``sbatch``...) and
``iproute2``. Auth is ``auth/none``: no munge, test use only.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SLURM_CONF = Path("/etc/slurm/slurm.conf")  # srun inside jobs finds it only at this path
GRES_CONF = SLURM_CONF.parent / "gres.conf"  # slurmd reads it next to slurm.conf
# Each node offers this many GPUs as a gres, so GPU job requests are scheduled and
# accounted without a GPU. Slurm 22.05's slurmd drops GPUs without device files ("Removing
# file-less GPU"), so gres.conf names stand-in device nodes: character devices 1:3, the
# numbers of /dev/null, in the test's own folder. A CTE-POWER node has 4 GPUs.
GPUS_PER_NODE = 4
MARKER = "# written by ddrl tests/slurm (removed when the tests end)"
BINARIES = ("slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "sinfo")
# Private addresses for the two test nodes (created and removed by the tests).
HOST_ADDR, NS_ADDR, PREFIX = "10.231.76.1", "10.231.76.2", 24
PARTITION = "ddrltest"
# Namespace names end in the test process's pid (interface names "<netns>a/b" stay under
# Linux's 15 characters), so leftovers of a killed test process can be told apart and removed.
NETNS_PREFIX = "ddrl"


def unavailable_reason() -> str | None:
    """Why a test Slurm cannot be started here, or None."""
    if os.geteuid() != 0:
        return "the Slurm tests start slurmctld/slurmd and a network namespace: they need root"
    missing = [b for b in (*BINARIES, "ip", "nsenter") if shutil.which(b) is None]
    if missing:
        return (f"Slurm test binaries missing: {', '.join(missing)} "
                "(apt-get install slurm-wlm iproute2; .ci/run does this)")
    for conf in (SLURM_CONF, GRES_CONF):
        if conf.exists() and MARKER not in conf.read_text():
            return f"{conf} belongs to a real Slurm installation; not overwriting it"
    return None


def _run(*cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=60, **kw)


def _mem_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 1024  # leave some for the OS
    raise RuntimeError("no MemTotal in /proc/meminfo")


@dataclass
class SlurmTestCluster:
    root: Path
    # Twice the real cores (SlurmdParameters=config_overrides), so the tests' 1-node and
    # 2-node training jobs and the light jobs can run side by side on a 2-core machine.
    cpus: int = field(default_factory=lambda: 2 * (os.cpu_count() or 2))
    mem_mb: int = field(default_factory=_mem_mb)
    netns: str = field(default_factory=lambda: f"{NETNS_PREFIX}{os.getpid()}")
    pids: dict[str, int] = field(default_factory=dict)
    nodes: tuple[str, ...] = ("n1", "n2")

    @property
    def veth(self) -> tuple[str, str]:
        return f"{self.netns}a", f"{self.netns}b"

    # -- set-up -----------------------------------------------------------------------------

    def config_text(self) -> str:
        r = self.root
        base = 16000 + (os.getpid() % 1000) * 2
        return "\n".join([
            MARKER,
            "ClusterName=ddrltest",
            f"SlurmctldHost={socket.gethostname().split('.')[0]}({HOST_ADDR})",
            f"SlurmctldPort={base}",
            f"SlurmdPort={base + 1}",
            "AuthType=auth/none",
            "CredType=cred/none",
            "SlurmUser=root",
            "SlurmdUser=root",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "GresTypes=gpu",
            "ReturnToService=2",
            "MinJobAge=3600",      # finished jobs stay visible to scontrol for the tests
            "SlurmdParameters=config_overrides",
            "KillWait=15",          # SIGTERM at the time limit, SIGKILL this much later
            "OverTimeLimit=0",
            "InactiveLimit=0",
            "SlurmdTimeout=60",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/slurmctld.pid",
            f"SlurmdPidFile={r}/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/slurmctld.log",
            f"SlurmdLogFile={r}/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"NodeName=n1 NodeAddr={HOST_ADDR} CPUs={self.cpus} RealMemory={self.mem_mb} "
            f"Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN",
            f"NodeName=n2 NodeAddr={NS_ADDR} CPUs={self.cpus} RealMemory={self.mem_mb} "
            f"Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    def start(self) -> "SlurmTestCluster":
        try:
            self._network_up()
            for d in ("state", "spool"):
                (self.root / d).mkdir(parents=True, exist_ok=True)
            SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
            SLURM_CONF.write_text(self.config_text())
            GRES_CONF.write_text(f"{MARKER}\nAutoDetect=off\n"
                                 f"Name=gpu File={self._fake_gpu_devices()}\n")
            self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", str(SLURM_CONF)])
            self._spawn("slurmd-n1", ["slurmd", "-D", "-N", "n1", "-f", str(SLURM_CONF)])
            self._spawn("slurmd-n2", ["nsenter", f"--net=/run/netns/{self.netns}",
                                      "slurmd", "-D", "-N", "n2", "-f", str(SLURM_CONF)])
            self.wait_idle()
        except BaseException:
            self.stop()
            raise
        return self

    def _fake_gpu_devices(self) -> str:
        dev = self.root / "dev"
        dev.mkdir(exist_ok=True)
        for i in range(GPUS_PER_NODE):
            path = dev / f"gpu{i}"
            if not path.exists():
                os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return f"{dev}/gpu[0-{GPUS_PER_NODE - 1}]"

    def _network_up(self) -> None:
        remove_stale_namespaces()
        holders = _interfaces_holding(HOST_ADDR)
        if holders:
            raise RuntimeError(f"{HOST_ADDR} is already on interface(s) {holders}: another test "
                               "Slurm cluster is running here; the tests need it to themselves")
        a, b = self.veth
        _run("ip", "netns", "add", self.netns)
        _run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        _run("ip", "link", "set", b, "netns", self.netns)
        _run("ip", "addr", "add", f"{HOST_ADDR}/{PREFIX}", "dev", a)
        _run("ip", "link", "set", a, "up")
        ns = ("ip", "-n", self.netns)
        _run(*ns, "addr", "add", f"{NS_ADDR}/{PREFIX}", "dev", b)
        _run(*ns, "link", "set", b, "up")
        _run(*ns, "link", "set", "lo", "up")

    def _spawn(self, name: str, cmd: list[str]) -> None:
        log = open(self.root / f"{name}.out", "wb")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        self.pids[name] = proc.pid
        self._procs = getattr(self, "_procs", {})
        self._procs[name] = proc

    def wait_idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            for name, proc in getattr(self, "_procs", {}).items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}: {self.logs(name)}")
            out = _run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout
            states = dict(line.split() for line in out.splitlines() if line.strip())
            if all(states.get(n) == "idle" for n in self.nodes):
                return
            time.sleep(0.5)
        raise RuntimeError(f"Slurm nodes not idle after {timeout}s: {out!r}\n{self.logs()}")

    def logs(self, name: str | None = None) -> str:
        names = [name] if name else ["slurmctld", "slurmd-n1", "slurmd-n2"]
        parts = []
        for n in names:
            for suffix in (".out", ".log"):
                path = self.root / f"{n}{suffix}"
                if path.exists():
                    parts.append(f"--- {path.name} ---\n" + path.read_text()[-3000:])
        return "\n".join(parts)

    # -- queries --------------------------------------------------------------------------

    def job_info(self, job_id: str | int) -> dict[str, str]:
        """``scontrol show job`` as a dict (finished jobs stay visible for MinJobAge)."""
        out = _run("scontrol", "-o", "show", "job", str(job_id)).stdout
        info = {}
        for token in out.split():
            key, _, value = token.partition("=")
            info.setdefault(key, value)
        return info

    # -- tear-down ------------------------------------------------------------------------

    def stop(self) -> None:
        for job in _run("squeue", "-h", "-o", "%i", check=False).stdout.split():
            _run("scancel", job, check=False)
        for name in ("slurmd-n2", "slurmd-n1", "slurmctld"):
            proc = getattr(self, "_procs", {}).get(name)
            if proc is None or proc.poll() is not None:
                continue
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for conf in (SLURM_CONF, GRES_CONF):
            if conf.exists() and MARKER in conf.read_text():
                conf.unlink()
        _run("ip", "link", "del", self.veth[0], check=False)
        _run("ip", "netns", "del", self.netns, check=False)


def _interfaces_holding(addr: str) -> list[str]:
    out = _run("ip", "-o", "-4", "addr", "show", check=False).stdout
    return [line.split()[1] for line in out.splitlines() if f" {addr}/" in line]


def remove_stale_namespaces() -> list[str]:
    """Remove the namespaces (and the daemons in them) of test processes that no longer run.

    A test process killed before its tear-down leaves its namespace and veth behind, still
    holding :data:`HOST_ADDR`; the next cluster's second node then cannot reach slurmctld.
    """
    removed = []
    for line in _run("ip", "netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.fullmatch(rf"{NETNS_PREFIX}(\d+)", name)
        if not match or int(match.group(1)) == os.getpid() or Path(f"/proc/{match.group(1)}").exists():
            continue
        for pid in _run("ip", "netns", "pids", name, check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        _run("ip", "link", "del", f"{name}a", check=False)
        _run("ip", "netns", "del", name, check=False)
        removed.append(name)
    return removed


def start_cluster(root: str | Path | None = None) -> SlurmTestCluster:
    root = Path(root or tempfile.mkdtemp(prefix="ddrl-slurm-"))
    return SlurmTestCluster(root=root).start()
