"""What a reader needs to trust a run: versions, machine, code revision, environment."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

PACKAGES = ("ddrl", "ray", "torch", "gymnasium", "pybullet", "pybullet_envs_gymnasium",
            "numpy", "pandas", "snakemake")

# Environment variables worth recording; anything that looks secret is redacted.
RECORDED_ENV_PREFIXES = ("RAY_", "SLURM_", "OMP_", "MKL_", "CUDA_", "SNAKEMAKE_", "AWS_", "DDRL_")
SECRET_PATTERN = re.compile(r"SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|SESSION|PRIVATE|_KEY", re.I)
REDACTED = "<redacted>"
# A password inside a URL (scheme://user:password@host), whatever the variable is called.
URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^/\s@]+@")


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "cpu\t", "cpu :")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus() -> list[str]:
    try:
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - provenance must never fail a run
        return []


def git_commit(path: str | Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the checkout holding ``path`` (default: this package)."""
    where = Path(path) if path else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=where, capture_output=True, text=True, timeout=10).stdout.strip()
        return {"commit": commit, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"commit": os.environ.get("DDRL_GIT_COMMIT"), "dirty": None}


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """The recorded subset of ``env``, with secret-looking values replaced."""
    out = {}
    for key, value in sorted(env.items()):
        if not key.startswith(RECORDED_ENV_PREFIXES):
            continue
        if SECRET_PATTERN.search(key):
            out[key] = REDACTED
        else:
            out[key] = URL_PASSWORD.sub(r"\1" + REDACTED + "@", value)
    return out


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "gpus": gpus(),
    }


def collect() -> dict[str, Any]:
    return {
        "versions": package_versions(),
        "host": host_info(),
        "git": git_commit(),
        "environment": redact_env(dict(os.environ)),
    }
