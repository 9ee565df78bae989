"""A tune search over several Slurm nodes (``tune: {nodes: N}``): what its job asks for,
and a clear error outside a Slurm job. The search itself on a real 2-node allocation is
tests/slurm/test_slurm_search.py."""

from __future__ import annotations

import pytest

from ddrl.errors import ConfigError
from ddrl.cluster.slurm import SlurmError
from ddrl.study.study import Study
from ddrl.search.tune import cpus_per_node, total_cpus, tune_cluster, tune_nodes


def _search(tune: dict, num_env_runners: int = 1):
    config = {
        "study": "t",
        "experiments": [{"algorithms": ["PPO"], "envs": ["CartPole-v1"], "seeds": [1],
                         "budget": {"env_steps": 100}}],
        "search": [{"kind": "tune", "algorithm": "PPO", "env": "CartPole-v1",
                    "budget": {"env_steps": 100}, "space": {"lr": [1e-4, 1e-3]},
                    "resources": {"num_env_runners": num_env_runners}, "tune": tune}],
    }
    return Study.from_config(config).searches[0]


def test_cpus_are_shared_out_over_the_nodes_with_room_for_a_trial_on_each():
    # A trial: 2 env runners + the driver = 3 CPUs; 4 at once = 12 CPUs over 2 nodes.
    search = _search({"nodes": 2, "max_concurrent_trials": 4}, num_env_runners=2)
    assert (tune_nodes(search), total_cpus(search), cpus_per_node(search)) == (2, 12, [6, 6])
    # Fewer concurrent trials than nodes: every node still fits one trial.
    assert cpus_per_node(_search({"nodes": 3, "max_concurrent_trials": 1})) == [2, 2, 2]
    assert cpus_per_node(_search({"nodes": 2, "num_cpus": 7})) == [4, 4]
    assert cpus_per_node(_search({})) == [2]  # one node: the private Ray's CPUs


def test_nodes_must_be_a_positive_integer():
    with pytest.raises(ConfigError, match="nodes"):
        _search({"nodes": 0})


def test_multi_node_tune_outside_a_slurm_job_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(SlurmError, match="SLURM_JOB_ID is unset"):
        with tune_cluster(_search({"nodes": 2}), tmp_path):
            pass
    with tune_cluster(_search({}), tmp_path) as address:  # one node: no cluster to start
        assert address is None
