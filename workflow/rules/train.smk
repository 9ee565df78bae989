# Train one run per job. A rerun of a killed job resumes from its newest checkpoint, which
# lives in work/ (not an output, so Snakemake never deletes it).


rule train:
    output:
        progress=RUN_DIR + "/progress.csv",
        run=RUN_DIR + "/run.json",
        checkpoint=directory(RUN_DIR + "/checkpoint"),
    params:
        spec=run_spec,
    threads: run_threads
    resources:
        gpu=run_gpus,
    log:
        ROOT + "/logs/train/{run_id}.log",
    script:
        "../scripts/train.py"


TARGETS.extend(run_files("run.json"))
