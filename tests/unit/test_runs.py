"""ddrl.runs: the one owner of run ids, labels, hyperparameter keys and the run folder."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from ddrl.runs import (SCALED_RESOURCES, RunFolder, RunNotFinished, RunSpec, config_identity,
                       hyperparameter_key, read_run, resource_tag, resources_legend, run_record,
                       workers_label)

RES = {"num_env_runners": 2, "num_envs_per_env_runner": 4, "num_cpus_per_env_runner": 1,
       "num_gpus_per_learner": 1, "nodes": 2}


def _spec(**over) -> RunSpec:
    return RunSpec(**{"algorithm": "PPO", "env": "my.mod:Env-v0", "seed": 3, "resources": RES,
                      "budget": {"env_steps": 100}, "hyperparameters": {"lr": 0.001}, **over})


def test_hyperparameter_key_is_the_six_hex_sha256_of_canonical_json():
    hp = {"lr": 0.001, "fcnet_hiddens": [64, 64]}
    canonical = json.dumps(hp, sort_keys=True, separators=(",", ":"))
    assert hyperparameter_key(hp) == hashlib.sha256(canonical.encode()).hexdigest()[:6]
    assert hyperparameter_key({"fcnet_hiddens": [64, 64], "lr": 0.001}) == hyperparameter_key(hp)


def test_run_id_uses_the_tag_and_a_safe_env_name():
    spec = _spec()
    assert spec.resource_label == resource_tag(RES) == "r2x4c1g1n2"
    assert spec.run_id == f"ppo-my.mod_Env-v0-r2x4c1g1n2-s3-{spec.digest}"
    assert resource_tag({**RES, "nodes": 1}) == "r2x4c1g1"


def test_config_id_is_shared_by_seeds_and_by_nothing_else():
    spec = _spec()
    assert _spec(seed=4).config_id == spec.config_id != _spec(seed=4).digest
    assert _spec(hyperparameters={"lr": 0.002}).config_id != spec.config_id
    assert _spec(budget={"env_steps": 200}).config_id != spec.config_id
    assert _spec(resources={**RES, "num_env_runners": 4}).config_id != spec.config_id
    # run.json's spec (plain JSON) gives the same identity as the spec itself.
    assert config_identity(json.loads(json.dumps(spec.to_dict()))) == spec.config_id
    # A scaling series leaves the worker, GPU and node counts out too, but not the rest.
    series = config_identity(spec.to_dict(), without_resources=SCALED_RESOURCES)
    more = _spec(seed=4, resources={**RES, "num_env_runners": 8, "num_gpus_per_learner": 0})
    assert config_identity(more.to_dict(), without_resources=SCALED_RESOURCES) == series
    fewer_envs = _spec(resources={**RES, "num_envs_per_env_runner": 1})
    assert config_identity(fewer_envs.to_dict(), without_resources=SCALED_RESOURCES) != series


def test_labels_in_words():
    assert resources_legend(RES) == "2 runnersx4 envs, 1 GPU"
    assert resources_legend({**RES, "num_env_runners": 1, "num_envs_per_env_runner": 1,
                             "num_gpus_per_learner": 0}) == "1 runner"
    assert workers_label(4, 1, 2) == "4 runners + 1 GPU on 2 nodes"
    assert workers_label(1, 0, 1) == "1 runner"


def test_run_folder_round_trip_and_unfinished_runs(tmp_path):
    folder = RunFolder(tmp_path / "run")
    with pytest.raises(RunNotFinished, match="run.json is missing"):
        folder.read()
    spec = _spec()
    record = run_record(spec, iterations=2, env_steps=100, time_total_s=1.5,
                        episode_return_mean=3.0, rllib_config={}, placement={}, sessions=1,
                        started="s", finished="f", command=["x"], provenance={"host": {}})
    folder.path.mkdir()
    folder.write_record(record)
    with pytest.raises(RunNotFinished, match="progress.csv is missing"):
        folder.read()
    pd.DataFrame({"iteration": [1, 2]}).to_csv(folder.progress_csv, index=False)
    got, progress = read_run(folder.path)
    assert got == json.loads(json.dumps(record)) and list(progress["iteration"]) == [1, 2]
    assert RunSpec.from_dict(got["spec"]).run_id == spec.run_id == got["run_id"]
    assert got["result"]["checkpoint"] == folder.checkpoint.name
