# Figures, each named after the thesis figure it reproduces (ddrl.figures.catalog), with its
# plotted data as CSV beside it; captions in workflow/report/<name>.rst. plot_rewards draws
# Figs 12-14 from the learning runs, plot_scaling the rest from the tables.
# Each figure's outputs: figure_outputs() in rules/common.smk.
from ddrl.figures.catalog import LEARNING_FIGURES, SCALING_FIGURES


rule plot_rewards:
    input:
        progress=run_files("progress.csv", LEARNING_RUNS),
        runs=run_files("run.json", LEARNING_RUNS),
    output:
        **{k: v for name in LEARNING_FIGURES for k, v in figure_outputs(name).items()},
    log:
        f"{ROOT}/logs/plot_rewards.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    params:
        experiments=experiments_of(LEARNING_RUNS),
    script:
        "../scripts/plot_rewards.py"


rule plot_scaling:
    input:
        speedup=f"{ROOT}/tables/speedup.csv",
        breakdown=f"{ROOT}/tables/breakdown.csv",
        amdahl=f"{ROOT}/tables/amdahl.csv",
        thesis=f"{ROOT}/tables/thesis_comparison.csv",
        schedules=f"{ROOT}/tables/update_schedules.csv",
        cost=f"{ROOT}/tables/cost.csv",
    output:
        **{k: v for name in SCALING_FIGURES for k, v in figure_outputs(name).items()},
    log:
        f"{ROOT}/logs/plot_scaling.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    script:
        "../scripts/plot_scaling.py"
