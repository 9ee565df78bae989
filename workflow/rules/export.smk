# Each run's deterministic policy as TorchScript (policy.pt): observation filter included,
# torch only at inference time. The AWS serving entry loads this file. `export:` in the
# config picks the checkpoint (final or best by eval_curve.csv) and adds policy.onnx.
from ddrl.config.eval_config import export_settings

EXPORT = export_settings(config)


rule export:
    input:
        run=f"{RUN_DIR}/run.json",
        checkpoint=f"{RUN_DIR}/checkpoint",
        curve=[f"{RUN_DIR}/eval_curve.csv"] if EXPORT["checkpoint"] == "best" else [],
    output:
        f"{RUN_DIR}/policy.pt",
        *([f"{RUN_DIR}/policy.onnx"] if EXPORT["onnx"] else []),
    log:
        f"{ROOT}/logs/export/{{run_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    threads: 1
    params:
        spec=run_spec,
        export=EXPORT,
    script:
        "../scripts/export.py"
