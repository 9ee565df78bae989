"""Slurm job requests, port blocks and pre-submission checks (no Slurm needed)."""

from __future__ import annotations

import pytest

from ddrl.cluster import ray_nodes, slurm
from ddrl.errors import ConfigError
from ddrl.study.study import Study

from conftest import write_yaml


def _spec(tmp_path, budget=None, **resources):
    config = {
        "study": "s",
        "experiments": [{"algorithms": ["PPO"], "envs": ["InvertedPendulumBulletEnv-v0"],
                         "seeds": [0], "resources": [resources],
                         "budget": budget or {"env_steps": 1000}}],
    }
    study = Study.from_file(write_yaml(tmp_path / "s.yaml", config))
    return next(iter(study))


def test_single_node_request_is_runners_times_cpus_plus_driver(tmp_path):
    spec = _spec(tmp_path, num_env_runners=6, num_cpus_per_env_runner=2, num_gpus_per_learner=1)
    req = slurm.job_request(spec)
    assert (req.nodes, req.tasks, req.cpus_per_task, req.gpus) == (1, 1, 13, 1)
    assert req.cpus_per_task == spec.cpus
    assert req.as_resources() == {"nodes": 1, "tasks": 1, "cpus_per_task": 13, "gpu": 1,
                                  "gres": "", "tasks_per_gpu": 1}
    assert req.as_resources("gres") == {"nodes": 1, "tasks": 1, "cpus_per_task": 13, "gpu": 0,
                                        "gres": "gpu:1", "tasks_per_gpu": 0}


def test_multi_node_request_spreads_runners_and_sizes_the_busiest_node(tmp_path):
    req = slurm.job_request(_spec(tmp_path, num_env_runners=7, nodes=3, num_cpus_per_env_runner=2))
    assert req.runners_per_node == (3, 2, 2)
    assert (req.nodes, req.tasks, req.cpus_per_task) == (3, 3, 3 * 2 + 1)


def test_multi_node_run_needs_a_runner_per_node(tmp_path):
    with pytest.raises(ConfigError, match="nodes=3 but num_env_runners=2.*at least one env runner"):
        slurm.job_request(_spec(tmp_path, num_env_runners=2, nodes=3))


def test_runtime_follows_the_budget_and_grows_with_the_attempt(tmp_path):
    timed = _spec(tmp_path, budget={"time_limit_s": 3600})
    assert slurm.runtime_min(timed, 1) == 60 + slurm.RUNTIME_MARGIN_MIN
    assert slurm.runtime_min(timed, 3) == 3 * (60 + slurm.RUNTIME_MARGIN_MIN)
    steps = _spec(tmp_path)
    assert slurm.runtime_min(steps, 2) == 2 * slurm.DEFAULT_TRAIN_RUNTIME_MIN


def test_port_blocks_differ_between_jobs_and_stay_in_range():
    a, b = ray_nodes.job_ports(1234), ray_nodes.job_ports(1235)
    assert not set(a.values()) & set(b.values())
    for ports in (a, b, ray_nodes.job_ports(10**9 + 7)):
        assert len(set(ports.values())) == len(ports)
        assert ray_nodes.PORT_LOW <= min(ports.values())
        assert max(ports.values()) < ray_nodes.PORT_HIGH <= 32768  # below the ephemeral range
        assert ports["min-worker-port"] > max(v for k, v in ports.items() if "worker" not in k)


def test_scontrol_records_and_time_parsing():
    text = ("NodeName=n1 Arch=x86_64 CPUTot=160 RealMemory=512000 Gres=gpu:v100:4(S:0-1) "
            "NodeAddr=10.0.0.1 Reason=maintenance window\n"
            "NodeName=n2 CPUTot=48 RealMemory=192000 Gres=(null) NodeAddr=n2\n")
    recs = slurm.parse_records(text)
    assert [r["NodeName"] for r in recs] == ["n1", "n2"]
    assert recs[0]["CPUTot"] == "160" and recs[0]["NodeAddr"] == "10.0.0.1"
    assert slurm._gres_gpus(recs[0]["Gres"]) == 4 and slurm._gres_gpus("(null)") == 0
    assert slurm._gres_gpus("gpu:2,gpu:a100:1,shard:8") == 3
    assert slurm._minutes("2-00:00:00") == 2880 and slurm._minutes("02:00:00") == 120
    assert slurm._minutes("30") == 30 and slurm._minutes("UNLIMITED") is None


PARTS = {
    "main": slurm.Partition("main", (slurm.Node("p1", 160, 512000, 4, "p1"),
                                     slurm.Node("p2", 160, 512000, 4, "p2")),
                            max_nodes=None, max_time_min=2880, default=True),
    "debug": slurm.Partition("debug", (slurm.Node("d1", 40, 100000, 0, "d1"),),
                             max_nodes=1, max_time_min=120),
}


def test_request_problems_name_what_is_wrong():
    ok = dict(nodes=2, cpus=81, mem_mb=81 * 3000, gpus=1)
    assert slurm.request_problem("train", "main", PARTS, **ok) is None
    assert slurm.request_problem("train", None, PARTS, **ok) is None  # the default partition
    msg = slurm.request_problem("train", "gpu", PARTS, **ok)
    assert "partition 'gpu' does not exist" in msg and "debug, main" in msg
    msg = slurm.request_problem("train", "main", PARTS, nodes=1, cpus=161, mem_mb=0, gpus=0)
    assert "asks for 161 CPUs" in msg and "larger than any node" in msg and "160 CPUs" in msg
    msg = slurm.request_problem("train", "debug", PARTS, nodes=1, cpus=8, mem_mb=0, gpus=1)
    assert "1 GPU(s)" in msg and "larger than any node of partition 'debug'" in msg
    msg = slurm.request_problem("train", "main", PARTS, nodes=3, cpus=8, mem_mb=0, gpus=0)
    assert "3 nodes" in msg and "only 2 such node(s)" in msg


def test_check_runs_refuses_the_whole_study_with_one_line_per_run(tmp_path):
    spec = _spec(tmp_path, num_env_runners=200)
    with pytest.raises(ConfigError, match="nothing was submitted") as err:
        slurm.check_runs({spec.run_id: spec}, "main", partitions=PARTS)
    assert spec.run_id in str(err.value) and "201 CPUs" in str(err.value)
    fine = _spec(tmp_path, num_env_runners=100, nodes=2)
    slurm.check_runs({fine.run_id: fine}, "main", mem_mb_per_cpu=3000, partitions=PARTS)


def test_tune_runtime_is_its_time_budget_else_its_trials_limits():
    margin = slurm.RUNTIME_MARGIN_MIN
    assert slurm.tune_job_runtime_min(num_samples=8, max_concurrent_trials=1, time_budget_s=600,
                                      trial_time_limit_s=60) == int(600 * 1.1 / 60 + margin)
    seconds = 4 * slurm.DEFAULT_TRIAL_S / 2
    assert slurm.tune_job_runtime_min(num_samples=4, max_concurrent_trials=2,
                                      attempt=2) == 2 * int(seconds * 1.1 / 60 + margin)
    assert slurm.tune_job_runtime_min(num_samples=4, max_concurrent_trials=2,
                                      trial_time_limit_s=60) == int(4 * 60 / 2 * 1.1 / 60 + margin)


def test_tune_runtime_of_a_search_reads_its_settings():
    # What workflow/rules/common.smk calls: the search's settings, the same minutes.
    from types import SimpleNamespace

    budgeted = SimpleNamespace(tune={"time_budget_s": 600, "max_concurrent_trials": 1},
                               num_samples=8, budget={"time_limit_s": 60})
    assert slurm.tune_runtime_min(budgeted, 1) == int(600 * 1.1 / 60 + slurm.RUNTIME_MARGIN_MIN)
    trials = SimpleNamespace(tune={"max_concurrent_trials": 2}, num_samples=4, budget={})
    seconds = 4 * slurm.DEFAULT_TRIAL_S / 2
    assert slurm.tune_runtime_min(trials, 2) == 2 * int(seconds * 1.1 / 60 + slurm.RUNTIME_MARGIN_MIN)
