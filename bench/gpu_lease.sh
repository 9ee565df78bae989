#!/usr/bin/env bash
# The GPU-machine measurements in one prepared run (docs/benchmarks.md, "On a GPU machine"):
# install the kit of bench/gpu_kit.sh into a bare Python 3.12 + torch image, then
#   1. bench/gpu_offpolicy.py: SAC and TD3 learner updates/s, eager and CUDA graphs;
#   2. bench/thesis_grid.py: the thesis's timing grid (PPO, then TD3, then SAC with the
#      thesis's update schedule) at 1-16 env runners, without and with a learner GPU.
# Every result is written to OUT as soon as it exists, and each step has a time limit, so a
# run cut short still returns what it measured.
#
#   bash bench/gpu_lease.sh KIT_DIR OUT_DIR [SECONDS [STEPS]]
#
# SECONDS: the whole run's budget (default 500). STEPS: any of "offpolicy grid" (default
# both). The install is skipped when an earlier run on the same machine did it.
set -uo pipefail
KIT=$(cd "$1" && pwd) OUT=$2 BUDGET=${3:-500} STEPS=${4:-"offpolicy grid"}
SITE=/tmp/ddrl-site
T0=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
mkdir -p "$OUT" "$SITE"
exec > >(tee -a "$OUT/lease.log") 2>&1

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
nproc; grep -m1 "model name" /proc/cpuinfo; python3 --version
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())"

export PYTHONPATH=$SITE:$PWD/src:$PWD/bench RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
echo "== install ($(left) s left)"
if [ ! -e "$SITE/.installed" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
    "$KIT"/whl/*.whl || exit 1
  xz -dc "$KIT/ray.tar.xz" | tar xf - -C "$SITE" || exit 1
  xz -dc "$KIT/pybullet_python.tar.xz" | tar xf - -C "$SITE" || exit 1
  PB=$(mktemp -d)
  tar xf "$KIT/pybullet_src.tar" -C "$PB" && xz -dc "$KIT/libpybullet_core.a.xz" > "$PB/core.a"
  SUFFIX=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  (cd "$PB" && gcc -O2 -fPIC $(cat "$KIT/pybullet_includes.txt") \
     -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
     -I"$(python3 -c 'import numpy; print(numpy.get_include())')" \
     -c examples/pybullet/pybullet.c -o pybullet.o $(cat "$KIT/pybullet_cflags.txt") 2>/dev/null \
   && g++ -shared pybullet.o -Wl,--whole-archive core.a -Wl,--no-whole-archive -ldl -lpthread \
        -o "$SITE/pybullet$SUFFIX") || { echo "pybullet build failed"; exit 1; }
  python3 -c '
import gymnasium as gym, pybullet_envs_gymnasium, ray, torch
from ray.rllib.algorithms.ppo import PPOConfig
env = gym.make("HumanoidBulletEnv-v0"); env.reset(seed=0); env.step(env.action_space.sample())
print("imports ok: ray", ray.__version__, "torch", torch.__version__)' || exit 1
  touch "$SITE/.installed"
fi
if [[ " $STEPS " == *" offpolicy "* ]]; then
  echo "== off-policy learner on the GPU ($(left) s left)"
  timeout 200 python3 bench/gpu_offpolicy.py --updates 1000 --json "$OUT/gpu_offpolicy.json" \
    || echo "gpu_offpolicy: exit $?"
fi
[[ " $STEPS " == *" grid "* ]] || exit 0
# Configurations an earlier lease measured (committed rows) are not timed again.
SKIP=(--skip-measured "$PWD/docs/img/h200-thesis-grid.jsonl")

# Each stage stops starting configurations at its deadline; one started just before may run
# for its whole --config-timeout-s, and Ray's shutdown takes a few seconds more.
echo "== PPO timing grid ($(left) s left)"
PPO_S=$(( $(left) * 40 / 100 - 90 ))
[ "$PPO_S" -gt 10 ] || { echo "no time left for the grid"; exit 0; }
timeout $(( PPO_S + 120 )) python3 bench/thesis_grid.py --experiments scaling-ppo \
  --runners 1 16 4 2 8 --iters 2 --deadline-s "$PPO_S" --config-timeout-s 90 "${SKIP[@]}" \
  --jsonl "$OUT/grid.jsonl" > "$OUT/grid_ppo.out" 2>&1 || echo "grid ppo: exit $?"
grep -E '^\[|^\|' "$OUT/grid_ppo.out"

for ALGO in TD3 SAC; do
  echo "== $ALGO timing grid, the thesis's schedule ($(left) s left)"
  if [ "$ALGO" = TD3 ]; then S=$(( $(left) / 2 - 110 )); else S=$(( $(left) - 130 )); fi
  [ "$S" -gt 10 ] || { echo "skipped: no time left"; continue; }
  timeout $(( S + 120 )) python3 bench/thesis_grid.py --algorithms "$ALGO" \
    --experiments scaling-offpolicy-thesis-schedule --runners 1 16 4 2 8 --iters 1 \
    --deadline-s "$S" --config-timeout-s 90 "${SKIP[@]}" --jsonl "$OUT/grid.jsonl" \
    > "$OUT/grid_$ALGO.out" 2>&1 || echo "grid $ALGO: exit $?"
  grep -E '^\[|^\|' "$OUT/grid_$ALGO.out"
done

echo "== all rows, this lease's and the committed ones ($(left) s left)"
cat docs/img/h200-thesis-grid.jsonl "$OUT/grid.jsonl" > "$OUT/grid_all.jsonl" 2>/dev/null
python3 bench/thesis_grid.py --table "$OUT/grid_all.jsonl" | tee "$OUT/grid_table.md"
