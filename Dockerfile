# syntax=docker/dockerfile:1
# One image for every place ddrl runs:
#   AWS Batch   the aws profile runs `snakemake ...` jobs in it (bash -c "<command>")
#   SageMaker   training runs `<image> train`, endpoints run `<image> serve` (port 8080)
#   Slurm       `apptainer build ddrl.sif docker://<registry>/ddrl:<tag>`, then
#               `apptainer exec ddrl.sif ddrl train ...` (nothing is written inside the image)
#
# Build (CPU torch; add --build-arg TORCH_INDEX=https://pypi.org/simple for the CUDA build
# of the same pinned torch, for GPU queues and ml.g*/ml.p* instances):
#   docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) -t ddrl:$(git rev-parse --short HEAD) .
# Push: see README.md, "Running on AWS". No registry or account id is written here.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A compiler only for wheels that may need building; it stays out of the final image.
RUN apt-get update -q && apt-get install -y -q --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY requirements.lock ./
# The pinned torch first, from the chosen index; everything else from the lock.
RUN pip install -c requirements.lock --extra-index-url "${TORCH_INDEX}" \
        "torch==$(sed -n 's/^torch==//p' requirements.lock)"
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install -c requirements.lock ".[aws]" && pip check

FROM ${PYTHON_IMAGE}
ARG GIT_COMMIT=unknown
LABEL org.opencontainers.image.title="ddrl" \
      org.opencontainers.image.revision="${GIT_COMMIT}"
# pybullet and torch link libstdc++ and libgomp; the rest is inside the wheels.
RUN apt-get update -q && apt-get install -y -q --no-install-recommends libstdc++6 libgomp1 \
        ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv
COPY workflow /opt/ddrl/workflow
COPY profiles /opt/ddrl/profiles
COPY config /opt/ddrl/config
COPY docker/train docker/serve /usr/local/bin/
# Writable places only under /tmp, so Apptainer's read-only image works as well.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    RAY_USAGE_STATS_ENABLED=0 \
    MPLCONFIGDIR=/tmp/matplotlib \
    DDRL_GIT_COMMIT=${GIT_COMMIT}
RUN chmod 0755 /usr/local/bin/train /usr/local/bin/serve \
    && ddrl --help > /dev/null \
    && python -c "import ray.rllib, torch, pybullet_envs_gymnasium, flask, gunicorn"
WORKDIR /opt/ddrl
EXPOSE 8080
# No ENTRYPOINT: SageMaker passes `train` or `serve` as the command, Batch and Apptainer
# pass their own commands.
CMD ["ddrl", "--help"]
