#!/usr/bin/env bash
# Build the ddrl image from a checkout with one command (`make image` runs this).
#
#   docker/build-image.sh [--gpu] [--tag NAME:TAG]
#
# 1. A Docker daemon: used if one answers; otherwise, as root with dockerd installed, one is
#    started in the background (log and pid in $DDRL_DOCKER_DIR, default /tmp/ddrl-docker;
#    it keeps running for the tests: stop it with `kill "$(cat /tmp/ddrl-docker/dockerd.pid)"`).
# 2. A base: $PYTHON_IMAGE if set; else python:3.11-slim-bookworm if present or pullable; else a
#    local Debian 12 base (local/debian:bookworm), made once with mmdebstrap + docker import.
# 3. The machine's package settings for pip, passed to the build stage only: an http(s) index
#    or mirror (PIP_INDEX_URL / PIP_EXTRA_INDEX_URL / PIP_TRUSTED_HOST or pip's config), and
#    its CA bundle in docker/local/ca-certificates.crt (for a TLS-intercepting proxy). When the
#    torch index cannot be reached, the pinned CPU torch wheel is taken from pip's local
#    find-links/file:// sources into docker/local/wheels/.
# 4. docker build --build-arg PYTHON_IMAGE=... -t $IMAGE (default ddrl:test; --gpu: the CUDA
#    torch from PyPI, default tag ddrl:test-gpu).
#
# Environment: IMAGE, PYTHON_IMAGE, TORCH_INDEX, DDRL_DOCKER_DIR, DOCKER_BUILD_ARGS (extra
# arguments for docker build, e.g. --no-cache).
set -euo pipefail
cd "$(dirname "$0")/.."

GPU=0
while [ $# -gt 0 ]; do
    case "$1" in
        --gpu) GPU=1 ;;
        --tag) IMAGE="$2"; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$GPU" = 1 ]; then
    IMAGE=${IMAGE:-ddrl:test-gpu}
    TORCH_INDEX=${TORCH_INDEX-https://pypi.org/simple}
else
    IMAGE=${IMAGE:-ddrl:test}
    TORCH_INDEX=${TORCH_INDEX-https://download.pytorch.org/whl/cpu}
fi
STATE=${DDRL_DOCKER_DIR:-/tmp/ddrl-docker}
mkdir -p "$STATE"
say() { echo "build-image: $*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- 1. the daemon
command -v docker >/dev/null || die "no docker client on PATH (Debian: apt-get install docker.io)"
if ! docker info >/dev/null 2>&1; then
    command -v dockerd >/dev/null || die "no Docker daemon answers and dockerd is not installed"
    [ "$(id -u)" = 0 ] || die "no Docker daemon answers; start one (only root may start dockerd here)"
    say "starting dockerd (log $STATE/dockerd.log)"
    nohup dockerd >"$STATE/dockerd.log" 2>&1 &
    echo $! >"$STATE/dockerd.pid"
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || die "dockerd did not answer within 60 s; see $STATE/dockerd.log"
    say "dockerd running, pid $(cat "$STATE/dockerd.pid"); stop it with: kill $(cat "$STATE/dockerd.pid")"
fi

# ---------------------------------------------------------------- 2. the base
LOCAL_BASE=local/debian:bookworm
if [ -z "${PYTHON_IMAGE:-}" ]; then
    if docker image inspect python:3.11-slim-bookworm >/dev/null 2>&1 \
        || timeout 120 docker pull -q python:3.11-slim-bookworm >/dev/null 2>&1; then
        PYTHON_IMAGE=python:3.11-slim-bookworm
    else
        PYTHON_IMAGE=$LOCAL_BASE
        say "python:3.11-slim-bookworm cannot be pulled; using the local base $LOCAL_BASE"
    fi
fi
if [ "$PYTHON_IMAGE" = "$LOCAL_BASE" ] && ! docker image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null || die "making $LOCAL_BASE needs mmdebstrap (apt-get install mmdebstrap)"
    say "making $LOCAL_BASE with mmdebstrap"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$tmp/base.tar"
    docker import "$tmp/base.tar" "$LOCAL_BASE" >/dev/null
    rm -rf "$tmp"
fi

# ---------------------------------------------------------------- 3. pip settings
pip_config() {  # the machine's pip setting $1 (e.g. index-url), from env or pip's config
    local env_name="PIP_$(echo "$1" | tr 'a-z-' 'A-Z_')" value=""
    value=${!env_name:-}
    if [ -z "$value" ]; then
        for py in python3 python; do
            if value=$("$py" -m pip config get "global.$1" 2>/dev/null); then break; fi
            value=""
        done
    fi
    echo "$value"
}
build_args=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE" --build-arg "TORCH_INDEX=$TORCH_INDEX"
            --build-arg "GIT_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)")
remote_urls() { tr ' ' '\n' | { grep -E '^https?://' || true; } | tr '\n' ' ' | sed 's/ $//'; }
index=$(pip_config index-url | remote_urls)
extra=$(pip_config extra-index-url | remote_urls)
trusted=$(pip_config trusted-host)
[ -z "$index" ] || build_args+=(--build-arg "PIP_INDEX_URL=$index")
[ -z "$extra" ] || build_args+=(--build-arg "PIP_EXTRA_INDEX_URL=$extra")
[ -z "$trusted" ] || build_args+=(--build-arg "PIP_TRUSTED_HOST=$trusted")

rm -rf docker/local/wheels docker/local/ca-certificates.crt
mkdir -p docker/local/wheels
cert=$(pip_config cert)
cert=${cert:-/etc/ssl/certs/ca-certificates.crt}
if [ -s "$cert" ]; then
    cp "$cert" docker/local/ca-certificates.crt
    say "pip in the build trusts this machine's CA bundle ($cert)"
fi

torch_version=$(sed -n 's/^torch==//p' requirements.lock)
if [ "$GPU" = 0 ] && [ -n "$TORCH_INDEX" ] \
    && ! curl -sf --max-time 15 -o /dev/null "${TORCH_INDEX%/}/torch/"; then
    # Unreachable CPU index: look for the wheel in pip's local sources on this machine.
    dirs=$(pip_config find-links; echo; pip_config extra-index-url | tr ' ' '\n' \
        | sed -n 's|^file://\(.*\)/simple/*$|\1/files|p'; pip_config index-url \
        | sed -n 's|^file://\(.*\)/simple/*$|\1/files|p')
    wheel=""
    for d in $dirs; do
        d=${d#file://}
        for w in "$d"/torch-"$torch_version"+cpu-cp311-cp311-*linux*_x86_64.whl; do
            [ -f "$w" ] && wheel=$w && break 2
        done
    done
    [ -n "$wheel" ] || die "cannot reach $TORCH_INDEX and found no torch-$torch_version+cpu wheel \
in pip's local sources; set TORCH_INDEX or put the wheel in docker/local/wheels/"
    ln "$wheel" docker/local/wheels/ 2>/dev/null || cp "$wheel" docker/local/wheels/
    build_args+=(--build-arg "TORCH_INDEX=")
    say "$TORCH_INDEX cannot be reached; torch from $wheel"
    TORCH_INDEX=""
fi

# ---------------------------------------------------------------- 4. the build
say "docker build -t $IMAGE (base $PYTHON_IMAGE, torch index ${TORCH_INDEX:-none}); log $STATE/build.log"
start=$(date +%s)
# shellcheck disable=SC2086  # DOCKER_BUILD_ARGS holds several words on purpose
if ! docker build "${build_args[@]}" ${DOCKER_BUILD_ARGS:-} -t "$IMAGE" . >"$STATE/build.log" 2>&1; then
    tail -n 40 "$STATE/build.log" >&2
    die "docker build failed; full log in $STATE/build.log"
fi
say "built $IMAGE in $(( $(date +%s) - start )) s"
docker image ls "$IMAGE"
