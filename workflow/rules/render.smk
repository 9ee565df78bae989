# Headless videos and a frame strip of each run's trained agent (PyBullet TinyRenderer).
from ddrl.config.eval_config import render_settings

RENDER = render_settings(config)


rule render:
    input:
        run=f"{RUN_DIR}/run.json",
        checkpoint=f"{RUN_DIR}/checkpoint",
        curve=[f"{RUN_DIR}/eval_curve.csv"] if RENDER["checkpoint"] == "best" else [],
    output:
        mp4=report(
            f"{RUN_DIR}/video.mp4",
            caption="../report/video.rst",
            category="Agents",
            subcategory="Videos",
            labels={"run": "{run_id}"},
        ),
        gif=f"{RUN_DIR}/video.gif",
        png=report(
            f"{RUN_DIR}/frames.png",
            caption="../report/frames.rst",
            category="Agents",
            subcategory="Frame strips",
            labels={"run": "{run_id}"},
        ),
    log:
        f"{ROOT}/logs/render/{{run_id}}.log",
    conda:
        CONDA_ENV
    envmodules:
        *ENVMODULES,
    threads: 1
    params:
        spec=run_spec,
        settings=RENDER,
    script:
        "../scripts/render.py"
