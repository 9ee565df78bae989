# Deterministic evaluation of each run's final checkpoint (eval.json), optionally of every
# intermediate checkpoint (eval_curve.csv), and the study's returns table.
from ddrl.config.eval_config import evaluation_settings

EVALUATION = evaluation_settings(config)


rule evaluate:
    input:
        run=f"{RUN_DIR}/run.json",
        checkpoint=f"{RUN_DIR}/checkpoint",
    output:
        f"{RUN_DIR}/eval.json",
    log:
        f"{ROOT}/logs/evaluate/{{run_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    threads: 1
    params:
        spec=run_spec,
        episodes=EVALUATION["episodes"],
    script:
        "../scripts/evaluate.py"


rule evaluate_curve:
    input:
        run=f"{RUN_DIR}/run.json",
        checkpoint=f"{RUN_DIR}/checkpoint",
    output:
        f"{RUN_DIR}/eval_curve.csv",
    log:
        f"{ROOT}/logs/evaluate_curve/{{run_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    threads: 1
    params:
        spec=run_spec,
        episodes=EVALUATION["episodes"],
    script:
        "../scripts/evaluate_curve.py"


rule returns_table:
    input:
        evals=run_files("eval.json", runs_with("eval")),
    output:
        csv=report(
            f"{ROOT}/tables/returns.csv",
            caption="../report/returns.rst",
            category="Agents",
            subcategory="Evaluation returns",
        ),
        md=f"{ROOT}/tables/returns.md",
    log:
        f"{ROOT}/logs/returns_table.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    params:
        experiments=experiments_of(runs_with("eval")),
    script:
        "../scripts/returns_table.py"
