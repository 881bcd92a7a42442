#!/usr/bin/env bash
# The hybrid-target benchmark in one GPU call (docs/PERFORMANCE.md, "Hybrid target"):
#   bash bench/run_hybrid.sh     (on the GPU machine, from the repository root; needs .deb/)
# Builds the engine + bench driver (tools/gpu-build.sh, draftscope-bench only) while it writes
# random Qwen3.6-27B-shaped checkpoints (bench/gen_weights_hybrid.py, 57 GB at 64 layers:
# fewer layers, a multiple of 4, if the disk cannot hold that), then times draftscope and the
# HF transformers reference loop (bench/hf_dflash.py, snapshot/re-run rollback) and prints
# the table. Everything runs against a time budget (BENCH_BUDGET_S, default 570 s from the
# start): what does not fit is cut and reported as such. Environment: BENCH_NEW (new tokens,
# default 256), BENCH_LAYERS (force a layer count), BENCH_DIRS (candidate scratch parents,
# default "/tmp /dev/shm"). Results: $OUT if set, else <scratch>/results.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DEADLINE=$((T0 + ${BENCH_BUDGET_S:-570}))
NEW=${BENCH_NEW:-256}
left() { echo $((DEADLINE - $(date +%s))); }
read -r BASE L < <(python3 bench/gen_weights_hybrid.py --plan ${BENCH_DIRS:-/tmp /dev/shm})
L=${BENCH_LAYERS:-$L}
W="$BASE/draftscope-hybrid"
R=${OUT:-$W/results}
mkdir -p "$W" "$R"
exec > >(tee -a "$R/log.txt") 2>&1
export PYTHONUNBUFFERED=1
echo "scratch $W, $L layers, $NEW new tokens, budget $(left) s"
df -h /tmp /dev/shm 2>/dev/null | sed 's/^/df: /'

(DRAFTSCOPE_BUILD_TARGET=draftscope-bench bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1
 echo $? > "$W/build.rc") &
build=$!
if [ ! -f "$W/prompt.json" ]; then
  python3 bench/gen_weights_hybrid.py "$W" --layers "$L" || { wait $build; exit 1; }
fi
echo "weights: $(( $(date +%s) - T0 )) s"
wait $build
if [ "$(cat "$W/build.rc")" != 0 ]; then cat "$W/build.out"; exit 1; fi
echo "build + weights: $(( $(date +%s) - T0 )) s"
source build-cuda/env.sh
{
  bash bench/machine_info.sh
  echo "target: $L layers; new tokens: $NEW"
} > "$R/machine.txt"
cat "$R/machine.txt"
du -sh "$W/target" "$W/drafter"

args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json")
# draftscope: stages, the first run and one warm run; HF gets what is left (about 3/4 of it).
timeout $(( $(left) / 4 + 30 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 1 \
  --out "$R/cpp.json" --dump "$W/cpp_dump.safetensors"
echo "draftscope done at $(( $(date +%s) - T0 )) s"
timeout $(( $(left) + 5 )) python3 bench/hf_dflash.py "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 1 \
  --out "$R/hf.json" --cpp-dump "$W/cpp_dump.safetensors" --cpp-json "$R/cpp.json" --deadline $((DEADLINE - 45)) \
  --fp32 auto
echo "hf done at $(( $(date +%s) - T0 )) s"
# Stage timings without the fused CUDA kernels (their gain), then the exact-kernel path's
# (no end-to-end runs), if time is left.
if [ "$(left)" -gt 50 ]; then
  DRAFTSCOPE_FUSED_KERNELS=0 timeout $(( $(left) / 2 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --new "$NEW" \
    --reps 10 --e2e-cold 0 --e2e-reps 0 --label draftscope-unfused --out "$R/cpp_unfused.json"
fi
if [ "$(left)" -gt 50 ]; then
  timeout $(( $(left) - 5 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --new "$NEW" --reps 10 --exact 1 \
    --e2e-cold 0 --e2e-reps 0 --label draftscope-exact --out "$R/cpp_exact.json"
fi
python3 bench/report.py "$R/cpp.json" "$R/hf.json" "$R/cpp_exact.json" "$R/cpp_unfused.json" | tee "$R/table.md"
echo "total: $(( $(date +%s) - T0 )) s"
