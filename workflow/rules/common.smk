# Validation, the study's runs, and path helpers shared by every stage.
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from ddrl.errors import ConfigError
from ddrl.study import Study

try:
    STUDY = Study.from_config(config, source="config")
except ConfigError as err:
    raise WorkflowError(str(err)) from None
# The generated JSON schema, for the catalog convention (it passes when the above passed).
validate(config, schema="../schemas/config.schema.yaml", set_default=False)

RUNS = STUDY.runs
ROOT = f"results/{STUDY.name}"
RUN_DIR = ROOT + "/runs/{run_id}"


wildcard_constraints:
    run_id=r"[A-Za-z0-9_.-]+",


def run_spec(wildcards):
    return RUNS[wildcards.run_id].to_dict()


def run_threads(wildcards):
    return RUNS[wildcards.run_id].cpus


def run_gpus(wildcards):
    return RUNS[wildcards.run_id].gpus


def run_files(name, run_ids=None):
    """``name`` (e.g. "progress.csv") in the folder of every run, or of ``run_ids``."""
    return [f"{ROOT}/runs/{r}/{name}" for r in (run_ids or RUNS)]


# Each stage appends the files `rule all` asks for.
TARGETS = []


def all_targets():
    return TARGETS
