#!/usr/bin/env bash
# Split-placement exactness on the GPU machine (issue 17): every target fixture in
# tests/data/models and the demo target through `draftscope-cli forward` on one device and
# split into two placement groups on the same GPU after every decoder layer
# (--device cuda:0,cuda:0 --split-after N), in float32 and bfloat16; each split output
# (hidden states and logits, safetensors) must be byte-identical to the unsplit one. Then
# `draftscope-cli run` on the demo pair, split after every layer: identical output ids and
# acceptance lengths. Needs build-cuda/app/draftscope-cli (tools/gpu-build.sh).
#   bash tools/check_split.sh [device, default cuda:0]   (DRAFTSCOPE_CLI: another CLI binary)
set -uo pipefail
cd "$(dirname "$0")/.."
dev=${1:-cuda:0}
cli=${DRAFTSCOPE_CLI:-./build-cuda/app/draftscope-cli}
[ -f build-cuda/env.sh ] && source build-cuda/env.sh
tmp=$(mktemp -d)
ids=$(seq -s, 3 2 81)  # 40 token ids below every fixture's vocabulary
fail=0; checked=0; expected=0
layers() { python3 -c "import json,sys;c=json.load(open(sys.argv[1]));print(c.get('text_config',c)['num_hidden_layers'])" "$1/config.json"; }
for m in resources/demo/target tests/data/models/*/; do
  m=${m%/}
  [ -f "$m/model.safetensors" ] || [ -f "$m/model.safetensors.index.json" ] || continue
  grep -q DFlashDraftModel "$m/config.json" && continue
  L=$(layers "$m")
  [ -n "$L" ] && [ "$L" -ge 1 ] || { echo "FAIL $m: no num_hidden_layers in its config.json"; fail=1; continue; }
  expected=$((expected + 2 * (L - 1)))
  for dt in float32 bfloat16; do
    "$cli" forward --model "$m" --prompt-ids "$ids" --device "$dev" --dtype "$dt" --out "$tmp/one.st" >/dev/null 2>"$tmp/err" ||
      { echo "FAIL $m $dt: unsplit forward: $(tail -1 "$tmp/err")"; fail=1; continue; }
    for ((k = 0; k < L - 1; k++)); do
      "$cli" forward --model "$m" --prompt-ids "$ids" --device "$dev,$dev" --split-after "$k" --dtype "$dt" \
        --out "$tmp/two.st" >/dev/null 2>"$tmp/err" || { echo "FAIL $m $dt split after $k: $(tail -1 "$tmp/err")"; fail=1; continue; }
      checked=$((checked + 1))
      cmp -s "$tmp/one.st" "$tmp/two.st" || { echo "FAIL $m $dt split after $k: outputs differ"; fail=1; }
    done
    echo "forward $m ($L layers, $dt): $((L - 1)) splits compared"
  done
done
pair=(--target resources/demo/target --drafter resources/demo/drafter --prompt-ids "$ids" --max-new 48 --ignore-eos)
key() { python3 -c "import json,sys;r=json.load(open(sys.argv[1]))['runs'][0];print(r['output_ids'],r['acceptance_lengths'])" "$1"; }
L=$(layers resources/demo/target)
expected=$((expected + 2 * (L - 1)))
for dt in float32 bfloat16; do
  "$cli" run "${pair[@]}" --device "$dev" --dtype "$dt" --json "$tmp/one.json" >/dev/null 2>&1 || { echo "FAIL run $dt"; fail=1; continue; }
  for ((k = 0; k < L - 1; k++)); do
    "$cli" run "${pair[@]}" --device "$dev,$dev" --split-after "$k" --dtype "$dt" --json "$tmp/two.json" >/dev/null 2>&1 ||
      { echo "FAIL run $dt split after $k"; fail=1; continue; }
    checked=$((checked + 1))
    a=$(key "$tmp/one.json"); b=$(key "$tmp/two.json")
    [ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL run $dt split after $k: ids or acceptance differ (or unreadable)"; fail=1; }
  done
  echo "run demo pair ($dt): $((L - 1)) splits compared; tau $(python3 -c "import json;print(json.load(open('$tmp/one.json'))['runs'][0]['tau'])")"
done
rm -rf "$tmp"
[ "$checked" = "$expected" ] || { echo "FAIL: $checked of $expected split runs compared"; fail=1; }
[ $fail = 0 ] && echo "check_split: all $checked split runs identical to one device" || echo "check_split: FAILURES"
exit $fail
