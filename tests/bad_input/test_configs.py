"""Malformed configs are rejected before any job starts, with a message naming the key and
the allowed values: by ddrl.study.study directly and by `snakemake -n` with the config."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import CASES, MACHINE_CASES, YAML_ERRORS, base, gpu_request, run_snakemake  # noqa: E402

from ddrl.errors import ConfigError  # noqa: E402
from ddrl.study.preflight import check_local_cpus, check_local_gpus  # noqa: E402
from ddrl.study.study import Study  # noqa: E402


def test_the_base_config_is_valid():
    assert len(Study.from_config(base()).runs) == 2


def test_there_are_at_least_20_distinct_malformed_configs():
    assert len(CASES) + len(YAML_ERRORS) >= 20
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_study_rejects(case):
    with pytest.raises(ConfigError) as err:
        Study.from_config(case.change(base()))
    message = str(err.value)
    for part in case.expect:
        assert part in message, f"{part!r} missing from: {message}"
    assert "Traceback" not in message


@pytest.mark.parametrize("name,text,line", YAML_ERRORS, ids=[c[0] for c in YAML_ERRORS])
def test_yaml_syntax_errors_name_the_line(tmp_path, name, text, line):
    path = tmp_path / "study.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        Study.from_file(path)
    message = str(err.value)
    assert str(path) in message and "YAML syntax error" in message and f"at {line}," in message


def test_missing_gpu_is_an_error_or_a_logged_fallback(caplog):
    with pytest.raises(ConfigError) as err:
        check_local_gpus(Study.from_config(gpu_request(fallback=False)).runs, gpus=0)
    assert "num_gpus_per_learner=1" in str(err.value) and "on_missing_gpu: cpu" in str(err.value)
    with caplog.at_level("WARNING", logger="ddrl.study.preflight"):
        lines = check_local_gpus(Study.from_config(gpu_request(fallback=True)).runs, gpus=0)
    assert len(lines) == 2 and all("trains on the CPU" in line for line in lines)
    assert [r.getMessage() for r in caplog.records] == lines
    # A machine with the GPU accepts the same config silently.
    assert check_local_gpus(Study.from_config(gpu_request(fallback=False)).runs, gpus=1) == []


def _cuda() -> bool:
    from ddrl.study.preflight import visible_gpus

    return visible_gpus() > 0


# Through the workflow: one case of each kind, in parallel (each is a fresh snakemake).
WORKFLOW_CASES = {c.name: c for c in CASES if c.name in {
    "unknown algorithm", "zero env runners", "unknown hyperparameter", "zero budget",
    "duplicate runs across experiments",
}}


def _dry_run(tmp_path: Path, name: str, config: dict | str):
    workdir = tmp_path / name.replace(" ", "_").replace(":", "")
    workdir.mkdir()
    path = workdir / "config.yaml"
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    return workdir, run_snakemake(workdir, path, "-n", check=False, timeout=300)


def test_snakemake_rejects_bad_configs_before_any_job(tmp_path):
    jobs = {name: case.change(base()) for name, case in WORKFLOW_CASES.items()}
    jobs["gpu without fallback"] = gpu_request(fallback=False)
    jobs["yaml syntax"] = YAML_ERRORS[0][1]
    jobs["gpu with fallback"] = gpu_request(fallback=True)
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = dict(zip(jobs, pool.map(lambda kv: _dry_run(tmp_path, *kv), jobs.items())))
    for name, (workdir, proc) in done.items():
        if name.startswith("gpu") and _cuda():
            continue
        if name == "gpu with fallback":  # plans, and says that it will use the CPU
            out = proc.stdout + proc.stderr
            assert proc.returncode == 0, out
            assert out.count("on_missing_gpu: cpu, so it trains on the CPU") >= 2, out
            assert "Job stats" in out or "total" in out
            continue
        assert proc.returncode != 0, name
        err = proc.stdout + proc.stderr
        assert "Traceback" not in err, (name, err)
        assert "Job stats" not in err, f"{name}: jobs were planned"
        assert not (workdir / "results").exists(), name
        if name in WORKFLOW_CASES:
            for part in WORKFLOW_CASES[name].expect:
                assert part in err, f"{name}: {part!r} missing from snakemake's error:\n{err}"
        elif name == "gpu without fallback":
            assert "num_gpus_per_learner=1" in err and "on_missing_gpu: cpu" in err, err
        else:  # snakemake parses --configfile itself and names no line; `ddrl validate` does
            assert "not valid JSON or YAML" in err, err


# -- What only a job used to find: env spaces, hyperparameter relations, this machine --------

NEW_CASES = [c for c in CASES if c.name in {
    "TD3 on discrete actions", "SAC transition buffer on discrete actions",
    "discrete observations", "PPO minibatch larger than the train batch",
    "PPO rollout fragment that cannot fill the train batch",
    "SAC minibatch larger than the replay buffer", "SAC learning starts after the budget",
}]


def test_there_are_at_least_15_cases_a_job_used_to_find():
    start = next(i for i, c in enumerate(CASES) if c.name == "TD3 on discrete actions")
    assert len(CASES) - start + len(MACHINE_CASES) >= 15


@pytest.mark.parametrize("name,change,cpus", MACHINE_CASES, ids=[c[0] for c in MACHINE_CASES])
def test_runners_this_machine_cannot_hold_are_refused(name, change, cpus):
    runs = Study.from_config(change(base())).runs  # a valid config (Slurm could run it) ...
    with pytest.raises(ConfigError) as err:  # ... that a 4-core machine cannot
        check_local_cpus(runs, cpus=4)
    message = str(err.value)
    assert f"= {cpus} CPUs, but this machine has 4" in message, message
    assert "allowed here: num_env_runners x num_cpus_per_env_runner <= 4" in message, message
    # The driver's extra CPU is not counted: runners filling the machine are accepted.
    check_local_cpus(runs, cpus=cpus)


def test_env_spaces_are_cached_on_disk_per_env_and_versions(tmp_path, monkeypatch):
    from ddrl.envs import spaces

    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path))
    spaces._env_spaces.cache_clear()
    first = spaces.env_spaces("Pendulum-v1")
    files = list((tmp_path / "spaces").glob("*.json"))
    assert len(files) == 1 and first["action"] == {"type": "Box", "shape": [1],
                                                   "dtype": "float32", "bounded": True}
    # The next process reads the file instead of building the env.
    spaces._env_spaces.cache_clear()
    monkeypatch.setattr(spaces, "_probe", lambda *a: pytest.fail("built the env again"))
    assert spaces.env_spaces("Pendulum-v1") == first
    # A different env_config is another key (it may change the spaces).
    monkeypatch.setattr(spaces, "_probe", lambda *a: {"observation": {}, "action": {},
                                                       "entry_point": "gymnasium.x:Y"})
    spaces.env_spaces("Pendulum-v1", {"g": 9.0})
    assert len(list((tmp_path / "spaces").glob("*.json"))) == 2
    spaces._env_spaces.cache_clear()


def _run(tmp_path: Path, name: str, config: dict):
    """The workflow for real (not -n): it must stop while parsing, before any job."""
    workdir = tmp_path / name.replace(" ", "_")
    workdir.mkdir()
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return workdir, run_snakemake(workdir, path, check=False, timeout=300)


def test_new_cases_fail_before_any_job_in_the_workflow(tmp_path):
    jobs = {c.name: c.change(base()) for c in NEW_CASES}
    machine = MACHINE_CASES[0][0]
    jobs[machine] = MACHINE_CASES[0][1](base())
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(jobs, pool.map(
            lambda kv: (_run if kv[0] == machine else _dry_run)(tmp_path, *kv), jobs.items())))
    expect = {c.name: c.expect for c in NEW_CASES}
    expect[MACHINE_CASES[0][0]] = ("num_env_runners=64", "this machine has",
                                   "allowed here: num_env_runners x num_cpus_per_env_runner <=")
    for name, (workdir, proc) in done.items():
        err = proc.stdout + proc.stderr
        assert proc.returncode != 0, name
        assert "Traceback" not in err, (name, err)
        # The machine check runs in onstart: the DAG is planned, no job starts.
        assert ("Job stats" not in err) or name == machine, (name, err)
        assert "rule train:" not in err and "Finished job" not in err, (name, err)
        assert not (workdir / "results").exists(), name
        for part in expect[name]:
            assert part in err, f"{name}: {part!r} missing from snakemake's error:\n{err}"


def test_a_dry_run_plans_what_this_machine_cannot_run_with_a_warning(tmp_path):
    """Planning a cluster-sized study on a laptop (`snakemake -n`, local profile) works."""
    name, change, cpus = MACHINE_CASES[0]
    workdir, proc = _dry_run(tmp_path, "plan", change(base()))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "num_env_runners=64" in out and "`snakemake -n` plans it" in out, out
    assert not (workdir / "results").exists()


@pytest.mark.parametrize("algorithm,env,hp,resources", [
    ("PPO", "CartPole-v1", {"train_batch_size": 200, "minibatch_size": 200}, {}),
    ("PPO", "CartPole-v1", {"train_batch_size": 200, "rollout_fragment_length": 200}, {}),
    ("PPO", "CartPole-v1", {"train_batch_size": 200, "rollout_fragment_length": 50},
     {"num_envs_per_env_runner": 4}),
    ("PPO", "CartPole-v1", {"train_batch_size": 200, "rollout_fragment_length": 21}, {}),  # 210
    ("SAC", "Pendulum-v1", {"num_steps_sampled_before_learning_starts": 399,
                            "train_batch_size": 256, "replay_buffer_capacity": 399}, {}),
    ("SAC", "CartPole-v1", {"replay_buffer_type": "EpisodeReplayBuffer", "n_step": 3,
                            "num_steps_sampled_before_learning_starts": 100}, {}),
    ("TD3", "InvertedPendulumBulletEnv-v0", {"target_noise": 0, "target_noise_clip": 0,
                                             "num_steps_sampled_before_learning_starts": 0}, {}),
], ids=["minibatch = batch", "fragment = batch", "fragment x envs = batch",
        "fragment within 10%", "warm-up and batch = capacity < budget",
        "SAC episode buffer: discrete actions, n-step", "TD3 smoothing off"])
def test_the_edges_of_each_rule_are_accepted(algorithm, env, hp, resources):
    cfg = base()
    cfg["experiments"][0].update(algorithms=[algorithm], envs=[env],
                                 resources=[{"num_env_runners": 1, **resources}])
    cfg["hyperparameters"] = {algorithm: hp}
    assert len(Study.from_config(cfg).runs) == 2
