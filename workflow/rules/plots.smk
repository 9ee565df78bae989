# Figures drawn from the runs' progress files.


rule plot_rewards:
    input:
        progress=run_files("progress.csv"),
        runs=run_files("run.json"),
    output:
        pdf=ROOT + "/figures/reward_curves.pdf",
        png=report(
            ROOT + "/figures/reward_curves.png",
            caption="../report/reward_curves.rst",
            category="Learning",
        ),
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/plot_rewards.log",
    script:
        "../scripts/plot_rewards.py"


TARGETS.extend(rules.plot_rewards.output)
