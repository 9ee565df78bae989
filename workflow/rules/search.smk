# Hyperparameter search (ddrl.search.grid). A grid search's trials are ordinary runs (rule train,
# one job and one run folder each); a tune search is one Ray Tune job (ddrl.search.tune) whose
# experiment lives in search/<id>/tune/ (not an output, so a rerun resumes it).
import re
import sys

import ddrl.search.tune as ddrl_tune

SEARCHES = {s.id: s for s in STUDY.searches}
SEARCH_DIR = ROOT + "/search/{search_id}"

for _msg in STUDY.deferred:
    print(f"ddrl: {_msg}", file=sys.stderr)


wildcard_constraints:
    search_id="|".join(re.escape(s) for s in SEARCHES) or "(?!)",


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
        return {"nodes": nodes, "tasks": nodes,
                "cpus_per_task": ddrl_tune.cpus_per_node(search)[0]}[key]

    return get


rule search_summary:
    input:
        unpack(search_inputs),
    output:
        csv=report(
            SEARCH_DIR + "/leaderboard.csv",
            caption="../report/search_leaderboard.rst",
            category="Search",
            subcategory="{search_id}",
        ),
        md=SEARCH_DIR + "/leaderboard.md",
        best=SEARCH_DIR + "/best.yaml",
        pdf=SEARCH_DIR + "/parameters.pdf",
        png=report(
            SEARCH_DIR + "/parameters.png",
            caption="../report/search_parameters.rst",
            category="Search",
            subcategory="{search_id}",
        ),
    params:
        search=search_definition,
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/search/{search_id}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/search_summary.py"


rule tune:
    output:
        trials=SEARCH_DIR + "/trials.json",
    params:
        search=search_definition,
    threads: tune_threads
    resources:
        nodes=tune_slurm("nodes"),
        tasks=tune_slurm("tasks"),
        cpus_per_task=tune_slurm("cpus_per_task"),
        runtime=search_runtime,
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/tune/{search_id}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/tune.py"


localrules:
    search,


# `snakemake search`: only the searches (e.g. before the runs that wait for their best.yaml).
rule search:
    input:
        search_targets(),
