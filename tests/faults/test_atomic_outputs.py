"""SIGKILL a process while it writes progress.csv, eval.json, a table and a figure: no file
under its final name is ever truncated (only hidden temporaries are left behind)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

HERE = Path(__file__).resolve().parent
WRITER = [sys.executable, str(HERE / "atomic_writer.py")]
FINAL = ["progress.csv", "eval.json", "returns.csv", "returns.md", "curve.pdf", "curve.png"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("reference")
    subprocess.run(WRITER + [str(out)], check=True, capture_output=True, timeout=300)
    return {name: (out / name).read_bytes() for name in FINAL}


def _whole(name: str, data: bytes, reference: dict[str, bytes]) -> bool:
    if name == "curve.pdf":  # a PDF carries its creation time; check its structure instead
        return data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF") and \
            abs(len(data) - len(reference[name])) < 64
    return data == reference[name]


def _wait_dead(pid: int) -> None:
    """Until the killed writer is gone (a zombie until the server reaps it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
    raise AssertionError(f"writer {pid} survived SIGKILL")


def test_killed_writer_never_leaves_a_torn_file(tmp_path, reference):
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    out = tmp_path / "outputs"
    out.mkdir()
    for name, data in reference.items():  # what an earlier, finished job left
        (out / name).write_bytes(data)
    server = subprocess.Popen(WRITER + ["--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        for round_ in range(8):
            server.stdin.write(f"{out}\n")
            server.stdin.flush()
            pid = int(server.stdout.readline())
            time.sleep(rng.uniform(0.2, 2.0))  # rewriting the outputs, somewhere
            os.kill(pid, signal.SIGKILL)  # no finally blocks, no cleanup
            _wait_dead(pid)
            for name in FINAL:
                data = (out / name).read_bytes()
                assert _whole(name, data, reference), f"{name} torn (round {round_}, seed {seed})"
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    # The kills did land inside writes: their half-written temporaries are the evidence.
    torn = [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert torn, f"no kill hit a write (seed {seed}); the test proved nothing"
