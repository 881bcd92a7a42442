#!/usr/bin/env bash
# The gpt-oss benchmark in one GPU call (docs/PERFORMANCE.md, "gpt-oss target"):
#   bash bench/run_gptoss.sh     (on the GPU machine, from the repository root; needs .deb/)
# Builds draftscope-bench and draftscope-cli (tools/gpu-build.sh) while it writes a random
# gpt-oss-20b-shaped MXFP4 checkpoint and a DFlash drafter for it (bench/gen_weights_gptoss.py,
# 14 GB), checks the tiny gpt-oss fixtures on CUDA (tools/check_gptoss.py, float32 and
# bfloat16), then times draftscope and the HF transformers reference loop (bench/hf_dflash.py;
# HF dequantises the MXFP4 experts to bf16 at load where its MXFP4 kernels are not installed)
# and prints the table. Everything runs against a time budget (BENCH_BUDGET_S, default 560 s).
# Environment: BENCH_NEW (new tokens, default 256), BENCH_DIR (scratch, default
# /tmp/draftscope-gptoss). Results: $OUT if set, else $BENCH_DIR/results.
set -uo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
DEADLINE=$((T0 + ${BENCH_BUDGET_S:-560}))
NEW=${BENCH_NEW:-256}
left() { echo $((DEADLINE - $(date +%s))); }
W=${BENCH_DIR:-/tmp/draftscope-gptoss}
R=${OUT:-$W/results}
mkdir -p "$W" "$R"
exec > >(tee -a "$R/log.txt") 2>&1
export PYTHONUNBUFFERED=1
(DRAFTSCOPE_BUILD_TARGET=draftscope-bench bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON > "$W/build.out" 2>&1 &&
 DRAFTSCOPE_BUILD_TARGET=draftscope-cli bash tools/gpu-build.sh -DDRAFTSCOPE_BUILD_BENCH=ON >> "$W/build.out" 2>&1
 echo $? > "$W/build.rc") &
build=$!
if [ ! -f "$W/prompt.json" ]; then python3 bench/gen_weights_gptoss.py "$W" || { wait $build; exit 1; }; fi
echo "weights: $(( $(date +%s) - T0 )) s"
wait $build
if [ "$(cat "$W/build.rc" 2>/dev/null)" != 0 ]; then cat "$W/build.out"; exit 1; fi
echo "build + weights: $(( $(date +%s) - T0 )) s"
source build-cuda/env.sh
bash bench/machine_info.sh > "$R/machine.txt"
cat "$R/machine.txt"
du -sh "$W/target" "$W/drafter"
python3 tools/check_gptoss.py --cli build-cuda/app/draftscope-cli --device cuda --dtype float32 --json "$R/tiny_cuda_f32.json"
python3 tools/check_gptoss.py --cli build-cuda/app/draftscope-cli --device cuda --dtype bfloat16 --json "$R/tiny_cuda_bf16.json"
# The same measure for HF's own bf16 model against its float32 goldens (routing near-ties flip in bf16).
python3 - <<'PY' | tee "$R/tiny_hf_bf16.txt"
import lzma, os, tempfile, torch, transformers
from safetensors.torch import load_file, save_file
d = tempfile.mkdtemp()
open(os.path.join(d, "g.st"), "wb").write(lzma.open("tests/data/gptoss/goldens.safetensors.xz").read())
g = load_file(os.path.join(d, "g.st"))
for m in ("tiny-gpt-oss",):
    md = os.path.join(d, m); os.makedirs(md)
    for f in os.listdir("tests/data/gptoss/" + m):
        src = os.path.join("tests/data/gptoss", m, f)
        data = lzma.open(src).read() if f.endswith(".xz") else open(src, "rb").read()
        open(os.path.join(md, f[:-3] if f.endswith(".xz") else f), "wb").write(data)
    for dev in ("cpu", "cuda"):
        ref = transformers.GptOssForCausalLM.from_pretrained(md, dtype=torch.bfloat16, attn_implementation="eager").to(dev).eval()
        with torch.no_grad():
            o = ref(g[m + ".input_ids"][None].to(dev), output_hidden_states=True)
        h = torch.stack([x[0] for x in o.hidden_states]).float().cpu()
        rel = lambda a, b: ((a - b).abs().max() / b.abs().max()).item()
        print(f"HF {m} {dev} bfloat16: hidden {rel(h, g[m + '.hidden_states']):.3g}, logits {rel(o.logits[0].float().cpu(), g[m + '.logits']):.3g}")
PY

args=(--target "$W/target" --drafter "$W/drafter" --prompt-ids "$W/prompt.json")
timeout $(( $(left) / 3 + 30 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 1 \
  --out "$R/cpp.json" --dump "$W/cpp_dump.safetensors"
echo "draftscope done at $(( $(date +%s) - T0 )) s"
# Experts kept packed (what a 24 GB card needs): stages and memory, no end-to-end run.
timeout $(( $(left) / 4 + 20 )) ./build-cuda/bench/draftscope-bench "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 0 \
  --e2e-cold 0 --mxfp4-experts packed --label draftscope-packed --out "$R/cpp_packed.json"
echo "draftscope packed done at $(( $(date +%s) - T0 )) s"
timeout $(( $(left) + 5 )) python3 bench/hf_dflash.py "${args[@]}" --new "$NEW" --reps 10 --e2e-reps 1 \
  --out "$R/hf.json" --cpp-dump "$W/cpp_dump.safetensors" --cpp-json "$R/cpp.json" --deadline $((DEADLINE - 30)) \
  --fp32 0
echo "hf done at $(( $(date +%s) - T0 )) s"
python3 bench/report.py "$R/cpp.json" "$R/hf.json" "" "" | tee "$R/table.md"
echo "total: $(( $(date +%s) - T0 )) s"
