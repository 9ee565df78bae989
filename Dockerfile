# One image for every place ddrl runs:
#   AWS Batch   the aws profile runs `snakemake ...` jobs in it (bash -c "<command>")
#   SageMaker   training runs `<image> train`, endpoints run `<image> serve` (port 8080)
#   Slurm       `apptainer build ddrl.sif docker://<registry>/ddrl:<tag>`, then
#               `apptainer exec ddrl.sif ddrl train ...` (nothing is written inside the image)
#
# One command builds it: `make image` (docker/build-image.sh: starts dockerd if needed, makes a
# local Debian 12 base when no registry base can be pulled, passes the machine's pip settings).
# By hand, on a machine that can pull python:3.11-slim-bookworm:
#   docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) -t ddrl:$(git rev-parse --short HEAD) .
#
# Build arguments (none of them reaches the final image):
#   PYTHON_IMAGE  the base: python:3.11-slim-bookworm (default) or any Debian 12 image; a base
#                 without python3 or its venv module gets Debian's python3 (3.11) with apt.
#   TORCH_INDEX   where the pinned torch comes from: the CPU build by default;
#                 https://pypi.org/simple gives the CUDA build of the same version (GPU queues,
#                 ml.g*/ml.p* instances). Empty: only PyPI and docker/local/wheels.
#   PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST  a package mirror, if the build
#                 machine must use one (build-image.sh passes the machine's own settings).
# docker/local/ (git-ignored but for its README) may hold ca-certificates.crt, the CA bundle
# pip trusts during the build (a TLS-intercepting proxy), and wheels/, wheels pip may take
# (e.g. a CPU torch wheel when the torch index cannot be reached). Both stay in the build stage.
# Push: see README.md, "Running on AWS". No registry or account id is written here.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=120 \
    DEBIAN_FRONTEND=noninteractive
# Debian's own python3 (3.11 in bookworm) and venv when the base has none (a plain Debian base);
# binutils to strip debug info from extension modules. Every dependency is a wheel on
# linux/amd64; a platform without wheels (pybullet on arm64) needs
# --build-arg BUILD_PACKAGES=build-essential. None of it reaches the final image.
ARG BUILD_PACKAGES=
RUN set -eu; pkgs="binutils ${BUILD_PACKAGES}"; \
    python3 -c "import venv, ensurepip" 2>/dev/null || pkgs="$pkgs python3 python3-venv"; \
    apt-get update -q && apt-get install -y -q --no-install-recommends $pkgs \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version'
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY docker/local/ /tmp/local/
COPY requirements.lock ./
# The pinned torch first, from the chosen index (and docker/local/wheels); the rest from the lock.
RUN set -eu; [ ! -s /tmp/local/ca-certificates.crt ] || export PIP_CERT=/tmp/local/ca-certificates.crt; \
    mkdir -p /tmp/local/wheels; \
    pip install -c requirements.lock --find-links /tmp/local/wheels \
        ${TORCH_INDEX:+--extra-index-url "${TORCH_INDEX}"} \
        "torch==$(sed -n 's/^torch==//p' requirements.lock)"
# Dependencies before the sources, so that a change in src/ rebuilds only the last steps:
# first against a placeholder package with the same pyproject.toml.
COPY pyproject.toml ./
RUN set -eu; [ ! -s /tmp/local/ca-certificates.crt ] || export PIP_CERT=/tmp/local/ca-certificates.crt; \
    mkdir -p src/ddrl && touch src/ddrl/__init__.py README.md \
    && pip install -c requirements.lock --no-warn-script-location ".[aws]" \
    && pip uninstall -y -q ddrl && rm -rf src README.md build
# Smaller without changing behaviour: debug info out of extension modules that carry it
# (pybullet's alone is 130 MB of 139; torch and auditwheel-patched *.libs are left alone),
# and the test suites of libraries that never import them.
RUN set -eu; cd /opt/venv/lib/python3.11/site-packages; \
    find . -path ./torch -prune -o -path '*.libs' -prune -o -type f -name '*.so*' -print \
      | while read -r f; do if readelf -S "$f" 2>/dev/null | grep -q '\.debug_info'; then \
          strip --strip-debug "$f"; fi; done; \
    for d in pandas scipy numpy pyarrow matplotlib sympy networkx; do \
        find "$d" -depth -type d -name tests -exec rm -rf {} +; done
COPY README.md ./
COPY src ./src
RUN set -eu; [ ! -s /tmp/local/ca-certificates.crt ] || export PIP_CERT=/tmp/local/ca-certificates.crt; \
    pip install --no-deps --no-warn-script-location . && pip check && ddrl --help > /dev/null
# Snakemake's remote jobs (AWS Batch) start with `pip install --target .snakemake/pip-deployments
# snakemake-storage-plugin-s3` (auto-deploy of the storage plugin): the wheels of that plugin and
# its dependencies, at the lock's versions, so that a job needs no package index and cannot
# pick up other versions than the image's.
RUN set -eu; [ ! -s /tmp/local/ca-certificates.crt ] || export PIP_CERT=/tmp/local/ca-certificates.crt; \
    pip wheel -q -c requirements.lock -w /opt/wheelhouse \
        "$(pip list --format=freeze | grep -i '^snakemake-storage-plugin-s3==')"

FROM ${PYTHON_IMAGE}
ARG GIT_COMMIT=unknown
LABEL org.opencontainers.image.title="ddrl" \
      org.opencontainers.image.revision="${GIT_COMMIT}"
# pybullet and torch link libstdc++ and libgomp; the rest is inside the wheels. The same
# python3 as in the build stage (the venv points at it); no compiler, no apt lists.
RUN set -eu; pkgs="libstdc++6 libgomp1 ca-certificates"; \
    command -v python3 >/dev/null || pkgs="$pkgs python3"; \
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends $pkgs && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/wheelhouse /opt/ddrl/wheels
COPY requirements.lock /opt/ddrl/requirements.lock
COPY workflow /opt/ddrl/workflow
COPY profiles /opt/ddrl/profiles
COPY config /opt/ddrl/config
# SageMaker's `train` and `serve`, first on PATH: Ray installs its own `serve` (the Ray Serve
# CLI) into /opt/venv/bin, which would otherwise answer SageMaker's `<image> serve`.
COPY docker/train docker/serve /opt/ddrl/bin/
# Writable places only under /tmp (and mounted folders), so Apptainer's read-only image and
# `docker run --read-only --tmpfs /tmp` work as well: HOME too (Ray keeps ~/.ray; Apptainer
# replaces HOME with the user's own).
ENV PATH=/opt/ddrl/bin:/opt/venv/bin:$PATH \
    HOME=/tmp \
    PYTHONUNBUFFERED=1 \
    RAY_USAGE_STATS_ENABLED=0 \
    MPLCONFIGDIR=/tmp/matplotlib \
    XDG_CACHE_HOME=/tmp/.cache \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INDEX=1 \
    PIP_FIND_LINKS=/opt/ddrl/wheels \
    PIP_CONSTRAINT=/opt/ddrl/requirements.lock \
    DDRL_GIT_COMMIT=${GIT_COMMIT}
RUN chmod 0755 /opt/ddrl/bin/train /opt/ddrl/bin/serve \
    && [ "$(command -v serve)" = /opt/ddrl/bin/serve ] && [ "$(command -v train)" = /opt/ddrl/bin/train ] \
    && ddrl --help > /dev/null \
    && python -c "import ray.rllib, torch, pybullet_envs_gymnasium, flask, gunicorn" \
    && pip install -q --target /tmp/deploy-check snakemake-storage-plugin-s3 \
    && rm -rf /tmp/* /root/.cache
WORKDIR /opt/ddrl
EXPOSE 8080
# No ENTRYPOINT: SageMaker passes `train` or `serve` as the command, Batch and Apptainer
# pass their own commands.
CMD ["ddrl", "--help"]
