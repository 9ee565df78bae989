"""Snakemake script for rule evaluate. All logic is in ddrl.agents.evaluate."""

import torch

from ddrl.agents.evaluate import write_eval
from ddrl.snakemake_io import log_to
from ddrl.runs import RunSpec

torch.set_num_threads(snakemake.threads)  # noqa: F821
with log_to(snakemake.log[0]) as echo:  # noqa: F821
    spec = RunSpec.from_dict(snakemake.params.spec)  # noqa: F821
    run_dir = snakemake.input.checkpoint.rsplit("/", 1)[0]  # noqa: F821
    rec = write_eval(spec, run_dir, snakemake.output[0], snakemake.params.episodes)  # noqa: F821
    echo(f"ddrl {spec.run_id} eval episodes={rec['episodes']} "
         f"return={rec['return_mean']:.2f}+-{rec['return_std']:.2f} "
         f"length={rec['length_mean']:.1f} checkpoint_iter={rec['checkpoint']['iteration']}")
