# Train one run per job. A rerun of a killed job resumes from its newest checkpoint, which
# lives in work/ (not an output, so Snakemake never deletes it).


# train_backend: sagemaker sends the run to a SageMaker job (ddrl.aws.sagemaker); this job
# then only waits and downloads, so it takes one thread. The backend is not a param: where
# a run trains does not change its result, so switching it reruns nothing.
from ddrl.aws.batch import batch_vcpus, on_aws_batch

TRAIN_BACKEND = config.get("train_backend", "local")


def train_threads(wildcards):
    if TRAIN_BACKEND == "sagemaker":
        return 1
    if on_aws_batch(workflow):  # Batch takes 1, 2, 4, 8 or 16 vCPUs (ddrl.aws.batch)
        return batch_vcpus(run_threads(wildcards))
    return run_threads(wildcards)


rule train:
    input:
        run_inputs,
    output:
        progress=RUN_DIR + "/progress.csv",
        run=RUN_DIR + "/run.json",
        checkpoint=directory(RUN_DIR + "/checkpoint"),
    params:
        spec=run_spec,
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
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/train/{run_id}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/train.py"
