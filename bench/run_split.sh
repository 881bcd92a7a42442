#!/usr/bin/env bash
# The split-target benchmark on one GPU (docs/PERFORMANCE.md, "Split target on one GPU"):
#   bash bench/run_split.sh     (on the GPU machine, from the repository root; needs .deb/)
# The 64-layer hybrid shape of bench/run_hybrid.sh (its scratch and weights are reused when
# present, else written by bench/gen_weights_hybrid.py), timed twice by draftscope-bench in
# alternating processes (ABBA): on one placement group (--device cuda) and split into two groups on the
# same GPU (--device cuda:0,cuda:0 --gpu-memory 40GiB,40GiB: every layer boundary costs what
# it costs between two GPUs but the transfer itself). bench/report_split.py prints the table:
# load, stages, end-to-end, peak memory, the boundary's overhead, and whether the output ids
# and acceptance lengths are identical. Environment: BENCH_NEW (new tokens, default 128),
# BENCH_LAYERS, BENCH_DIRS, BENCH_SPLIT_MEMORY (default 40GiB,40GiB), BENCH_ROUNDS
# (default 2), BENCH_BUDGET_S (default 570). Results: $OUT if set, else <scratch>/results-split.
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
args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json" --new "$NEW" --reps 20 --e2e-reps 2)
# The two placements alternate, one process each, ROUNDS times (default 2): a launch-bound
# step time moves by tens of percent between processes on one machine, so one run of each
# would measure that noise, not the boundary. The first round also times the first run.
ROUNDS=${BENCH_ROUNDS:-2}
singles=(); splits=(); failed=0
for r in $(seq 1 "$ROUNDS"); do
  cold=$([ "$r" = 1 ] && echo 1 || echo 0)
  per=$(( ($(left) - 10) / (2 * (ROUNDS - r + 1)) ))
  [ "$per" -lt 40 ] && { echo "round $r: cut by the time budget"; break; }
  # Odd rounds run one group first, even rounds the split first (ABBA: neither placement
  # always runs first on a freshly started machine).
  order=(single split); [ $((r % 2)) = 0 ] && order=(split single)
  for which in "${order[@]}"; do
    if [ "$which" = single ]; then dev=(--device cuda); else dev=(--device cuda:0,cuda:0 --gpu-memory "$MEM"); fi
    if timeout "$per" ./build-cuda/bench/draftscope-bench "${args[@]}" --e2e-cold "$cold" "${dev[@]}" \
         --label "$which-$r" --out "$R/$which-$r.json"; then
      if [ "$which" = single ]; then singles+=("$R/$which-$r.json"); else splits+=("$R/$which-$r.json"); fi
    else
      echo "$which-$r: failed or cut (exit $?)"; failed=1
    fi
  done
  echo "round $r done at $(( $(date +%s) - T0 )) s"
done
if [ ${#singles[@]} = 0 ] || [ ${#splits[@]} = 0 ]; then
  echo "no complete pair of runs: no table"; exit 1
fi
python3 bench/report_split.py --single "${singles[@]}" --split "${splits[@]}" | tee "$R/split-table.md"
echo "total: $(( $(date +%s) - T0 )) s"
exit $failed
