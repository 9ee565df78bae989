# Figures drawn from the runs' progress files.


rule plot_rewards:
    input:
        progress=run_files("progress.csv", LEARNING_RUNS),
        runs=run_files("run.json", LEARNING_RUNS),
    output:
        pdf=ROOT + "/figures/reward_curves.pdf",
        png=report(
            ROOT + "/figures/reward_curves.png",
            caption="../report/reward_curves.rst",
            category="Learning",
        ),
        csv=ROOT + "/figures/reward_curves.csv",  # the plotted data (source data)
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




# The scaling study's figures, each named after the thesis figure it reproduces
# (ddrl.figures.scaling.FIGURES); captions in workflow/report/<name>.rst.
from ddrl.figures.catalog import CATEGORY as FIGURE_CATEGORY
from ddrl.figures.catalog import FIGURES, output_key


def _figure(name):
    stem = f"{ROOT}/figures/{name}"
    return {
        output_key(name, "pdf"): stem + ".pdf",
        output_key(name, "png"): report(stem + ".png", caption=f"../report/{name}.rst",
                                        category=FIGURE_CATEGORY[name], subcategory="Figures"),
        output_key(name, "csv"): stem + ".csv",  # the plotted data (source data)
    }


rule plot_scaling:
    input:
        progress=run_files("progress.csv", LEARNING_RUNS),
        runs=run_files("run.json", LEARNING_RUNS),
        speedup=ROOT + "/tables/speedup.csv",
        breakdown=ROOT + "/tables/breakdown.csv",
        amdahl=ROOT + "/tables/amdahl.csv",
        thesis=ROOT + "/tables/thesis_comparison.csv",
        schedules=ROOT + "/tables/update_schedules.csv",
        cost=ROOT + "/tables/cost.csv",
    output:
        **{k: v for name in FIGURES for k, v in _figure(name).items()},
    params:
        experiments=experiments_of(LEARNING_RUNS),
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/plot_scaling.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/plot_scaling.py"
