"""Prints the benchmark table (markdown) from the JSON files bench/run.sh writes.
usage: python3 bench/report.py cpp.json hf.json [cpp_exact.json]"""
import json
import sys

cpp, hf = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
exact = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else None
gib = 1 << 30


def row(name, key, unit, fmt="{:.2f}", higher_better=False):
    c, h = cpp[key], hf[key]
    ratio = (c / h) if higher_better else (h / c)
    e = f" | {fmt.format(exact[key])}" if exact else ""
    return f"| {name} | {fmt.format(c)}{e} | {fmt.format(h)} | {ratio:.2f}x |"


hdr = "| stage | draftscope (C++, libtorch) " + ("| draftscope, exact kernels " if exact else "") + "| HF transformers + PyTorch loop | speed-up |"
sep = "|---|---:|" + ("---:|" if exact else "") + "---:|---:|"
lines = [hdr, sep,
         row("load (s)", "load_s", "s"),
         row("load (GB/s)", "load_gbps", "GB/s", higher_better=True),
         row("prefill 512 tokens + features (ms)", "prefill_ms", "ms"),
         row("draft step: 1 drafter call, block 16 (ms)", "draft_ms", "ms"),
         row("verify step: target on 16 tokens (ms)", "verify_ms", "ms"),
         row(f"end-to-end: prefill + {len(cpp['output_ids'])} new tokens, warm (ms)", "e2e_ms", "ms", "{:.0f}"),
         row("end-to-end, first run of the process (ms)", "e2e_cold_ms", "ms", "{:.0f}")]
e2e_step_c = (cpp["e2e_ms"] - cpp["prefill_ms"]) / cpp["steps"]
e2e_step_h = (hf["e2e_ms"] - hf["prefill_ms"]) / hf["steps"]
lines.append(f"| loop time per step (e2e - prefill) / steps (ms) | {e2e_step_c:.2f}" +
             (f" | {(exact['e2e_ms'] - exact['prefill_ms']) / exact['steps']:.2f}" if exact else "") +
             f" | {e2e_step_h:.2f} | {e2e_step_h / e2e_step_c:.2f}x |")
lines.append(f"| steps / tau | {cpp['steps']} / {cpp['tau']:.2f}" + (f" | {exact['steps']} / {exact['tau']:.2f}" if exact else "") +
             f" | {hf['steps']} / {hf['tau']:.2f} | |")
lines.append(f"| peak GPU memory during the run (GiB) | {cpp['peak_run_bytes'] / gib:.2f}" +
             (f" | {exact['peak_run_bytes'] / gib:.2f}" if exact else "") + f" | {hf['peak_run_bytes'] / gib:.2f} | |")
print("\n".join(lines))
bw = cpp["copy_bandwidth_gbps"]
bound = cpp["verify_weight_bytes"] / (bw * 1e9) * 1e3
print(f"\ncopy bandwidth (device-to-device, read + write): {bw:.0f} GB/s")
print(f"verify bound: {cpp['verify_weight_bytes'] / 1e9:.2f} GB of target weights / {bw:.0f} GB/s = {bound:.2f} ms; "
      f"draftscope verify {cpp['verify_ms']:.2f} ms = {cpp['verify_ms'] / bound:.2f}x the bound (goal <= 1.5x)"
      + (f"; exact kernels {exact['verify_ms'] / bound:.2f}x" if exact else "")
      + f"; HF {hf['verify_ms'] / bound:.2f}x")
print(f"end-to-end speed-up over HF: {hf['e2e_ms'] / cpp['e2e_ms']:.2f}x (goal >= 2x)")
def per_layer(n):
    return ", ".join(f"{k[6:]}: {v['cos_min']:.5f}" for k, v in n.items() if k.startswith("layer_"))


for key, name in (("numerics", "draftscope"), ("numerics_exact", "draftscope exact kernels")):
    n = hf.get(key)
    if n:
        print(f"numerics, {name} bf16 vs HF bf16 (512 prompt positions): min cosine per tapped layer {per_layer(n)}; "
              f"worst {n['cos_min_all']:.5f} (goal >= 0.999); logits argmax agreement {100 * n['logits_argmax_agreement']:.1f}%")
        f = hf[key + "_vs_fp32"]
        print(f"  {name} bf16 vs float32 reference: {per_layer(f)}; argmax agreement {100 * f['logits_argmax_agreement']:.1f}%")
if "numerics_hf_vs_fp32" in hf:
    f = hf["numerics_hf_vs_fp32"]
    print(f"  HF bf16 vs float32 reference: {per_layer(f)}; argmax agreement {100 * f['logits_argmax_agreement']:.1f}%")
if "output_common_prefix" in hf:
    print(f"greedy DFlash outputs: first {hf['output_common_prefix']} of {len(cpp['output_ids'])} new tokens identical")
