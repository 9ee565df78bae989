# Iteration times into tables: speedup and efficiency (thesis Tables 6-8), the per-task
# breakdown, Amdahl fits, our speedups next to the thesis's, and each run's provenance.
# CSV for data (and the report), Markdown for READMEs, LaTeX booktabs for papers.


def _table(name, caption, category="Scaling", subcategory=None):
    """``name`` as csv (in the report) + md + tex."""
    stem = f"{ROOT}/tables/{name}"
    return {
        name: report(stem + ".csv", caption=f"../report/{caption}.rst", category=category,
                     subcategory=subcategory or "Tables"),
        f"{name}_md": stem + ".md",
        f"{name}_tex": stem + ".tex",
    }


rule scaling:
    input:
        progress=run_files("progress.csv", TIMING_RUNS),
        runs=run_files("run.json", TIMING_RUNS),
    output:
        **_table("speedup", "speedup_table"),
        **_table("breakdown", "breakdown_table"),
        **_table("amdahl", "amdahl_table"),
        **_table("thesis_comparison", "thesis_comparison_table"),
        **_table("update_schedules", "update_schedules_table"),
        **_table("runs", "runs_table", category="Provenance", subcategory="Runs"),
    params:
        settings=config.get("scaling", {}),
        experiments=experiments_of(TIMING_RUNS),
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/scaling.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/scaling.py"


# Best and final training returns of the learning runs, next to the thesis's.
rule learning_returns:
    input:
        progress=run_files("progress.csv", LEARNING_RUNS),
        runs=run_files("run.json", LEARNING_RUNS),
    output:
        **_table("learning_returns", "learning_returns_table", category="Learning"),
    params:
        experiments=experiments_of(LEARNING_RUNS),
    envmodules:
        *ENVMODULES,
    conda:
        CONDA_ENV
    log:
        ROOT + "/logs/learning_returns.log",
    script:
        "../scripts/learning_returns.py"
