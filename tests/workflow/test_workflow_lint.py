"""`snakemake --lint` on the default study: no lints but the documented exceptions, and the
Snakemake workflow catalog's files in place."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from conftest import REPO

# Lint titles we accept, with the reason (docs/architecture.md "Workflow conventions" repeats
# them).
ALLOWED = {
    # RUN_DIR + "/run.json": one run-folder pattern shared by every stage. Converting to
    # f-strings is left to the rules restructure; the linter reads the "/run.json" half of
    # the same expressions as an absolute path.
    "Path composition with '+'",
    "Absolute path",
    # Each stage file keeps its input functions beside its rules (one file per stage).
    "Mixed rules and functions in same snakefile",
    # DDRL_IMAGE is optional (it only picks the container image); `envvars:` would require it.
    "Environment variable DDRL_IMAGE used but not asserted with envvars directive",
}
LINT = re.compile(r"^    \* (.+?)(?: in line \d+)?\.?:$")


def _lints(configfile) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--configfile", str(configfile),
         "--snakefile", str(REPO / "workflow" / "Snakefile"), "--directory", str(REPO),
         "--cores", "1"],
        capture_output=True, text=True, timeout=600, cwd=REPO)
    out = proc.stdout + proc.stderr
    assert "Lints for" in out or proc.returncode == 0, out[-3000:]
    return [m.group(1) for line in out.splitlines() if (m := LINT.match(line))]


def test_lint_has_only_the_documented_exceptions():
    titles = _lints(REPO / "config" / "config.yaml")
    assert titles, "expected the documented lints; did the lint output format change?"
    unexpected = sorted({t for t in titles
                         if not any(t.startswith(a.split('"')[0]) for a in ALLOWED)})
    assert not unexpected, f"new snakemake --lint findings: {unexpected}"
    assert not any("conda environment" in t for t in titles)


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
