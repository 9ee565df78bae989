"""`ddrl` given wrong paths, unknown runs or another algorithm's checkpoint: a non-zero exit
and one clear line on stderr; a traceback only with --debug."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import CASES, MACHINE_CASES, base  # noqa: E402

from ddrl import cli  # noqa: E402
from ddrl.training.checkpoints import MANIFEST  # noqa: E402
from ddrl.study.study import Study  # noqa: E402


def run_cli(capsys, *argv: str) -> tuple[int, list[str]]:
    code = cli.main(list(argv))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("ddrl:")]
    return code, lines


@pytest.fixture
def study_file(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(base()))
    return path


def _sac_spec(tmp_path) -> Path:
    cfg = base()
    cfg["experiments"][0].update(algorithms=["SAC"], envs=["Pendulum-v1"])
    cfg["hyperparameters"] = {"SAC": {"num_steps_sampled_before_learning_starts": 100}}
    spec = next(iter(Study.from_config(cfg)))
    path = tmp_path / "sac.json"
    path.write_text(json.dumps(spec.to_dict()))
    return path


def _fake_checkpoint(path: Path, algorithm: str, files: dict[str, int], env: str) -> Path:
    """A ddrl checkpoint folder as far as its manifest goes."""
    path.mkdir(parents=True)
    for name in files:
        (path / name).write_bytes(b"x" * 10)
    (path / MANIFEST).write_text(json.dumps(
        {"algorithm": algorithm, "env": env, "iteration": 3, "env_steps": 600, "files": files}))
    return path


def test_validate_missing_file(capsys, tmp_path):
    code, lines = run_cli(capsys, "validate", str(tmp_path / "nope.yaml"))
    assert code == 2 and len(lines) == 1
    assert "cannot read config" in lines[0] and "nope.yaml" in lines[0]


def test_validate_bad_config_names_the_key(capsys, tmp_path):
    case = next(c for c in CASES if c.name == "unknown hyperparameter")
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(case.change(base())))
    code = cli.main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "hyperparameters.PPO: unknown PPO hyperparameter(s) ['learning_rate']; PPO accepts" in err


# The cases a job used to find (env spaces, hyperparameter relations): one line each.
JOB_CASES = CASES[next(i for i, c in enumerate(CASES) if c.name == "TD3 on discrete actions"):]


@pytest.mark.parametrize("case", JOB_CASES, ids=[c.name for c in JOB_CASES])
def test_validate_refuses_what_a_job_used_to_find(capsys, tmp_path, case):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(case.change(base())))
    code, lines = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(lines) == 1, lines
    for part in case.expect:
        assert part in lines[0], f"{part!r} missing from: {lines[0]}"


def test_validate_local_checks_this_machine(capsys, tmp_path, monkeypatch):
    from ddrl.study import preflight

    name, change, cpus = MACHINE_CASES[0]
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(change(base())))
    monkeypatch.setattr(preflight, "usable_cpus", lambda: 2)
    assert cli.main(["validate", str(path)]) == 0  # valid as a config (Slurm can run it)
    assert "valid; study 'bad' has 2 run(s)" in capsys.readouterr().out
    code, lines = run_cli(capsys, "validate", "--local", str(path))
    assert code == 2 and len(lines) == 1
    assert str(path) in lines[0] and "num_env_runners=64" in lines[0]
    assert "this machine has 2" in lines[0] and "<= 2" in lines[0]


def test_validate_yaml_syntax_error_names_the_line(capsys, tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("study: x\nexperiments:\n  - algorithms: [PPO\n    envs: [CartPole-v1]\n")
    code, lines = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(lines) == 1 and "line 4, column 9" in lines[0]


def test_train_missing_spec(capsys, tmp_path):
    code, lines = run_cli(capsys, "train", "--spec", str(tmp_path / "spec.json"))
    assert code == 2 and len(lines) == 1 and "cannot read run spec" in lines[0]


def test_train_unknown_run_id(capsys, study_file):
    code, lines = run_cli(capsys, "train", "--config", str(study_file), "--run-id", "ppo-nope")
    assert code == 2 and len(lines) == 1
    assert "'ppo-nope' is not in" in lines[0] and "ddrl runs" in lines[0]


def test_evaluate_missing_checkpoint(capsys, tmp_path):
    code, lines = run_cli(capsys, "evaluate", "--spec", str(_sac_spec(tmp_path)),
                          "--checkpoint", str(tmp_path / "nowhere"))
    assert code == 2 and len(lines) == 1 and "nowhere does not exist" in lines[0]


def test_evaluate_checkpoint_of_another_algorithm(capsys, tmp_path):
    ckpt = _fake_checkpoint(tmp_path / "ppo_ckpt", "PPO", {}, "Pendulum-v1")
    out = tmp_path / "eval.json"
    code, lines = run_cli(capsys, "evaluate", "--spec", str(_sac_spec(tmp_path)),
                          "--checkpoint", str(ckpt), "--out", str(out))
    assert code == 2 and len(lines) == 1
    assert "trained with PPO, but the run asks for SAC" in lines[0]
    assert not out.exists()


def test_evaluate_corrupt_checkpoint_writes_nothing(capsys, tmp_path):
    ckpt = _fake_checkpoint(tmp_path / "ckpt", "SAC", {"module.pt": 4096}, "Pendulum-v1")
    out = tmp_path / "eval.json"
    code, lines = run_cli(capsys, "evaluate", "--spec", str(_sac_spec(tmp_path)),
                          "--checkpoint", str(ckpt), "--out", str(out))
    assert code == 2 and len(lines) == 1
    assert "is corrupt: module.pt has 10 bytes, expected 4096" in lines[0]
    assert not out.exists() and not list(tmp_path.glob(".eval.json*"))


def test_traceback_only_with_debug(tmp_path):
    """As a real process: exit status, one line; --debug adds the traceback."""
    cmd = [sys.executable, "-m", "ddrl.cli"]
    args = ["train", "--spec", str(tmp_path / "missing.json")]
    plain = subprocess.run(cmd + args, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 2
    assert plain.stderr.strip().splitlines() == [
        f"ddrl: error: cannot read run spec {tmp_path / 'missing.json'}: [Errno 2] No such file "
        f"or directory: '{tmp_path / 'missing.json'}'"]
    debug = subprocess.run(cmd + ["--debug"] + args, capture_output=True, text=True, timeout=120)
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr
