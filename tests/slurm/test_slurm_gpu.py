"""A GPU training job through profiles/slurm-cte-power: the exact sbatch line the Slurm
executor builds, and that Slurm accepts and runs it. The test cluster's nodes offer 4 GPUs
as a gres without device files (tests/slurm/slurm_cluster.py), so no GPU is needed; the run
itself falls back to the CPU (on_missing_gpu: cpu)."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from ddrl.study.study import Study
from .conftest import REPO, SNAKEFILE, TINY_CONFIG
from .slurm_cluster import PARTITION

CTE_PROFILE = REPO / "profiles" / "slurm-cte-power" / "config.yaml"
REAL_SBATCH = "/usr/bin/sbatch"


def cte_profile_for_the_test_cluster(dest: Path) -> Path:
    """profiles/slurm-cte-power as it is, except what the test cluster cannot have: its
    partition and memory, quick status checks, and no `module` command (the module names
    are placeholders anyway)."""
    profile = yaml.safe_load(CTE_PROFILE.read_text())
    assert "slurm={gpu_request: gres}" in profile["config"]
    profile.pop("software-deployment-method")
    profile["config"] = [c for c in profile["config"] if not c.startswith("software=")]
    profile["default-resources"].update({"slurm_partition": PARTITION, "mem_mb_per_cpu": 500})
    profile["set-resources"]["train"]["runtime"] = 10
    profile.update({"jobs": 1, "retries": 0, "latency-wait": 5, "slurm-status-command": "squeue",
                    "slurm-init-seconds-before-status-checks": 2, "verbose": True})
    dest.mkdir(parents=True)
    (dest / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return dest


def sbatch_shim(bindir: Path, log: Path) -> Path:
    """An `sbatch` first on PATH that records its arguments, then runs the real one."""
    bindir.mkdir(parents=True)
    shim = bindir / "sbatch"
    shim.write_text("#!/bin/bash\n"
                    f"{{ printf 'sbatch'; printf ' %q' \"$@\"; echo; }} >> {shlex.quote(str(log))}\n"
                    f"exec {REAL_SBATCH} \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return bindir


def test_gpu_training_job_asks_gres_gpu_and_slurm_runs_it(slurm_cluster, tmp_path):
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config.update({
        "study": "slurmgpu",
        "on_missing_gpu": "cpu",
        "experiments": [{"algorithms": ["PPO"], "envs": ["InvertedPendulumBulletEnv-v0"],
                         "seeds": [1], "resources": [{"num_env_runners": 1,
                                                      "num_gpus_per_learner": 1}],
                         "budget": {"env_steps": 400}}],
    })
    configfile = tmp_path / "study.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    run_id = next(iter(Study.from_config(config).runs))
    target = f"results/slurmgpu/runs/{run_id}/run.json"
    log = tmp_path / "sbatch.log"
    bindir = sbatch_shim(tmp_path / "bin", log)
    profile = cte_profile_for_the_test_cluster(tmp_path / "profile")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--directory",
         str(tmp_path), "--configfile", str(configfile), "--profile", str(profile), target],
        capture_output=True, text=True, timeout=600, env=env)
    slurm_logs = sorted(tmp_path.glob("logs/slurm/rule_train/*/*.log"))
    assert proc.returncode == 0, (proc.stderr[-5000:],
                                  [p.read_text()[-3000:] for p in slurm_logs])

    # The exact sbatch line (the --wrap'ed Snakemake command left out).
    calls = [line for line in log.read_text().splitlines() if "rule_train" in line]
    assert len(calls) == 1, log.read_text()
    line = calls[0].split(" --wrap")[0]
    (tmp_path / "sbatch_line.txt").write_text(line + "\n")
    print("sbatch line:", line)
    args = shlex.split(line)
    assert "--gres=gpu:1" in args
    assert not [a for a in args if a.startswith(("--gpus", "--ntasks-per-gpu", "--qos"))], args
    assert {"--nodes=1", "--cpus-per-task=2", "--exclusive"} <= set(args), args
    assert args[args.index("-p") + 1] == PARTITION and args[args.index("-t") + 1] == "10"

    # Slurm accepted and ran it: one task, one GPU of the node's gres, completed.
    job_id = slurm_logs[0].stem
    info = slurm_cluster.job_info(job_id)
    print("scontrol:", {k: info.get(k) for k in ("JobState", "NumNodes", "NumTasks",
                                                  "TresPerNode", "TRES", "AllocTRES")})
    assert info["JobState"] == "COMPLETED", info
    assert info["NumNodes"] == "1" and info["NumTasks"] == "1", info
    assert re.search(r"gres[/:]gpu[:=]1\b", info.get("TresPerNode", "")), info
    # The GPUs the job was given (scontrol -d; TRES would count them only with a slurmdbd).
    # With --exclusive, Slurm 22.05 hands the job all of the node's GPUs (JOB_GRES=gpu:4),
    # as the thesis's --gres=gpu:4 did.
    detail = subprocess.run(["scontrol", "-d", "-o", "show", "job", job_id], capture_output=True,
                            text=True, timeout=30, check=True).stdout
    (tmp_path / "scontrol.txt").write_text(detail)
    given = re.search(r"\bJOB_GRES=gpu(?::\w+)?:(\d+)", detail)
    assert given and int(given.group(1)) >= 1, detail
    assert (tmp_path / target).exists()
