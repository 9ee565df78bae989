"""Learning and timing experiments stay apart in the DAG: timing runs are evaluated but not
rendered or exported, the scaling tables read only timing runs and the reward curves and
learning-returns table only learning runs (checked on the dry run's plan)."""

from __future__ import annotations

import re

from ddrl.study.study import Study

from conftest import run_snakemake, write_yaml

CONFIG = {
    "study": "purposes",
    "experiments": [
        {"name": "learn", "purpose": "learning", "algorithms": ["PPO"],
         "envs": ["InvertedPendulumBulletEnv-v0"], "seeds": [1], "budget": {"env_steps": 400},
         "resources": [{"num_env_runners": 2}]},
        {"name": "time", "purpose": "timing", "algorithms": ["PPO"],
         "envs": ["InvertedPendulumBulletEnv-v0"], "seeds": [1], "budget": {"env_steps": 300},
         "resources": [{"num_env_runners": 1}, {"num_env_runners": 2}]},
    ],
}


def _jobs(dry_run: str) -> dict[str, list[str]]:
    """rule name -> the text of each planned job of it."""
    blocks = re.split(r"\n(?=\[[^\]]+\]\n|rule |localrule )", dry_run)
    jobs: dict[str, list[str]] = {}
    for block in blocks:
        m = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        if m:
            jobs.setdefault(m.group(1), []).append(block)
    return jobs


def test_dag_keeps_learning_and_timing_runs_apart(tmp_path):
    path = write_yaml(tmp_path / "purposes.yaml", CONFIG)
    study = Study.from_config(CONFIG)
    learn = [r for r, e in study.experiment_of.items() if e == "learn"]
    timing = [r for r, e in study.experiment_of.items() if e == "time"]
    # The same algorithm, env and resources in both experiments, other budgets: two runs.
    assert len(learn) == 1 and len(timing) == 2
    jobs = _jobs(run_snakemake(tmp_path, path, "-n").stdout)
    assert len(jobs["train"]) == 3 and len(jobs["evaluate"]) == 3
    assert len(jobs["render"]) == 1 and learn[0] in jobs["render"][0]
    assert len(jobs["export"]) == 1 and learn[0] in jobs["export"][0]
    (scaling,) = jobs["scaling"]
    assert all(r in scaling for r in timing) and learn[0] not in scaling
    for rule in ("plot_rewards", "learning_returns"):
        (job,) = jobs[rule]
        inputs = job.split("output:")[0]
        assert learn[0] in inputs and not any(r in inputs for r in timing), rule
    # The scaling figures read the tables only; Figs 12-14 are drawn once, by plot_rewards.
    (plot_scaling,) = jobs["plot_scaling"]
    assert "/runs/" not in plot_scaling.split("output:")[0]
    assert "fig12-14" in jobs["plot_rewards"][0] and "fig12-14" not in plot_scaling
    (cost,) = jobs["cost"]
    assert all(r in cost for r in learn + timing)
