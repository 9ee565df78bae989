"""Snakemake script for rule export. All logic is in ddrl.agents.export."""

import torch

from ddrl.agents.export import export_run
from ddrl.snakemake_io import log_to
from ddrl.runs import RunSpec

torch.set_num_threads(snakemake.threads)  # noqa: F821
with log_to(snakemake.log[0]) as echo:  # noqa: F821
    spec = RunSpec.from_dict(snakemake.params.spec)  # noqa: F821
    run_dir = snakemake.input.checkpoint.rsplit("/", 1)[0]  # noqa: F821
    settings = snakemake.params.export  # noqa: F821
    onnx_out = snakemake.output[1] if settings["onnx"] else None  # noqa: F821
    meta = export_run(spec, run_dir, snakemake.output[0], checkpoint=settings["checkpoint"],  # noqa: F821
                      onnx_out=onnx_out)
    echo(f"ddrl {spec.run_id} exported policy.pt (iteration {meta['checkpoint_iteration']})")
