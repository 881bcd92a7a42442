#!/usr/bin/env bash
# The Gemma 4 benchmark in one GPU call (docs/PERFORMANCE.md, "Gemma 4 target"):
#   bash bench/run_gemma4.sh     (on the GPU machine, from the repository root; needs .deb/)
# Builds draftscope-bench (tools/gpu-build.sh) while HF transformers writes a random
# Gemma-4-shaped dense target and a DFlash drafter for it (bench/gen_weights_gemma4.py), then
# times draftscope and the HF transformers reference loop (bench/hf_dflash.py) and prints the
# table. Everything runs against a time budget (BENCH_BUDGET_S, default 560 s).
# Environment: BENCH_NEW (new tokens, default 256), BENCH_DIR (scratch, default
# /tmp/draftscope-gemma4), GEMMA4_LAYERS (default 30). Results: $OUT if set, else $BENCH_DIR/results.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DEADLINE=$((T0 + ${BENCH_BUDGET_S:-560}))
NEW=${BENCH_NEW:-256}
left() { echo $((DEADLINE - $(date +%s))); }
W=${BENCH_DIR:-/tmp/draftscope-gemma4}
R=${OUT:-$W/results}
mkdir -p "$W" "$R"
exec > >(tee -a "$R/log.txt") 2>&1
export PYTHONUNBUFFERED=1
(DRAFTSCOPE_BUILD_TARGET=draftscope-bench bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1
 echo $? > "$W/build.rc") &
build=$!
if [ ! -f "$W/prompt.json" ]; then python3 bench/gen_weights_gemma4.py "$W" || { wait $build; exit 1; }; fi
echo "weights: $(( $(date +%s) - T0 )) s"
wait $build
if [ "$(cat "$W/build.rc" 2>/dev/null)" != 0 ]; then tail -30 "$W/build.out"; exit 1; fi
echo "build + weights: $(( $(date +%s) - T0 )) s"
source build-cuda/env.sh
bash bench/machine_info.sh > "$R/machine.txt"
cat "$R/machine.txt"
du -sh "$W/target" "$W/drafter"
args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json")
timeout $(( $(left) / 2 + 30 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 1 \
  --out "$R/cpp.json" --dump "$W/cpp_dump.safetensors"
echo "draftscope done at $(( $(date +%s) - T0 )) s"
timeout $(( $(left) + 5 )) python3 bench/hf_dflash.py "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 1 \
  --out "$R/hf.json" --cpp-dump "$W/cpp_dump.safetensors" --cpp-json "$R/cpp.json" --deadline $((DEADLINE - 30)) \
  --fp32 0
echo "hf done at $(( $(date +%s) - T0 )) s"
python3 bench/report.py "$R/cpp.json" "$R/hf.json" "" "" | tee "$R/table.md"
echo "total: $(( $(date +%s) - T0 )) s"
