# Iteration times into tables: speedup and efficiency (thesis Tables 6-8), the per-task
# breakdown, Amdahl fits, our speedups next to the thesis's, and each run's provenance.
# CSV for data (and the report), Markdown for READMEs, LaTeX booktabs for papers: each
# table's outputs are table_outputs() in rules/common.smk.


rule scaling:
    input:
        progress=run_files("progress.csv", TIMING_RUNS),
        runs=run_files("run.json", TIMING_RUNS),
    output:
        **table_outputs("speedup", "speedup_table"),
        **table_outputs("breakdown", "breakdown_table"),
        **table_outputs("amdahl", "amdahl_table"),
        **table_outputs("thesis_comparison", "thesis_comparison_table"),
        **table_outputs("update_schedules", "update_schedules_table"),
        **table_outputs("runs", "runs_table", category="Provenance", subcategory="Runs"),
    log:
        f"{ROOT}/logs/scaling.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    params:
        settings=config.get("scaling", {}),
        experiments=experiments_of(TIMING_RUNS),
    script:
        "../scripts/scaling.py"


# Best and final training returns of the learning runs, next to the thesis's.
rule learning_returns:
    input:
        progress=run_files("progress.csv", LEARNING_RUNS),
        runs=run_files("run.json", LEARNING_RUNS),
    output:
        **table_outputs("learning_returns", "learning_returns_table", category="Learning"),
    log:
        f"{ROOT}/logs/learning_returns.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    params:
        experiments=experiments_of(LEARNING_RUNS),
    script:
        "../scripts/learning_returns.py"
