"""Snakemake script for rule render. All logic is in ddrl.agents.render."""

import torch

from ddrl.agents.render import render_run
from ddrl.snakemake_io import log_to
from ddrl.runs import RunSpec

torch.set_num_threads(snakemake.threads)  # noqa: F821
with log_to(snakemake.log[0]) as echo:  # noqa: F821
    spec = RunSpec.from_dict(snakemake.params.spec)  # noqa: F821
    out = snakemake.output  # noqa: F821
    run_dir = snakemake.input.checkpoint.rsplit("/", 1)[0]  # noqa: F821
    info = render_run(spec, run_dir, snakemake.params.settings, out.mp4, out.gif, out.png)  # noqa: F821
    echo(f"ddrl {spec.run_id} render frames={info['frames']} returns={info['returns']}")
