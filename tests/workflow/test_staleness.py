"""Incremental reruns: a changed setting reruns only what depends on it."""

from __future__ import annotations

import re
import shutil

import yaml

from ddrl.study.study import Study

from conftest import run_snakemake, write_yaml


def planned_train_runs(workdir, configfile) -> set[str]:
    proc = run_snakemake(workdir, configfile, "-n")
    return set(re.findall(r"runs/([A-Za-z0-9_.-]+)/run\.json", _train_jobs(proc.stdout)))


def _train_jobs(dry_run_output: str) -> str:
    """The output blocks of the planned `train` jobs only."""
    blocks = re.split(r"\n(?=\[[^\]]+\]\n|rule |localrule )", dry_run_output)
    return "\n".join(b for b in blocks if re.search(r"^(local)?rule train:", b, re.M))


def copy_study(tiny_study, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(tiny_study, work, symlinks=True)
    config = yaml.safe_load((work / "tiny.yaml").read_text())
    return work, config


def test_finished_study_plans_nothing_to_train(tiny_study, tmp_path):
    work, config = copy_study(tiny_study, tmp_path)
    assert planned_train_runs(work, work / "tiny.yaml") == set()


def test_changing_one_algorithms_hyperparameter_retrains_only_its_runs(tiny_study, tmp_path):
    work, config = copy_study(tiny_study, tmp_path)
    config["hyperparameters"]["PPO"]["lr"] = 0.001
    path = write_yaml(work / "changed.yaml", config)
    planned = planned_train_runs(work, path)
    study = Study.from_config(config)
    ppo = {r for r, s in study.runs.items() if s.algorithm == "PPO"}
    assert planned == ppo and len(ppo) == 4


def test_adding_a_seed_trains_only_the_new_seed(tiny_study, tmp_path):
    work, config = copy_study(tiny_study, tmp_path)
    config["experiments"][0]["seeds"].append(3)
    path = write_yaml(work / "more_seeds.yaml", config)
    planned = planned_train_runs(work, path)
    study = Study.from_config(config)
    assert planned == {r for r, s in study.runs.items() if s.seed == 3}
    assert len(planned) == 2  # the seed with 1 and with 2 runners
