#!/usr/bin/env bash
# CUDA graphs for the verify step (docs/PERFORMANCE.md, "CUDA graphs"; issue 16), in one GPU
# call:   bash bench/run_graphs.sh   (on the GPU machine, from the repository root; needs .deb/)
# 1. builds draftscope-cli and draftscope-bench (tools/gpu-build.sh) while bench/gen_weights.py
#    writes the random Qwen3-8B-shaped pair (reused when present);
# 2. times draftscope-bench with --cuda-graphs off and on in alternating processes (ABBA,
#    BENCH_ROUNDS rounds, default 2), BENCH_NEW new tokens (default 256); bench/report_graphs.py
#    prints verify and end-to-end per mode, the ratio to the bandwidth bound, and whether
#    output ids and acceptance lengths agree;
# 3. tools/check_goldens.py on CUDA, float32, with --cuda-graphs on: the official goldens (and,
#    time permitting, the variant goldens: drafter layouts, both loops, clipped blocks).
# Scratch: $BENCH_DIR (default /tmp/draftscope-bench, 19 GB); results: $OUT if set.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DEADLINE=$((T0 + ${BENCH_BUDGET_S:-570}))
left() { echo $((DEADLINE - $(date +%s))); }
W=${BENCH_DIR:-/tmp/draftscope-bench}
R=${OUT:-$W/results-graphs}
NEW=${BENCH_NEW:-256}
ROUNDS=${BENCH_ROUNDS:-2}
mkdir -p "$W" "$R"
exec > >(tee -a "$R/graphs-log.txt") 2>&1
export PYTHONUNBUFFERED=1
(bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1; echo $? > "$W/build.rc") &
build=$!
[ -f "$W/prompt.json" ] || python3 bench/gen_weights.py "$W" > "$W/gen.out" 2>&1 || { cat "$W/gen.out"; exit 1; }
wait $build
[ "$(cat "$W/build.rc")" = 0 ] || { tail -30 "$W/build.out"; exit 1; }
echo "build + weights: $(( $(date +%s) - T0 )) s"
source build-cuda/env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json" --new "$NEW" --reps 20 --e2e-reps 3)
fail=0
for r in $(seq 1 "$ROUNDS"); do
  order=$([ $((r % 2)) = 1 ] && echo "off on" || echo "on off")
  for m in $order; do
    [ "$(left)" -gt 60 ] || { echo "time budget: stopping before round $r $m"; break 2; }
    timeout $(( $(left) - 30 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --cuda-graphs "$m" --label "graphs-$m" \
      --e2e-cold "$([ "$r" = 1 ] && echo 1 || echo 0)" --out "$R/graphs-$m-$r.json" || { echo "FAIL bench $m round $r"; fail=1; }
  done
done
python3 bench/report_graphs.py "$R"/graphs-*.json | tee "$R/table.md"
cli=./build-cuda/app/draftscope-cli
if [ "$(left)" -gt 120 ]; then
  python3 tools/check_goldens.py --cli "$cli" --device cuda --cuda-graphs on --json "$R/goldens-graphs-on.json" |
    tail -4 || fail=1
fi
if [ "$(left)" -gt 200 ]; then
  python3 tools/check_goldens.py --cli "$cli" --device cuda --cuda-graphs on --variants | tail -3 || fail=1
else
  echo "variant goldens skipped: $(left) s left"
fi
echo "total: $(( $(date +%s) - T0 )) s"
exit $fail
