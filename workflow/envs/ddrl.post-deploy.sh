#!/usr/bin/env bash
# Snakemake runs this inside a newly created env from ddrl.yaml: install the workflow's own
# ddrl package (rules/common.smk sets DDRL_SOURCE to the checkout), without touching the
# conda-pinned dependencies.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation -e "${DDRL_SOURCE:?DDRL_SOURCE is set by rules/common.smk}"
