#!/usr/bin/env bash
# The split-target benchmark on one GPU (docs/PERFORMANCE.md, "Split target on one GPU"):
#   bash bench/run_split.sh     (on the GPU machine, from the repository root; needs .deb/)
# The 64-layer hybrid shape of bench/run_hybrid.sh (its scratch and weights are reused when
# present, else written by bench/gen_weights_hybrid.py), timed twice by draftscope-bench in
# one process each: on one placement group (--device cuda) and split into two groups on the
# same GPU (--device cuda:0,cuda:0 --gpu-memory 40GiB,40GiB: every layer boundary costs what
# it costs between two GPUs but the transfer itself). bench/report_split.py prints the table:
# load, stages, end-to-end, peak memory, the boundary's overhead, and whether the output ids
# and acceptance lengths are identical. Environment: BENCH_NEW (new tokens, default 128),
# BENCH_LAYERS, BENCH_DIRS, BENCH_SPLIT_MEMORY (default 40GiB,40GiB), BENCH_BUDGET_S
# (default 570). Results: $OUT if set, else <scratch>/results-split.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DEADLINE=$((T0 + ${BENCH_BUDGET_S:-570}))
NEW=${BENCH_NEW:-128}
MEM=${BENCH_SPLIT_MEMORY:-40GiB,40GiB}
left() { echo $((DEADLINE - $(date +%s))); }
read -r BASE L < <(python3 bench/gen_weights_hybrid.py --plan ${BENCH_DIRS:-/tmp /dev/shm})
L=${BENCH_LAYERS:-$L}
W="$BASE/draftscope-hybrid"
R=${OUT:-$W/results-split}
mkdir -p "$W" "$R"
exec > >(tee -a "$R/split-log.txt") 2>&1
echo "scratch $W, $L layers, $NEW new tokens, split limits $MEM, budget $(left) s"
if [ ! -x build-cuda/bench/draftscope-bench ] || [ -n "${BENCH_REBUILD:-}" ]; then
  (DRAFTSCOPE_BUILD_TARGET=draftscope-bench bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1
   echo $? > "$W/build.rc") &
  build=$!
else
  echo 0 > "$W/build.rc"; build=
fi
if [ ! -f "$W/prompt.json" ]; then
  python3 bench/gen_weights_hybrid.py "$W" --layers "$L" || { [ -n "$build" ] && wait $build; exit 1; }
fi
[ -n "$build" ] && wait $build
if [ "$(cat "$W/build.rc")" != 0 ]; then cat "$W/build.out"; exit 1; fi
echo "build + weights: $(( $(date +%s) - T0 )) s"
source build-cuda/env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json" --new "$NEW" --reps 10 --e2e-reps 1)
half=$(( ($(left) - 10) / 2 ))
timeout "$half" ./build-cuda/bench/draftscope-bench "${args[@]}" --device cuda --label single --out "$R/single.json"
echo "single done at $(( $(date +%s) - T0 )) s"
timeout $(( $(left) - 5 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --device cuda:0,cuda:0 --gpu-memory "$MEM" \
  --label split --out "$R/split.json"
echo "split done at $(( $(date +%s) - T0 )) s"
python3 bench/report_split.py "$R/single.json" "$R/split.json" | tee "$R/split-table.md"
echo "total: $(( $(date +%s) - T0 )) s"
