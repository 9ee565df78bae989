"""`ddrl status` on a study with done, running, failed and pending runs. The done run is a
real trained one; the others are made from its files (real progress.csv rows, run folder
layout, Snakemake's lock and incomplete markers) at the states a crash or a live job leaves."""

from __future__ import annotations

import base64
import csv
import json
import os
import shutil
import time

import pytest
import yaml

from ddrl.study.study import Study
from ddrl.training.status import study_status

from helpers.tooling_fixtures import TINY_RUN_CONFIG, ddrl_cli, tiny_run  # noqa: F401

TRACEBACK = """ddrl {rid} iter=1 env_steps=200/600 return=22.00 steps_per_s=260.5 iter_s=0.77 eta=0:00:02
Traceback (most recent call last):
  File "workflow/scripts/train.py", line 24, in <module>
    train_run(spec, run_dir, ray_address=address, print_fn=echo,
ddrl.faults.EnvRunnerFailure: env runner 1 died 11 times on InvertedPendulumBulletEnv-v0
"""


def _write_progress(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def _marker(root, rel_path):
    name = base64.urlsafe_b64encode(rel_path.encode()).decode()
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text("{}")


@pytest.fixture(scope="module")
def study_dir(tiny_run, tmp_path_factory):
    """seeds 1..7: done, running, failed (traceback), failed (stale), pending,
    running (Snakemake holds it), failed (Snakemake incomplete, no lock)."""
    work = tmp_path_factory.mktemp("status")
    config = {**TINY_RUN_CONFIG, "experiments": [
        {**TINY_RUN_CONFIG["experiments"][0], "seeds": [1, 2, 3, 4, 5, 6, 7]}]}
    (work / "study.yaml").write_text(yaml.safe_dump(config))
    study = Study.from_file(work / "study.yaml")
    ids = list(study.runs)
    by_seed = {study.runs[r].seed: r for r in ids}
    assert by_seed[1] == tiny_run.spec.run_id  # seed 1 is the trained run
    shutil.copytree(tiny_run.run_dir, work / study.run_dir(by_seed[1]))
    real = list(csv.DictReader((tiny_run.run_dir / "progress.csv").open()))
    for seed, n_rows, age in ((2, 2, 5), (3, 1, 7200), (4, 2, 7200), (6, 1, 7200), (7, 1, 7200)):
        run_dir = work / study.run_dir(by_seed[seed])
        _write_progress(run_dir / "work" / "progress.csv", real[:n_rows])
        (run_dir / "work" / "started").write_text("2026-12-03T00:00:00+00:00")
        for f in ("progress.csv", "started"):
            _age(run_dir / "work" / f, age)
    logs = work / study.root / "logs" / "train"
    logs.mkdir(parents=True)
    (logs / f"{by_seed[3]}.log").write_text(TRACEBACK.format(rid=by_seed[3]))
    (logs / f"{by_seed[2]}.log").write_text("ddrl ... iter=2\n")
    meta = work / ".snakemake"
    (meta / "locks").mkdir(parents=True)
    (meta / "locks" / "0.output.lock").write_text(
        f"{study.run_dir(by_seed[6])}/run.json\n{study.run_dir(by_seed[5])}/run.json\n")
    for seed in (6, 7):
        _marker(meta / "incomplete", f"{study.run_dir(by_seed[seed])}/run.json")
    return work, study, by_seed, real


def test_each_run_gets_its_state_and_reason(study_dir):
    work, study, by_seed, real = study_dir
    got = {study.runs[st.run_id].seed: st for st in study_status(study, work)}
    assert {s: got[s].state for s in got} == {1: "done", 2: "running", 3: "failed",
                                              4: "failed", 5: "pending", 6: "running",
                                              7: "failed"}
    assert got[1].iteration == 3 and got[1].env_steps == 600
    assert got[1].episode_return_mean == pytest.approx(float(real[-1]["episode_return_mean"]))
    assert got[2].iteration == 2 and got[2].env_steps == 400
    assert "EnvRunnerFailure: env runner 1 died 11 times" in got[3].note
    assert got[4].note.startswith("no progress for 2:00:0")
    assert "Snakemake holds it" in got[6].note
    assert "Snakemake marked it incomplete" in got[7].note


def test_eta_of_running_and_pending_runs_comes_from_progress_rates(study_dir):
    work, study, by_seed, real = study_dir
    got = {study.runs[st.run_id].seed: st for st in study_status(study, work)}
    rate2 = (sum(float(r["env_steps_this_iter"]) for r in real[:2])
             / sum(float(r["time_this_iter_s"]) for r in real[:2]))
    assert got[2].eta_s == pytest.approx(200 / rate2)
    assert not got[2].eta_estimated
    # pending: the median rate of seed 1 (done, 3 rows) and seeds 2, 6 (running)
    rates = sorted([
        sum(float(r["env_steps_this_iter"]) for r in rows)
        / sum(float(r["time_this_iter_s"]) for r in rows) for rows in (real, real[:2], real[:1])])
    assert got[5].eta_estimated and got[5].eta_s == pytest.approx(600 / rates[1])
    assert got[1].eta_s == 0 and got[3].eta_s is None


def test_status_cli_table_and_json(study_dir):
    work, study, by_seed, _ = study_dir
    proc = ddrl_cli("status", "study.yaml", cwd=work)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("study tiny1: 7 run(s): 1 done, 2 running, 3 failed, 1 pending; "
                               "remaining ~")
    assert lines[1].split() == ["run", "state", "iter", "env_steps", "return", "eta", "note"]
    row = {ln.split()[0]: ln.split() for ln in lines[2:]}
    assert row[by_seed[1]][1:5] == ["done", "3", "600/600", row[by_seed[1]][4]]
    assert row[by_seed[5]][1] == "pending" and row[by_seed[5]][5].startswith("~0:00:")
    assert row[by_seed[3]][1] == "failed" and row[by_seed[3]][5] == "-"
    records = json.loads(ddrl_cli("status", "study.yaml", "--json", cwd=work).stdout)
    assert [r["state"] for r in records] == [
        {1: "done", 2: "running", 3: "failed", 4: "failed", 5: "pending", 6: "running",
         7: "failed"}[study.runs[r["run_id"]].seed] for r in records]
    bad = ddrl_cli("status", "study.yaml", "--stale-after", "0", cwd=work)
    assert bad.returncode == 2 and "--stale-after must be a positive number" in bad.stderr
