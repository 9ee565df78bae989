# Validation, the study's runs, and the paths, input functions and settings that the rules
# of every stage use. Functions live here, and the rule files hold only rules (the
# convention `snakemake --lint` checks), so this file holds no rule.
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import ddrl.search.tune as ddrl_tune
from ddrl.aws.batch import batch_vcpus, on_aws_batch
from ddrl.cluster import slurm as ddrl_slurm
from ddrl.config.eval_config import evaluation_settings
from ddrl.errors import ConfigError
from ddrl.figures.catalog import CATEGORY as FIGURE_CATEGORY
from ddrl.figures.catalog import output_key
from ddrl.study.study import Study, experiment_run_ids

try:
    STUDY = Study.from_config(config, source="config")
except ConfigError as err:
    raise WorkflowError(str(err)) from None
# The generated JSON schema, for the catalog convention (it passes when the above passed).
validate(config, schema="../schemas/config.schema.yaml", set_default=False)

RUNS = STUDY.runs
# The experiments' runs: what every stage's run_files() covers. Search trials (also in RUNS,
# trained by rule train) are reached through rules/search.smk.
EXPERIMENT_RUNS = experiment_run_ids(STUDY)
# Runs by what their experiment is for (config `purpose:`): learning runs feed the reward
# curves and returns tables, timing runs the speedup tables; each table groups by experiment.
LEARNING_RUNS = STUDY.experiment_runs("learning")
TIMING_RUNS = STUDY.experiment_runs("timing")


def experiments_of(run_ids):
    """Param: run id -> experiment name, for the aggregation scripts."""
    return {r: STUDY.experiment_of[r] for r in run_ids}


def runs_with(output):
    """Runs whose experiment asks for ``output`` (eval, video, policy; config `outputs:`)."""
    return STUDY.experiment_runs(output=output)


ROOT = f"results/{STUDY.name}"
# One run's folder, with its wildcard: f"{RUN_DIR}/run.json" in a rule.
RUN_DIR = f"{ROOT}/runs/{{run_id}}"


wildcard_constraints:
    run_id=r"[A-Za-z0-9_.-]+",


def run_spec(wildcards):
    return RUNS[wildcards.run_id].to_dict()


def run_inputs(wildcards):
    """Files a run's hyperparameters come from (hyperparameters_from: a search's best.yaml).

    ancient(): the run id already hashes the file's content, so a new winner makes new runs;
    rewriting the same winner retrains nothing.
    """
    return [ancient(p) for p in STUDY.run_inputs.get(wildcards.run_id, [])]


def run_threads(wildcards):
    return RUNS[wildcards.run_id].cpus


def run_gpus(wildcards):
    return RUNS[wildcards.run_id].gpus


def run_slurm(key):
    """Input function: one field of the run's Slurm job request (ddrl.cluster.slurm.job_request)."""
    gpu_request = config.get("slurm", {}).get("gpu_request", "gpus")  # a profile sets gres
    return lambda wildcards: ddrl_slurm.job_request(RUNS[wildcards.run_id]).as_resources(
        gpu_request
    )[key]


# Job runtimes (Slurm minutes) are decided here, by ddrl.cluster.slurm; other rules take the
# profile's default.
def run_runtime(wildcards, attempt):
    """Minutes for a training job; a retry (after a timeout) gets more and resumes."""
    return ddrl_slurm.runtime_min(RUNS[wildcards.run_id], attempt)


# Software for --sdm conda: one env for all rules (`conda: CONDA_ENV`), pinned like
# environment.yml; its post-deploy script installs this checkout's ddrl into it.
CONDA_ENV = "../envs/ddrl.yaml"
os.environ.setdefault("DDRL_SOURCE", str(Path(workflow.basedir).parent))


# train_backend: sagemaker sends the run to a SageMaker job (ddrl.aws.sagemaker); its train
# job then only waits and downloads, so it takes one thread. The backend is not a param:
# where a run trains does not change its result, so switching it reruns nothing.
TRAIN_BACKEND = config.get("train_backend", "local")


def train_threads(wildcards):
    if TRAIN_BACKEND == "sagemaker":
        return 1
    if on_aws_batch(workflow):  # Batch takes 1, 2, 4, 8 or 16 vCPUs (ddrl.aws.batch)
        return batch_vcpus(run_threads(wildcards))
    return run_threads(wildcards)


# Searches (rules/search.smk), by id; a search's folder, with its wildcard.
SEARCHES = {s.id: s for s in STUDY.searches}
SEARCH_DIR = f"{ROOT}/search/{{search_id}}"


def search_inputs(wildcards):
    search = SEARCHES[wildcards.search_id]
    if search.kind == "tune":
        return {"trials": f"{ROOT}/search/{search.id}/trials.json"}
    return {"runs": run_files("run.json", STUDY.search_runs[search.id])}


def search_definition(wildcards):
    return SEARCHES[wildcards.search_id].definition()


def tune_threads(wildcards):
    return ddrl_tune.total_cpus(SEARCHES[wildcards.search_id])


def tune_slurm(key):
    """The tune job's Slurm request: tune.nodes nodes, one task and its trials' CPUs each."""

    def get(wildcards):
        search = SEARCHES[wildcards.search_id]
        nodes = ddrl_tune.tune_nodes(search)
        return {
            "nodes": nodes,
            "tasks": nodes,
            "cpus_per_task": ddrl_tune.cpus_per_node(search)[0],
        }[key]

    return get


def search_runtime(wildcards, attempt):
    """Minutes for a tune job: its time budget, else trials x their time limit."""
    search = SEARCHES[wildcards.search_id]
    return ddrl_slurm.tune_runtime_min(search, attempt)


# Software on a cluster (config `software:`): modules for --sdm env-modules, an image for
# --sdm apptainer. Both are ignored unless that deployment method is asked for. Every rule
# that imports ddrl declares `envmodules: *ENVMODULES`; the container applies to all rules.
ENVMODULES = config.get("software", {}).get("envmodules", [])
# The image defaults to $DDRL_IMAGE, the one the AWS profile uses (built from Dockerfile).
# Optional (unset or empty: no image), so read with .get(), not required with `envvars:`.
DDRL_IMAGE = os.environ.get("DDRL_IMAGE")
CONTAINER = config.get("software", {}).get("container") or (
    f"docker://{DDRL_IMAGE}" if DDRL_IMAGE else None
)
if CONTAINER:

    container: CONTAINER


# Jobs run on this machine (local profile), not on a cluster.
LOCAL_JOBS = (
    workflow.executor_plugin is None or workflow.executor_plugin.common_settings.local_exec
) and not workflow.remote_exec


# Slurm executor: refuse requests the cluster cannot meet (unknown partition, more than
# any node has) before anything is submitted. Runs once, in the submitting process.
# Local jobs: refuse training jobs whose env runners need more CPUs than this machine has
# (the job would wait for actors forever). Here, not at parse time: onstart runs before
# the first job of a real run only, so `snakemake -n` can still plan a cluster study.
onstart:
    if getattr(workflow.executor_plugin, "name", None) == "slurm":
        try:
            ddrl_slurm.check_jobs(workflow.dag.needrun_jobs())
        except ddrl_slurm.DdrlError as err:
            raise WorkflowError(str(err)) from None
    elif LOCAL_JOBS:
        from ddrl.study.preflight import check_local_cpus

        training = {
            j.wildcards.run_id for j in workflow.dag.needrun_jobs() if j.rule.name == "train"
        }
        try:
            check_local_cpus({r: RUNS[r] for r in training})
        except ConfigError as err:
            raise WorkflowError(str(err)) from None


# Jobs on this machine: refuse GPU requests it cannot meet (or log the CPU fallback); say
# when env runners need more CPUs than it has (a real run stops in onstart above).
if LOCAL_JOBS:
    from ddrl.study.preflight import check_local_cpus, check_local_gpus

    try:
        check_local_cpus(RUNS, warn_only=True)
        check_local_gpus(RUNS)
    except ConfigError as err:
        raise WorkflowError(str(err)) from None


def run_files(name, run_ids=None):
    """``name`` (e.g. "progress.csv") in the folder of every experiment run, or of ``run_ids``."""
    return [f"{ROOT}/runs/{r}/{name}" for r in (EXPERIMENT_RUNS if run_ids is None else run_ids)]


def figure_outputs(name):
    """Figure ``name`` as pdf, png (in the report) and csv (its plotted data), by output key."""
    stem = f"{ROOT}/figures/{name}"
    return {
        output_key(name, "pdf"): f"{stem}.pdf",
        output_key(name, "png"): report(
            f"{stem}.png",
            caption=f"../report/{name}.rst",
            category=FIGURE_CATEGORY[name],
            subcategory="Figures",
        ),
        output_key(name, "csv"): f"{stem}.csv",  # the plotted data (source data)
    }


def table_outputs(name, caption, category="Scaling", subcategory=None):
    """Table ``name`` as csv (in the report) + md + tex, by output key."""
    stem = f"{ROOT}/tables/{name}"
    return {
        name: report(
            f"{stem}.csv",
            caption=f"../report/{caption}.rst",
            category=category,
            subcategory=subcategory or "Tables",
        ),
        f"{name}_md": f"{stem}.md",
        f"{name}_tex": f"{stem}.tex",
    }


SEARCH_OUTPUTS = [
    "leaderboard.csv",
    "leaderboard.md",
    "best.yaml",
    "parameters.pdf",
    "parameters.png",
]


def search_targets():
    """Every search's summary files (rule search_summary), for the rules all and search."""
    return [f"{ROOT}/search/{s.id}/{name}" for s in STUDY.searches for name in SEARCH_OUTPUTS]


def all_targets():
    """The files the rule all asks for (the one list of final targets), read at the end of
    the Snakefile (after every rule file), so include order does not matter."""
    # While every experiment waits for a search's best.yaml (hyperparameters_from), only the
    # searches can be built; the next invocation trains the experiments and the rest.
    if STUDY.deferred and not EXPERIMENT_RUNS:
        return search_targets()
    targets = [*run_files("run.json"), *rules.cost.output]
    evaluated = runs_with("eval")
    if evaluated:
        targets += [*run_files("eval.json", evaluated), *rules.returns_table.output]
    if evaluation_settings(config)["intermediate"]:
        targets += run_files("eval_curve.csv", evaluated)
    targets += [
        *run_files("video.mp4", runs_with("video")),
        *run_files("frames.png", runs_with("video")),
        *run_files("policy.pt", runs_with("policy")),
    ]
    if EXPORT["onnx"]:
        targets += run_files("policy.onnx", runs_with("policy"))
    if TIMING_RUNS:
        targets += [*rules.scaling.output, *rules.plot_scaling.output]
    if LEARNING_RUNS:
        targets += [*rules.learning_returns.output, *rules.plot_rewards.output]
    return targets + search_targets()
