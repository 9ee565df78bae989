"""One run of a study fails (its env cannot start): the others still finish (--keep-going in
the local profile), Snakemake names the failed job, and a rerun would retry only it."""

from __future__ import annotations

import json

import faulty_envs
from fault_helpers import BATCH, pythonpath, run_snakemake, tiny_config, write_yaml

from ddrl.study.study import Study


def test_one_bad_run_does_not_stop_the_others(tmp_path):
    faults = faulty_envs.make_tokens(tmp_path / "faults", 1)
    cfg = tiny_config(fault_tolerance={"max_env_runner_restarts": 0, "restart_delay_s": 0},
                      experiment={"budget": {"env_steps": BATCH}})
    bad = dict(cfg["experiments"][0], envs=[f"faulty_envs:{faulty_envs.ENV_ID}"],
               env_config={"fault_dir": str(faults), "mode": "construct"})
    cfg["experiments"].append(bad)
    config = write_yaml(tmp_path / "study.yaml", cfg)
    env = {"PYTHONPATH": pythonpath()}
    study = Study.from_config(cfg)
    good_id, bad_id = list(study.runs)
    targets = [f"results/faults/runs/{r}/run.json" for r in (good_id, bad_id)]

    proc = run_snakemake(tmp_path, config, *targets, check=False, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    runs = tmp_path / "results" / "faults" / "runs"
    assert json.loads((runs / good_id / "run.json").read_text())["status"] == "complete"
    assert not (runs / bad_id / "run.json").exists()
    assert "Error in rule train" in out and bad_id in out
    log = (tmp_path / "results" / "faults" / "logs" / "train" / f"{bad_id}.log").read_text()
    assert "the env runners could not start" in log
    assert "FaultError: injected fault: FaultyCartPole-v0 cannot start" in log

    plan = run_snakemake(tmp_path, config, *targets, "-n", "--quiet", "rules", env=env)
    planned = " ".join((plan.stdout + plan.stderr).split())
    assert "train 1" in planned and "total 1" in planned, planned  # the bad run, only
