# Cloud stage: a run's exported policy as a SageMaker endpoint. Never part of `all` (an
# endpoint bills by the hour); ask for it by name:
#   snakemake --configfile <study> results/<study>/runs/<run_id>/endpoint.json
# and delete it with `ddrl teardown results/<study>/runs/<run_id>/endpoint.json`.
# Settings: the config's sagemaker: section (image, role, bucket, serve_instance_type, ...).


rule deploy:
    input:
        policy=RUN_DIR + "/policy.pt",
        run=RUN_DIR + "/run.json",
    output:
        RUN_DIR + "/endpoint.json",
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/deploy/{run_id}.log",
    localrule: True
    conda:
        CONDA_ENV
    script:
        "../scripts/deploy.py"
