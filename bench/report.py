"""Prints the benchmark table (markdown) from the JSON files bench/run.sh or
bench/run_hybrid.sh write. Missing entries (a stage cut by the time budget) print as n/a.
usage: python3 bench/report.py cpp.json hf.json [cpp_exact.json [cpp_unfused.json]]
cpp_unfused.json: draftscope's stage timings with its fused CUDA kernels turned off
(DRAFTSCOPE_FUSED_KERNELS=0), for their gain."""
import json
import os
import sys

cpp, hf = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
exact = json.load(open(sys.argv[3])) if len(sys.argv) > 3 and os.path.exists(sys.argv[3]) else None
unfused = json.load(open(sys.argv[4])) if len(sys.argv) > 4 and os.path.exists(sys.argv[4]) else None
gib = 1 << 30
hybrid = bool(cpp.get("hybrid") or hf.get("hybrid"))


def fmt_or_na(v, fmt):
    return "n/a" if v is None else fmt.format(v)


def row(name, key, fmt="{:.2f}", higher_better=False):
    c, h = cpp.get(key), hf.get(key)
    ratio = "" if c is None or h is None or c == 0 else f"{((c / h) if higher_better else (h / c)):.2f}x"
    e = f" | {fmt_or_na(exact.get(key), fmt)}" if exact else ""
    return f"| {name} | {fmt_or_na(c, fmt)}{e} | {fmt_or_na(h, fmt)} | {ratio} |"


def per_step(r):
    if r is None or "e2e_ms" not in r or not r.get("steps"):
        return None
    return (r["e2e_ms"] - r["prefill_ms"]) / r["steps"]


def per_step_cold(r):  # from the first run; also valid for a run cut short by the deadline
    if r is None or "e2e_cold_ms" not in r:
        return None
    steps = r.get("e2e_cold_steps", r.get("steps"))
    return (r["e2e_cold_ms"] - r["prefill_ms"]) / steps if steps else None


hdr = "| stage | draftscope (C++, libtorch) " + ("| draftscope, exact kernels " if exact else "") + "| HF transformers + PyTorch loop | speed-up |"
sep = "|---|---:|" + ("---:|" if exact else "") + "---:|---:|"
new = len(cpp.get("output_ids", [])) or "?"
lines = [hdr, sep,
         row("load (s)", "load_s"),
         row("load (GB/s)", "load_gbps", higher_better=True),
         row("prefill 512 tokens + features (ms)", "prefill_ms"),
         row("draft step: 1 drafter call, block 16 (ms)", "draft_ms"),
         row("verify step: target on 16 tokens (ms)" + (" (HF: + state snapshot)" if hybrid else ""), "verify_ms")]
if hybrid:
    lines.append(row("HF state snapshot (copy of the cache) (ms)", "snapshot_ms"))
    # draftscope adopts the state after the committed token (no forward); HF restores its
    # snapshot and re-runs the target on that token.
    c, h = cpp.get("rollback_1_ms", cpp.get("rerun_1_ms")), hf.get("rerun_1_ms")
    e = f" | {fmt_or_na(exact.get('rollback_1_ms', exact.get('rerun_1_ms')), '{:.2f}')}" if exact else ""
    lines.append(f"| rollback after a rejected block, 1 token kept (ms) (draftscope: state adopted from the "
                 f"verify pass; HF: restore + target on 1 token) | {fmt_or_na(c, '{:.2f}')}{e} | {fmt_or_na(h, '{:.2f}')} | "
                 + (f"{h / c:.2f}x |" if c and h else " |"))
lines.append(row(f"end-to-end: prefill + {new} new tokens, warm (ms)", "e2e_ms", "{:.0f}"))
if hf.get("e2e_cold_partial"):  # a run cut by the time budget is no end-to-end time
    lines.append(f"| end-to-end, first run of the process (ms) | {fmt_or_na(cpp.get('e2e_cold_ms'), '{:.0f}')}"
                 + (f" | {fmt_or_na(exact.get('e2e_cold_ms'), '{:.0f}')}" if exact else "")
                 + f" | cut after {hf['e2e_cold_steps']} steps ({hf['e2e_cold_ms']:.0f} ms) | |")
else:
    lines.append(row("end-to-end, first run of the process (ms)", "e2e_cold_ms", "{:.0f}"))
c, h = per_step(cpp), per_step(hf)
e = f" | {fmt_or_na(per_step(exact), '{:.2f}')}" if exact else ""
lines.append(f"| loop time per step (e2e - prefill) / steps, warm (ms) | {fmt_or_na(c, '{:.2f}')}{e} | {fmt_or_na(h, '{:.2f}')} | "
             + (f"{h / c:.2f}x |" if c and h else " |"))
c, h = per_step_cold(cpp), per_step_cold(hf)
lines.append(f"| loop time per step, first run (ms) | {fmt_or_na(c, '{:.2f}')}"
             + (f" | {fmt_or_na(per_step_cold(exact), '{:.2f}')}" if exact else "")
             + f" | {fmt_or_na(h, '{:.2f}')}" + (f" ({hf['e2e_cold_steps']} steps, cut by the time budget)" if hf.get("e2e_cold_partial") else "")
             + " | " + (f"{h / c:.2f}x |" if c and h else " |"))


def steps_tau(r):
    return f"{r['steps']} / {r['tau']:.2f}" if r and "steps" in r and "tau" in r else "n/a"


lines.append(f"| steps / tau | {steps_tau(cpp)}" + (f" | {steps_tau(exact)}" if exact else "") + f" | {steps_tau(hf)} | |")


def peak(r):
    return f"{r['peak_run_bytes'] / gib:.2f}" if r and "peak_run_bytes" in r else "n/a"


lines.append(f"| peak GPU memory during the run (GiB) | {peak(cpp)}" + (f" | {peak(exact)}" if exact else "") + f" | {peak(hf)} | |")
print("\n".join(lines))
bw = cpp["copy_bandwidth_gbps"]
bound = cpp["verify_weight_bytes"] / (bw * 1e9) * 1e3
print(f"\ncopy bandwidth (device-to-device, read + write): {bw:.0f} GB/s")
print(f"verify bound: {cpp['verify_weight_bytes'] / 1e9:.2f} GB of target weights / {bw:.0f} GB/s = {bound:.2f} ms; "
      f"draftscope verify {cpp['verify_ms']:.2f} ms = {cpp['verify_ms'] / bound:.2f}x the bound (goal <= {'2' if cpp.get('hybrid') else '1.5'}x)"
      + (f"; exact kernels {exact['verify_ms'] / bound:.2f}x" if exact and "verify_ms" in exact else "")
      + (f"; HF {hf['verify_ms'] / bound:.2f}x" if "verify_ms" in hf else ""))
if unfused and "verify_ms" in unfused:
    gain = ", ".join(f"{name} {unfused[k]:.2f} -> {cpp[k]:.2f} ms" for k, name in
                     (("verify_ms", "verify"), ("draft_ms", "drafter"), ("rollback_1_ms", "rollback"))
                     if k in unfused and k in cpp)
    print(f"fused CUDA kernels (off -> on, same run): {gain}; verify without them {unfused['verify_ms'] / bound:.2f}x the bound")
if hybrid and "rerun_1_ms" in hf:
    print(f"rollback re-run bound (another pass over the weights): {bound:.2f} ms; HF re-run {hf['rerun_1_ms']:.2f} ms = "
          f"{hf['rerun_1_ms'] / bound:.2f}x" + (f"; draftscope adopts the state instead: {cpp['rollback_1_ms']:.2f} ms"
                                                if "rollback_1_ms" in cpp else ""))
if "e2e_ms" in cpp and "e2e_ms" in hf:
    print(f"end-to-end speed-up over HF: {hf['e2e_ms'] / cpp['e2e_ms']:.2f}x (goal >= 4x)")
for r in (cpp, exact):
    if r and "verify_cuda_graphs" in r:
        print(f"{r['label']}: CUDA graphs: verify stage [{r['verify_cuda_graphs']}], drafter stage "
              f"[{r.get('draft_cuda_graphs', '')}], last run [{r.get('run_cuda_graphs', '')}]")
if "rollback_check" in hf:
    print(f"HF rollback check (snapshot, 16-token block, restore, 3 tokens vs fresh prefill + 3 tokens): {hf['rollback_check']}")


def per_layer(n):
    return ", ".join(f"{k[6:]}: {v['cos_min']:.5f}" for k, v in n.items() if k.startswith("layer_"))


for key, name in (("numerics", "draftscope"), ("numerics_exact", "draftscope exact kernels")):
    n = hf.get(key)
    if n:
        print(f"numerics, {name} bf16 vs HF bf16 (512 prompt positions): min cosine per tapped layer {per_layer(n)}; "
              f"worst {n['cos_min_all']:.5f} (goal >= 0.999); logits argmax agreement {100 * n['logits_argmax_agreement']:.1f}%")
        f = hf.get(key + "_vs_fp32")
        if f:
            print(f"  {name} bf16 vs float32 reference: {per_layer(f)}; argmax agreement {100 * f['logits_argmax_agreement']:.1f}%")
if "numerics_hf_vs_fp32" in hf:
    f = hf["numerics_hf_vs_fp32"]
    print(f"  HF bf16 vs float32 reference: {per_layer(f)}; argmax agreement {100 * f['logits_argmax_agreement']:.1f}%")
if "numerics_fp32_skipped" in hf:
    print(f"  float32 reference skipped: {hf['numerics_fp32_skipped']}")
if "output_common_prefix" in hf:
    print(f"greedy DFlash outputs: first {hf['output_common_prefix']} of {new} new tokens identical")
