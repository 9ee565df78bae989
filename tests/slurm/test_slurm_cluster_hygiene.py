"""The test Slurm cluster cleans up after a test process that was killed before tear-down."""

from __future__ import annotations

import os
import subprocess
import sys

from .slurm_cluster import NETNS_PREFIX, _interfaces_holding, _run, remove_stale_namespaces

# Not the cluster's address, so a cluster running in this session is not disturbed.
STALE_ADDR = "10.231.77.1"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_namespaces_of_dead_test_processes_are_removed():
    stale = f"{NETNS_PREFIX}{_dead_pid()}"
    _run("ip", "netns", "add", stale)
    try:
        _run("ip", "link", "add", f"{stale}a", "type", "veth", "peer", "name", f"{stale}b")
        _run("ip", "link", "set", f"{stale}b", "netns", stale)
        _run("ip", "addr", "add", f"{STALE_ADDR}/24", "dev", f"{stale}a")
        assert _interfaces_holding(STALE_ADDR) == [f"{stale}a"]

        removed = remove_stale_namespaces()

        assert stale in removed
        assert stale not in _run("ip", "netns", "list").stdout.split()
        assert _interfaces_holding(STALE_ADDR) == []
    finally:
        _run("ip", "link", "del", f"{stale}a", check=False)
        _run("ip", "netns", "del", stale, check=False)


def test_a_live_process_keeps_its_namespace():
    live = f"{NETNS_PREFIX}{os.getppid()}"  # pytest's parent: alive, not us
    _run("ip", "netns", "add", live)
    try:
        assert live not in remove_stale_namespaces()
        assert live in _run("ip", "netns", "list").stdout.split()
    finally:
        _run("ip", "netns", "del", live, check=False)

