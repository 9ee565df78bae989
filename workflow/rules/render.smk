# Headless videos and a frame strip of each run's trained agent (PyBullet TinyRenderer).
from ddrl.config.eval_config import render_settings

RENDER = render_settings(config)


rule render:
    input:
        run=RUN_DIR + "/run.json",
        checkpoint=RUN_DIR + "/checkpoint",
        curve=[RUN_DIR + "/eval_curve.csv"] if RENDER["checkpoint"] == "best" else [],
    output:
        mp4=report(
            RUN_DIR + "/video.mp4",
            caption="../report/video.rst",
            category="Agents",
            subcategory="Videos",
            labels={"run": "{run_id}"},
        ),
        gif=RUN_DIR + "/video.gif",
        png=report(
            RUN_DIR + "/frames.png",
            caption="../report/frames.rst",
            category="Agents",
            subcategory="Frame strips",
            labels={"run": "{run_id}"},
        ),
    params:
        spec=run_spec,
        settings=RENDER,
    threads: 1
    envmodules:
        *ENVMODULES,
    log:
        ROOT + "/logs/render/{run_id}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/render.py"
