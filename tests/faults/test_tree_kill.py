"""The whole Snakemake process tree dies at once (a lost SSH session, the OOM killer).

Snakemake runs in its own session; SIGKILL goes to its whole process group (Snakemake, the
job scripts, Ray's GCS, raylet and workers), at three places of one tiny study (one PPO
run on InvertedPendulum, 12 iterations): mid-training, mid-evaluation and mid-render, and
while the scaling and plot rules write their tables and figures. After each kill: nothing
of the group is left, no output is half-written, and `snakemake --unlock` plus a rerun
finishes the work, resuming training from its checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from fault_helpers import _root_conftest, run_snakemake, wait_for, write_yaml
from ddrl.training import checkpoints
from ddrl.study.study import Study

REPO, SNAKEFILE = _root_conftest().REPO, _root_conftest().SNAKEFILE
BATCH, ITERATIONS = 200, 12
CONFIG = {
    "study": "tree",
    "checkpoint_every": 1,
    "scaling": {"warmup_iterations": 1, "bootstrap": 200},
    "cost": {"return_threshold": {"InvertedPendulumBulletEnv-v0": 5}},
    "evaluation": {"episodes": 3},
    "render": {"width": 64, "height": 48, "fps": 10, "frame_skip": 3, "max_steps": 30,
               "strip_frames": 4},
    "hyperparameters": {"PPO": {"train_batch_size": BATCH, "minibatch_size": 100,
                                "num_epochs": 1, "fcnet_hiddens": [16]}},
    "experiments": [{"algorithms": ["PPO"], "envs": ["InvertedPendulumBulletEnv-v0"],
                     "seeds": [1], "budget": {"env_steps": BATCH * ITERATIONS}}],
}


def start(workdir: Path, *targets: str) -> subprocess.Popen:
    """Snakemake (local profile) in a new session: its pid is its process group."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE),
           "--directory", str(workdir), "--configfile", str(workdir / "tree.yaml"),
           "--profile", str(REPO / "profiles" / "local"), "--cores", "2", *targets]
    log = open(workdir / "killed.log", "ab")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def group(pgid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the whole group at once; wait until none of it is left (Ray included)."""
    names = sorted({p.name() for p in group(proc.pid) if p.is_running()})
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    wait_for(lambda: not group(proc.pid), 60, what=f"the killed group to vanish ({names})")


def rerun(workdir: Path, *targets: str) -> subprocess.CompletedProcess:
    """What the user does next: the stale lock is named, --unlock removes it, rerun."""
    config = workdir / "tree.yaml"
    locked = run_snakemake(workdir, config, *targets, check=False, timeout=300)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    run_snakemake(workdir, config, "--unlock", timeout=300)
    return run_snakemake(workdir, config, *targets, timeout=900)


def script_running(pgid: int, rule: str) -> bool:
    """A job script of ``rule`` (Snakemake runs .snakemake/scripts/tmpXXXX.<rule>.py)."""
    for proc in group(pgid):
        try:
            if any(arg.endswith(f".{rule}.py") for arg in proc.cmdline()):
                return True
        except psutil.Error:
            continue
    return False


def whole(path: Path) -> bool:
    """The file is complete for its type (a torn write would fail this)."""
    data = path.read_bytes()
    if not data:
        return False
    if path.suffix == ".json":
        json.loads(data)
    elif path.suffix == ".csv":
        pd.read_csv(path)
    elif path.suffix == ".pdf":
        return data.rstrip().endswith(b"%%EOF")
    elif path.suffix in (".png", ".gif"):
        from PIL import Image

        with Image.open(path) as img:
            img.load()
    elif path.suffix == ".mp4":
        return b"moov" in data  # the index ffmpeg writes last
    elif path.suffix in (".md", ".tex"):
        return data.endswith(b"\n")
    return True


def visible_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tree")
    write_yaml(workdir / "tree.yaml", CONFIG)
    spec = next(iter(Study.from_config(CONFIG)))
    run = Path("results/tree/runs") / spec.run_id
    return {"dir": workdir, "run": workdir / run, "target": str(run / "run.json"),
            "rng": random.Random(os.getpid())}


def test_a_killed_tree_mid_training_resumes_from_its_checkpoint(study):
    workdir, run = study["dir"], study["run"]
    proc = start(workdir, study["target"])
    try:
        wait_for(lambda: len(checkpoints.listed(run / "work" / "checkpoints")) >= 2, 300, proc,
                 "the second checkpoint")
        time.sleep(study["rng"].uniform(0.0, 0.6))
        assert proc.poll() is None, "training finished before it could be killed"
    finally:
        kill_group(proc)
    assert not (run / "run.json").exists() and not (run / "progress.csv").exists()
    done_before = checkpoints.latest_valid(run / "work" / "checkpoints")[1]["iteration"]

    rerun(workdir, study["target"])
    progress = pd.read_csv(run / "progress.csv")
    assert progress["iteration"].tolist() == list(range(1, ITERATIONS + 1)), "gap or duplicate"
    assert progress["env_steps"].tolist() == [BATCH * i for i in range(1, ITERATIONS + 1)]
    # Iterations up to the checkpoint come from the killed attempt, the rest from the rerun.
    sessions = progress["session"].tolist()
    assert sessions[:done_before] == [0] * done_before and set(sessions[done_before:]) == {1}
    assert json.loads((run / "run.json").read_text())["sessions"] == 2
    assert checkpoints.read_manifest(run / "checkpoint")["iteration"] == ITERATIONS


AGENT_OUTPUTS = ("eval.json", "video.mp4", "video.gif", "frames.png")


def test_a_killed_tree_mid_evaluation_and_render_leaves_no_half_output(study):
    workdir, run = study["dir"], study["run"]
    targets = [str(run.relative_to(workdir) / name) for name in AGENT_OUTPUTS]
    proc = start(workdir, *targets)
    try:
        wait_for(lambda: all(script_running(proc.pid, rule) for rule in ("evaluate", "render")),
                 300, proc, "evaluate and render running at once")
        # Somewhere inside both jobs: a random delay, cut short as soon as either job ends
        # (a kill after both had finished would find Snakemake done and nothing to rerun).
        deadline = time.monotonic() + study["rng"].uniform(0.5, 3.0)
        while time.monotonic() < deadline and all(
                script_running(proc.pid, rule) for rule in ("evaluate", "render")):
            time.sleep(0.05)
    finally:
        kill_group(proc)
    for name in AGENT_OUTPUTS:
        path = run / name
        assert not path.exists() or whole(path), f"{name} is half-written"

    rerun(workdir, *targets)
    for name in AGENT_OUTPUTS:
        assert whole(run / name), name
    assert len(json.loads((run / "eval.json").read_text())["returns"]) == 3


def test_a_killed_tree_while_tables_and_figures_are_written(study):
    workdir = study["dir"]
    root = workdir / "results" / "tree"
    outputs = [root / "tables", root / "figures"]
    proc = start(workdir)  # rule all: scaling, cost, returns table, the plots, export
    try:
        # The first table or figure (or its hidden temporary) appearing: writers are busy.
        wait_for(lambda: any(d.is_dir() and any(d.iterdir()) for d in outputs), 300, proc,
                 "the first table or figure")
        time.sleep(study["rng"].uniform(0.0, 0.3))
    finally:
        kill_group(proc)
    for folder in outputs:
        for path in visible_files(folder) if folder.is_dir() else []:
            assert whole(path), f"{path} is half-written"

    rerun(workdir)
    for folder in outputs:
        files = visible_files(folder)
        assert files and all(whole(p) for p in files), folder
    assert {"speedup.csv", "returns.csv", "cost.csv"} <= {p.name for p in visible_files(root / "tables")}
    assert (root / "figures" / "fig12-14_reward_curves.pdf").exists()
    # The rerun found nothing left to do from the killed attempt.
    again = run_snakemake(workdir, workdir / "tree.yaml", "-n", timeout=300)
    assert "Nothing to be done" in again.stdout + again.stderr
