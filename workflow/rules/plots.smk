# Figures, each named after the thesis figure it reproduces (ddrl.figures.catalog), with its
# plotted data as CSV beside it; captions in workflow/report/<name>.rst. plot_rewards draws
# Figs 12-14 from the learning runs, plot_scaling the rest from the tables.
from ddrl.figures.catalog import CATEGORY as FIGURE_CATEGORY
from ddrl.figures.catalog import LEARNING_FIGURES, SCALING_FIGURES, output_key


def _figure(name):
    stem = f"{ROOT}/figures/{name}"
    return {
        output_key(name, "pdf"): stem + ".pdf",
        output_key(name, "png"): report(stem + ".png", caption=f"../report/{name}.rst",
                                        category=FIGURE_CATEGORY[name], subcategory="Figures"),
        output_key(name, "csv"): stem + ".csv",  # the plotted data (source data)
    }


rule plot_rewards:
    input:
        progress=run_files("progress.csv", LEARNING_RUNS),
        runs=run_files("run.json", LEARNING_RUNS),
    output:
        **{k: v for name in LEARNING_FIGURES for k, v in _figure(name).items()},
    params:
        experiments=experiments_of(LEARNING_RUNS),
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/plot_rewards.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/plot_rewards.py"


rule plot_scaling:
    input:
        speedup=ROOT + "/tables/speedup.csv",
        breakdown=ROOT + "/tables/breakdown.csv",
        amdahl=ROOT + "/tables/amdahl.csv",
        thesis=ROOT + "/tables/thesis_comparison.csv",
        schedules=ROOT + "/tables/update_schedules.csv",
        cost=ROOT + "/tables/cost.csv",
    output:
        **{k: v for name in SCALING_FIGURES for k, v in _figure(name).items()},
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/plot_scaling.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/plot_scaling.py"
