#!/usr/bin/env bash
# The whole benchmark in one GPU call (docs/PERFORMANCE.md):
#   bash bench/run.sh            (on the GPU machine, from the repository root; needs .deb/)
# Builds the engine + bench driver (tools/gpu-build.sh) while it generates random
# Qwen3-8B-shaped checkpoints, then times draftscope (fast and exact kernels), the CLI, and
# the HF transformers reference loop, and prints the table. Scratch: $BENCH_DIR
# (default /tmp/draftscope-bench, 19 GB); results: $OUT if set, else $BENCH_DIR/results.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/draftscope-bench}
R=${OUT:-$W/results}
mkdir -p "$W" "$R"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
(bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1; echo $? > "$W/build.rc") &
build=$!
if [ ! -f "$W/prompt.json" ]; then python3 bench/gen_weights.py "$W"; fi
wait $build || true
if [ "$(cat "$W/build.rc")" != 0 ]; then cat "$W/build.out"; exit 1; fi
echo "build + weights: $(( $(date +%s) - t0 )) s"
source build-cuda/env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$R/machine.txt"
echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >> "$R/machine.txt"
cat "$R/machine.txt"
args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json")
./build-cuda/bench/draftscope-bench "${args[@]}" --out "$R/cpp.json" --dump "$W/cpp_dump.safetensors"
./build-cuda/bench/draftscope-bench "${args[@]}" --out "$R/cpp_exact.json" --exact 1 --e2e-reps 1 --label draftscope-exact \
  --dump "$W/cpp_exact_dump.safetensors"
# Stage timings without the fused CUDA kernels (their gain; no end-to-end runs).
DRAFTSCOPE_FUSED_KERNELS=0 ./build-cuda/bench/draftscope-bench "${args[@]}" --out "$R/cpp_unfused.json" --e2e-cold 0 \
  --e2e-reps 0 --label draftscope-unfused
# The CLI on the same pair: what a user runs (timing and peak memory in its report).
./build-cuda/app/draftscope-cli run --target "$W/target" --drafter "$W/drafter" \
  --prompt-ids "$(python3 -c "import json;print(','.join(map(str,json.load(open('$W/prompt.json')))))")" \
  --max-new 256 --ignore-eos --device cuda --dtype bfloat16 --json "$W/cli.json" | tail -2
python3 bench/hf_dflash.py "${args[@]}" --out "$R/hf.json" --cpp-dump "$W/cpp_dump.safetensors" \
  --cpp-exact-dump "$W/cpp_exact_dump.safetensors" --cpp-json "$R/cpp.json"
python3 bench/report.py "$R/cpp.json" "$R/hf.json" "$R/cpp_exact.json" "$R/cpp_unfused.json" | tee "$R/table.md"
echo "total: $(( $(date +%s) - t0 )) s"
