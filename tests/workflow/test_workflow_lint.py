"""`snakemake --lint` reports nothing, snakefmt leaves workflow/ unchanged, and the Snakemake
workflow catalog's files are in place."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

LINT = re.compile(r"^    \* (.+?)(?: in line \d+)?\.?:$")
# The default study, and one with grid and tune searches (their rules, wildcards and functions).
CONFIGS = ["config/config.yaml", "config/thesis-search.yaml"]


def _lint(configfile) -> tuple[subprocess.CompletedProcess, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--configfile", str(configfile),
         "--snakefile", str(REPO / "workflow" / "Snakefile"), "--directory", str(REPO),
         "--cores", "1"],
        capture_output=True, text=True, timeout=600, cwd=REPO)
    out = proc.stdout + proc.stderr
    return proc, [m.group(1) for line in out.splitlines() if (m := LINT.match(line))]


@pytest.mark.parametrize("config", CONFIGS)
def test_lint_reports_nothing(config):
    proc, titles = _lint(REPO / config)
    out = proc.stdout + proc.stderr
    assert titles == [], f"snakemake --lint findings: {titles}\n{out[-3000:]}"
    assert proc.returncode == 0 and "Lints for" not in out, out[-3000:]


def test_lint_reader_sees_a_lint(tmp_path):
    # Guards the test above: a lint in the workflow is found and read back by title.
    (tmp_path / "Snakefile").write_text(
        'def f(wildcards):\n    return "x"\n\n\nrule a:\n    output:\n        "/abs/a.txt",\n'
        '    shell:\n        "touch {output}"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--snakefile", str(tmp_path / "Snakefile"),
         "--directory", str(tmp_path), "--cores", "1"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    titles = [m.group(1) for line in (proc.stdout + proc.stderr).splitlines()
              if (m := LINT.match(line))]
    assert 'Absolute path "/abs/a.txt"' in titles, proc.stdout + proc.stderr


def test_snakefmt_leaves_the_workflow_unchanged():
    # pyproject.toml [tool.snakefmt] sets the line length; run from the repository root.
    snakefmt = Path(sys.executable).with_name("snakefmt")
    cmd = [str(snakefmt)] if snakefmt.exists() else [sys.executable, "-m", "snakefmt"]
    proc = subprocess.run([*cmd, "--check", "--diff", "workflow/"], capture_output=True,
                          text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, (
        f"snakefmt would reformat (run `snakefmt workflow/`):\n{proc.stdout[-4000:]}"
        f"{proc.stderr[-2000:]}")
    assert "would be left unchanged" in proc.stderr, proc.stderr


def test_rule_files_hold_rules_and_common_holds_the_functions():
    # The convention the lint checks by pattern, checked by structure: no `def` beside a rule.
    rules = REPO / "workflow" / "rules"
    for smk in [*rules.glob("*.smk"), REPO / "workflow" / "Snakefile"]:
        text = smk.read_text()
        has_rule = re.search(r"^rule \w+:", text, re.M)
        has_def = re.search(r"^\s*def \w+", text, re.M)
        assert not (has_rule and has_def), f"{smk.name}: functions beside rules"
    assert not re.search(r"^rule \w+:", (rules / "common.smk").read_text(), re.M)


def test_catalog_files_and_conda_envs():
    catalog = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    assert catalog["usage"]["software-stack-deployment"]["conda"] is True
    assert (REPO / "config" / "README.md").read_text().startswith("# ")
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    env = yaml.safe_load((REPO / "workflow" / "envs" / "ddrl.yaml").read_text())
    top = yaml.safe_load((REPO / "environment.yml").read_text())
    assert env["dependencies"] == top["dependencies"], "workflow/envs/ddrl.yaml != environment.yml"
    assert env["channels"] == top["channels"]
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert 'CONDA_ENV = "../envs/ddrl.yaml"' in common
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        text = smk.read_text()
        scripts = len(re.findall(r"^    script:", text, re.M))
        condas = len(re.findall(r"^    conda:\n        CONDA_ENV$", text, re.M))
        assert scripts == condas, f"{smk.name}: {scripts} script rule(s), {condas} conda: CONDA_ENV"
