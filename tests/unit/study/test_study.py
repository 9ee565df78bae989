"""Study configs: schema validation, expansion into runs, run ids."""

from __future__ import annotations

import copy

import pytest
import yaml

from ddrl.errors import ConfigError
from ddrl.study.schema import config_schema
from ddrl.study.study import Study, load_yaml
from ddrl.runs import RunSpec

from conftest import REPO, TINY_CONFIG

BASE = {
    "study": "unit",
    "experiments": [
        {
            "algorithms": ["PPO", "SAC"],
            "envs": ["InvertedPendulumBulletEnv-v0"],
            "seeds": [1, 2],
            "resources": [{"num_env_runners": 1}, {"num_env_runners": 2}],
            "budget": {"env_steps": 1000},
        }
    ],
    "hyperparameters": {"PPO": {"lr": 0.001},
                        # learning starts within the 1000-step budget (ddrl.config.relations)
                        "SAC": {"num_steps_sampled_before_learning_starts": 100}},
}


def config(**changes):
    cfg = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        node = cfg
        *parents, last = dotted.split("__")
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[last] = value
    return cfg


def test_shipped_configs_are_valid():
    for path in [REPO / "config" / "config.yaml", TINY_CONFIG]:
        study = Study.from_file(path)
        assert study.runs, path


def test_expansion_is_the_full_grid_with_resolved_hyperparameters():
    study = Study.from_config(BASE)
    assert len(study.runs) == 2 * 2 * 2
    ppo = [s for s in study.runs.values() if s.algorithm == "PPO"]
    assert {s.hyperparameters["lr"] for s in ppo} == {0.001}
    # Unset hyperparameters take the registry default and are part of the spec.
    assert all(s.hyperparameters["clip_param"] == 0.2 for s in ppo)
    assert {s.resources["num_env_runners"] for s in ppo} == {1, 2}
    assert all(s.resources["num_envs_per_env_runner"] == 1 for s in ppo)


def test_run_id_is_readable_and_stable():
    spec = next(iter(Study.from_config(BASE).runs.values()))
    assert spec.run_id.startswith("ppo-InvertedPendulumBulletEnv-v0-r1x1c1g0-s1-")
    assert len(spec.run_id.rsplit("-", 1)[1]) == 8
    assert RunSpec.from_dict(spec.to_dict()).run_id == spec.run_id
    assert Study.from_config(BASE).runs.keys() == Study.from_config(BASE).runs.keys()


@pytest.mark.parametrize(
    "changes",
    [
        {"hyperparameters": {**BASE["hyperparameters"], "PPO": {"lr": 0.002}}},
        {"experiments__0__budget": {"env_steps": 2000}},
        {"experiments__0__resources": [{"num_env_runners": 1, "num_envs_per_env_runner": 2}]},
        {"experiments__0__seeds": [3]},
        {"checkpoint_every": 3},
    ],
)
def test_any_result_changing_setting_changes_the_run_id(changes):
    before = {s.run_id for s in Study.from_config(BASE).runs.values() if s.algorithm == "PPO"}
    after = {s.run_id for s in Study.from_config(config(**changes)).runs.values()
             if s.algorithm == "PPO"}
    assert before.isdisjoint(after)


def test_changing_one_algorithm_leaves_the_others_run_ids_alone():
    sac = lambda cfg: {r for r, s in Study.from_config(cfg).runs.items() if s.algorithm == "SAC"}  # noqa: E731
    assert sac(BASE) == sac(config(hyperparameters={**BASE["hyperparameters"], "PPO": {"lr": 0.5}}))


def test_run_needs_cpus_for_runners_and_driver():
    cfg = config(experiments__0__resources=[{"num_env_runners": 4, "num_cpus_per_env_runner": 2}])
    spec = next(iter(Study.from_config(cfg).runs.values()))
    assert spec.cpus == 9 and spec.gpus == 0


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"experiments__0__algorithms": ["PPX"]}, "'PPX' is not allowed; expected one of"),
        ({"experiments__0__envs": ["NoSuchEnv-v0"]}, "unknown env id 'NoSuchEnv-v0'"),
        ({"experiments__0__resources": [{"num_env_runners": 0}]}, "num_env_runners: 0 is less than the minimum of 1"),
        ({"experiments__0__budget": {}}, "experiments.0.budget"),
        ({"experiments__0__budget": {"env_steps": 0}}, "env_steps: 0 is less than the minimum of 1"),
        ({"hyperparameters": {"PPO": {"learning_rate": 1}}}, "unknown PPO hyperparameter(s) ['learning_rate']; PPO accepts:"),
        ({"hyperparameters": {"PPO": {"lr": "fast"}}}, "hyperparameters.PPO.lr: 'fast' is not of type 'number'"),
        ({"hyperparameters": {"DQN": {}}}, "unknown algorithm(s) ['DQN']"),
        ({"experiments__0__seeds": [1, 1]}, "experiments.0.seeds"),
        ({"colour": "red"}, "unknown key(s) ['colour']; allowed keys:"),
        ({"study": "has space"}, "study: 'has space' does not match"),
    ],
)
def test_bad_configs_are_rejected_with_the_key_named(changes, expected):
    with pytest.raises(ConfigError) as err:
        Study.from_config(config(**changes))
    assert expected in str(err.value)


def test_duplicate_runs_are_rejected():
    cfg = copy.deepcopy(BASE)
    cfg["experiments"].append(copy.deepcopy(cfg["experiments"][0]))
    with pytest.raises(ConfigError, match=r"duplicate run ppo-.* defined by experiments.0 and experiments.1"):
        Study.from_config(cfg)


def test_yaml_syntax_errors_give_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("study: x\nexperiments:\n  - algorithms: [PPO\n    envs: []\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: YAML syntax error at line \d+, column \d+"):
        load_yaml(path)


def test_committed_schema_file_matches_the_registry():
    committed = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert committed == config_schema(), "run `ddrl schema > workflow/schemas/config.schema.yaml`"
