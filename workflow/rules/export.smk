# Each run's deterministic policy as TorchScript (policy.pt): observation filter included,
# torch only at inference time. The AWS serving entry loads this file.


rule export:
    input:
        run=RUN_DIR + "/run.json",
        checkpoint=RUN_DIR + "/checkpoint",
    output:
        RUN_DIR + "/policy.pt",
    params:
        spec=run_spec,
    threads: 1
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/export/{run_id}.log",
    script:
        "../scripts/export.py"
