# Train one run per job. A rerun of a killed job resumes from its newest checkpoint, which
# lives in work/ (not an output, so Snakemake never deletes it). Its threads and Slurm
# request come from rules/common.smk (train_threads, run_slurm; train_backend: sagemaker).


rule train:
    input:
        run_inputs,
    output:
        progress=f"{RUN_DIR}/progress.csv",
        run=f"{RUN_DIR}/run.json",
        checkpoint=directory(f"{RUN_DIR}/checkpoint"),
    log:
        f"{ROOT}/logs/train/{{run_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    threads: train_threads
    resources:
        # --gpus=N or, with slurm.gpu_request: gres (profiles/slurm-cte-power), --gres=gpu:N
        gpu=run_slurm("gpu"),
        gres=run_slurm("gres"),
        tasks_per_gpu=run_slurm("tasks_per_gpu"),
        # Runs are timing measurements: the local profile allows one training slot, so no
        # two runs share cores (profiles/local/config.yaml). Unlimited elsewhere.
        training_slots=1,
        # The Slurm job request (ignored by the local profile): see ddrl.cluster.slurm.job_request.
        nodes=run_slurm("nodes"),
        tasks=run_slurm("tasks"),
        cpus_per_task=run_slurm("cpus_per_task"),
        runtime=run_runtime,
    params:
        spec=run_spec,
    script:
        "../scripts/train.py"
