# What each run cost, and the time and cost to reach the study's return threshold
# (prices from config `cost:`; example AWS prices when it sets none).


rule cost:
    input:
        progress=run_files("progress.csv"),
        runs=run_files("run.json"),
    output:
        csv=report(
            f"{ROOT}/tables/cost.csv",
            caption="../report/cost_table.rst",
            category="Cost",
            subcategory="Tables",
        ),
        md=f"{ROOT}/tables/cost.md",
        tex=f"{ROOT}/tables/cost.tex",
    log:
        f"{ROOT}/logs/cost.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    params:
        cost=config.get("cost", {}),
        experiments=experiments_of(EXPERIMENT_RUNS),
    script:
        "../scripts/cost.py"
