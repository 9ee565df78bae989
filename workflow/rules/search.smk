# Hyperparameter search (ddrl.search.grid). A grid search's trials are ordinary runs (rule train,
# one job and one run folder each); a tune search is one Ray Tune job (ddrl.search.tune) whose
# experiment lives in search/<id>/tune/ (not an output, so a rerun resumes it). SEARCHES,
# SEARCH_DIR and the input functions are in rules/common.smk.
import re
import sys

for _msg in STUDY.deferred:
    print(f"ddrl: {_msg}", file=sys.stderr)


wildcard_constraints:
    search_id="|".join(re.escape(s) for s in SEARCHES) or "(?!)",


rule search_summary:
    input:
        unpack(search_inputs),
    output:
        csv=report(
            f"{SEARCH_DIR}/leaderboard.csv",
            caption="../report/search_leaderboard.rst",
            category="Search",
            subcategory="{search_id}",
        ),
        md=f"{SEARCH_DIR}/leaderboard.md",
        best=f"{SEARCH_DIR}/best.yaml",
        pdf=f"{SEARCH_DIR}/parameters.pdf",
        png=report(
            f"{SEARCH_DIR}/parameters.png",
            caption="../report/search_parameters.rst",
            category="Search",
            subcategory="{search_id}",
        ),
    log:
        f"{ROOT}/logs/search/{{search_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    params:
        search=search_definition,
    script:
        "../scripts/search_summary.py"


rule tune:
    output:
        trials=f"{SEARCH_DIR}/trials.json",
    log:
        f"{ROOT}/logs/tune/{{search_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    threads: tune_threads
    resources:
        nodes=tune_slurm("nodes"),
        tasks=tune_slurm("tasks"),
        cpus_per_task=tune_slurm("cpus_per_task"),
        runtime=search_runtime,
    params:
        search=search_definition,
    script:
        "../scripts/tune.py"


localrules:
    search,


# `snakemake search`: only the searches (e.g. before the runs that wait for their best.yaml).
rule search:
    input:
        search_targets(),
