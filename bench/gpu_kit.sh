#!/usr/bin/env bash
# Build the kit that bench/gpu_lease.sh installs on a bare GPU machine with no package
# registry (Python 3.12, torch preinstalled): ddrl's Python dependencies that such an image
# lacks, as files small enough to travel with the working tree (under 64 MiB in all).
#
#   bash bench/gpu_kit.sh [KIT_DIR]        # default .gpukit (add it to .git/info/exclude)
#   PYVER=3.11 bash bench/gpu_kit.sh /tmp/kit   # a kit for this machine's Python (rehearsal)
#
# - wheels for Python 3.12 (manylinux x86_64) of ray[rllib]'s and gymnasium's dependencies
#   that the image does not carry (see DEVICE_MISSING);
# - ray itself, unpacked and repacked with xz without its Java jars, LLM, Serve and
#   dashboard web client (a Ray started with include_dashboard=False never uses them);
# - pybullet: PyPI has no wheel for Python 3.12, so the Bullet sources are compiled here
#   into a static archive; only pybullet.c (the module, which includes Python.h) is compiled
#   there, against that Python's headers, and linked with the archive;
# - pybullet's Python packages: pybullet_utils, and of pybullet_data the files the Bullet
#   locomotion envs load (MJCF robots, the stadium).
set -euo pipefail
KIT=${1:-.gpukit}
PY=${PYTHON:-python3}      # builds Bullet; needs setuptools and numpy
PYVER=${PYVER:-3.12}       # the GPU image's Python
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$KIT/whl"
KIT=$(cd "$KIT" && pwd)

pin() { grep -i "^$1==" requirements.lock | head -1; }
DEVICE_MISSING="annotated-types dm-tree farama-notifications gymnasium jsonschema
  jsonschema-specifications lz4 ormsgpack pybullet-envs-gymnasium pydantic pydantic-core
  referencing rpds-py tensorboardx typing-inspection"
PLATFORMS=""
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 \
         manylinux_2_28_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux1_x86_64; do
  PLATFORMS="$PLATFORMS --platform $p"
done
download() {  # $1: requirement, $2: destination
  $PY -m pip download -q --no-deps --only-binary=:all: --python-version $PYVER \
    --implementation cp $PLATFORMS -d "$2" "$1"
}
for name in $DEVICE_MISSING; do
  req=$(pin "$(echo "$name" | sed 's/-/[-_]/g')")
  [ -n "$req" ] || { echo "gpu_kit: $name is not pinned in requirements.lock" >&2; exit 1; }
  download "$req" "$KIT/whl"
done

echo "gpu_kit: repacking ray" >&2
download "$(pin ray)" "$WORK"
(cd "$WORK" && mkdir ray && cd ray && unzip -q ../ray-*.whl \
  && rm -rf ray/jars ray/llm ray/serve ray/dashboard/client/build \
  && tar cf - ray ray-*.dist-info | xz -T0 -6 > "$KIT/ray.tar.xz")

echo "gpu_kit: compiling Bullet (a few minutes)" >&2
$PY -m pip download -q --no-deps --no-binary=:all: -d "$WORK" "$(pin pybullet)"
tar xzf "$WORK"/pybullet-*.tar.gz -C "$WORK"
SRC=$(ls -d "$WORK"/pybullet-*/)
# The EGL renderer plugin is a second extension, not needed for training.
sed -i "s/^if 'BT_USE_EGL' in EGL_CXX_FLAGS:$/if False:/" "$SRC/setup.py"
(cd "$SRC" && $PY setup.py build_ext --build-temp "$WORK/tmp" --build-lib "$WORK/lib" \
   > "$WORK/build.log" 2>&1) || { tail -20 "$WORK/build.log" >&2; exit 1; }
module_cmd=$(grep -- "-c examples/pybullet/pybullet.c" "$WORK/build.log" | tail -1)
echo "$module_cmd" | sed 's/.*pybullet\.o //' > "$KIT/pybullet_cflags.txt"
echo "$module_cmd" | tr ' ' '\n' | grep '^-I[^/]' | tr '\n' ' ' > "$KIT/pybullet_includes.txt"
mkdir -p "$WORK/obj"
find "$WORK/tmp" -name '*.o' ! -path '*/examples/pybullet/pybullet.o' | while read -r o; do
  strip --strip-debug -o "$WORK/obj/$(echo "${o#"$WORK"/tmp/}" | tr / _)" "$o"
done
ar rcs "$WORK/libpybullet_core.a" "$WORK"/obj/*.o
xz -T0 -6 -c "$WORK/libpybullet_core.a" > "$KIT/libpybullet_core.a.xz"
# The headers pybullet.c includes, found by the preprocessor against this Python.
(cd "$SRC" && gcc -M $(cat "$KIT/pybullet_includes.txt") \
   -I"$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
   -I"$($PY -c 'import numpy; print(numpy.get_include())')" \
   $(cat "$KIT/pybullet_cflags.txt") examples/pybullet/pybullet.c \
   | tr ' \\' '\n\n' | grep -v -e '^$' -e '^/' -e ':$' \
   | xargs -n1 realpath --relative-to=. | sort -u > "$WORK/deps.txt" \
   && tar cf "$KIT/pybullet_src.tar" -T "$WORK/deps.txt")

echo "gpu_kit: pybullet's Python packages (pybullet_utils; of pybullet_data, what the envs load)" >&2
tar tzf "$WORK"/pybullet-*.tar.gz > "$WORK/sdist.txt"
GYM=$(dirname "$(dirname "$(grep -m1 '/pybullet_data/__init__.py$' "$WORK/sdist.txt")")")
(cd "$WORK" && tar xzf pybullet-*.tar.gz "$GYM/pybullet_data" "$GYM/pybullet_utils" && cd "$GYM" \
  && tar cf - --exclude=__pycache__ pybullet_utils pybullet_data/__init__.py pybullet_data/mjcf \
       pybullet_data/plane_stadium.sdf pybullet_data/plane100.obj \
       pybullet_data/stadium_no_collision.sdf pybullet_data/roboschool/models_outdoor/stadium \
     | xz -6 > "$KIT/pybullet_python.tar.xz")
du -sh "$KIT" >&2
