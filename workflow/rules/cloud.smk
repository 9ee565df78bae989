# Cloud stage: a run's exported policy as a SageMaker endpoint. Never part of `all` (an
# endpoint bills by the hour); ask for it by name:
#   snakemake --configfile <study> results/<study>/runs/<run_id>/endpoint.json
# and delete it with `ddrl teardown results/<study>/runs/<run_id>/endpoint.json`.
# Settings: the config's sagemaker: section (image, role, bucket, serve_instance_type, ...).


rule deploy:
    input:
        policy=f"{RUN_DIR}/policy.pt",
        run=f"{RUN_DIR}/run.json",
    output:
        f"{RUN_DIR}/endpoint.json",
    log:
        f"{ROOT}/logs/deploy/{{run_id}}.log",
    localrule: True
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    script:
        "../scripts/deploy.py"
