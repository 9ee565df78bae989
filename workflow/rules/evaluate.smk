# Deterministic evaluation of each run's final checkpoint (eval.json), optionally of every
# intermediate checkpoint (eval_curve.csv), and the study's returns table.
from ddrl.config.eval_config import evaluation_settings

EVALUATION = evaluation_settings(config)


rule evaluate:
    input:
        run=RUN_DIR + "/run.json",
        checkpoint=RUN_DIR + "/checkpoint",
    output:
        RUN_DIR + "/eval.json",
    params:
        spec=run_spec,
        episodes=EVALUATION["episodes"],
    threads: 1
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/evaluate/{run_id}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/evaluate.py"


rule evaluate_curve:
    input:
        run=RUN_DIR + "/run.json",
        checkpoint=RUN_DIR + "/checkpoint",
    output:
        RUN_DIR + "/eval_curve.csv",
    params:
        spec=run_spec,
        episodes=EVALUATION["episodes"],
    threads: 1
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/evaluate_curve/{run_id}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/evaluate_curve.py"


rule returns_table:
    input:
        evals=run_files("eval.json", runs_with("eval")),
    output:
        csv=report(
            ROOT + "/tables/returns.csv",
            caption="../report/returns.rst",
            category="Agents",
            subcategory="Evaluation returns",
        ),
        md=ROOT + "/tables/returns.md",
    params:
        experiments=experiments_of(runs_with("eval")),
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/returns_table.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/returns_table.py"
