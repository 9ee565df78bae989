"""Packaging facts that drift silently: environment.yml against pyproject.toml and the lock."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# pip name -> conda-forge name, where they differ.
CONDA_NAMES = {"ray": "ray-rllib", "torch": "pytorch", "snakemake": "snakemake-minimal"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[_norm(name)] = version.strip()
    return pins


def _environment() -> dict[str, str | None]:
    """conda and pip entries of environment.yml: normalised name -> pinned version or None."""
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    found: dict[str, str | None] = {}
    for dep in deps:
        entries = dep["pip"] if isinstance(dep, dict) else [dep]
        for entry in entries:
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(?:==?\s*([^\s,<>=]+))?", entry)
            assert m, f"environment.yml: cannot read {entry!r}; expected name=version"
            found[_norm(m.group(1))] = m.group(2)
    return found


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"]]


def test_environment_covers_every_runtime_dependency_at_the_locked_version():
    env, lock = _environment(), _lock()
    for req in _runtime_requirements():
        pip_name = _norm(req.name)
        conda_name = CONDA_NAMES.get(pip_name, pip_name)
        assert conda_name in env, (
            f"environment.yml lacks {req.name} (conda name {conda_name}), "
            "a runtime dependency in pyproject.toml")
        assert env[conda_name] == lock[pip_name], (
            f"environment.yml pins {conda_name}={env[conda_name]}, requirements.lock has "
            f"{req.name}=={lock[pip_name]}")
        assert req.specifier.contains(lock[pip_name], prereleases=True), (
            f"requirements.lock's {req.name}=={lock[pip_name]} is outside pyproject's {req}")


def test_every_pin_in_environment_matches_the_lock():
    lock = _lock()
    pip_of = {v: k for k, v in CONDA_NAMES.items()} | {"ray-default": "ray"}
    for name, version in _environment().items():
        if name in ("python", "pip"):
            continue
        assert version is not None, f"environment.yml: {name} is not pinned"
        locked = lock[pip_of.get(name, name)]
        assert version == locked, f"environment.yml pins {name}={version}, the lock {locked}"


def test_core_dependencies_leave_out_what_only_extras_use():
    names = {_norm(r.name) for r in _runtime_requirements()}
    assert "boto3" not in names, "boto3 belongs in the aws extra"
    assert "scipy" not in names, "nothing in src/ imports scipy"
    src = "\n".join(p.read_text() for p in (ROOT / "src").rglob("*.py"))
    assert not re.search(r"^\s*(import|from)\s+scipy\b", src, re.M)
    # boto3 only inside functions of ddrl.aws (lazy), so `import ddrl.*` works without it
    for path in (ROOT / "src" / "ddrl").rglob("*.py"):
        for line in path.read_text().splitlines():
            if re.match(r"(import|from)\s+(boto3|botocore)\b", line):
                raise AssertionError(f"{path}: module-level boto3 import: {line}")


def test_package_data_patterns_match_real_files():
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for pattern in setup["package-data"]["ddrl"]:
        assert list((ROOT / "src" / "ddrl").glob(pattern)), f"package-data {pattern} matches nothing"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_core_modules_import_without_boto3():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['boto3'] = None; sys.modules['botocore'] = None\n"
        "import ddrl.cli, ddrl.study.schema, ddrl.study.study, ddrl.aws.settings\n"
        "ddrl.study.schema.config_schema()\n"
        "import ddrl.aws.deploy, ddrl.aws.sagemaker\n"
        "try:\n    ddrl.aws.sagemaker._session(None)\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # an AWS command names the extra instead of failing on the import
    assert out.stdout.strip() == "DdrlError AWS commands need boto3: pip install 'ddrl[aws]'"
