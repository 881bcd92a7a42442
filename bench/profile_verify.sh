#!/usr/bin/env bash
# Where a verify step's GPU time goes (docs/PERFORMANCE.md, "CUDA graphs" and "Hybrid
# target"), in one GPU call:
#   bash bench/profile_verify.sh                      (dense Qwen3-8B shape, graphs off and on)
#   PROFILE_SHAPE=hybrid bash bench/profile_verify.sh (64-layer hybrid Qwen3.6-27B shape)
# (GPU machine, repository root; needs .deb/ and ncu.) Builds draftscope-bench, reuses or
# writes the pair of bench/run.sh (bench/run_hybrid.sh for the hybrid shape), and runs one
# verify step (block of 16 on the 512-token prompt) inside the NVTX range "verify" under
# Nsight Compute with one metric (gpu__time_duration.sum, one pass per kernel), with
# --cuda-graphs off and on (PROFILE_MODES, default "off on"). bench/report_profile.py sums
# the kernels by kind and lists the largest. Results: $OUT if set, else
# $BENCH_DIR/results-profile.
set -uo pipefail
cd "$(dirname "$0")/.."
SHAPE=${PROFILE_SHAPE:-dense}
if [ "$SHAPE" = hybrid ]; then
  read -r BASE L < <(python3 bench/gen_weights_hybrid.py --plan /tmp /dev/shm)
  W=${BENCH_DIR:-$BASE/draftscope-hybrid}
  gen=(python3 bench/gen_weights_hybrid.py "$W" --layers "$L")
else
  W=${BENCH_DIR:-/tmp/draftscope-bench}
  gen=(python3 bench/gen_weights.py "$W")
fi
R=${OUT:-$W/results-profile}
mkdir -p "$W" "$R"
export PYTHONUNBUFFERED=1
(DRAFTSCOPE_BUILD_TARGET=draftscope-bench bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1
 echo $? > "$W/build.rc") &
build=$!
[ -f "$W/prompt.json" ] || "${gen[@]}" > "$W/gen.out" 2>&1 || { cat "$W/gen.out"; exit 1; }
wait $build
[ "$(cat "$W/build.rc")" = 0 ] || { tail -30 "$W/build.out"; exit 1; }
source build-cuda/env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json" --new 16 --reps 5 --e2e-reps 0
      --e2e-cold 0 --profile-verify 1)
fail=0
for m in ${PROFILE_MODES:-off on}; do
  "$ncu" --nvtx --nvtx-include "verify/" --metrics gpu__time_duration.sum --csv --page raw \
    ./build-cuda/bench/draftscope-bench "${args[@]}" --cuda-graphs "$m" --label "profile-$m" --out "$R/profile-$m.json" \
    > "$R/ncu-$m.csv" 2> "$R/ncu-$m.err" || { echo "FAIL ncu $m"; tail -5 "$R/ncu-$m.err"; fail=1; }
  python3 bench/report_profile.py "$R/ncu-$m.csv" "$R/profile-$m.json" | tee "$R/profile-$m.md"
done
exit $fail
