"""Table of bench/run_graphs.sh: draftscope-bench results with --cuda-graphs off and on
(alternating processes). Each cell is the median over the processes of that mode (each
process's own value a median over its repetitions).
usage: python3 bench/report_graphs.py graphs-off-1.json graphs-on-1.json ...
"""
import json
import statistics
import sys

runs = [json.load(open(p)) for p in sys.argv[1:]]
by = {m: [r for r in runs if r.get("cuda_graphs_option") == m] for m in ("off", "on")}


def med(mode, key):
    v = [r[key] for r in by[mode] if key in r]
    return statistics.median(v) if v else None


def cell(x, fmt="{:.2f}"):
    return "n/a" if x is None else fmt.format(x)


first = runs[0]
bw = statistics.median(r["copy_bandwidth_gbps"] for r in runs)
bound = first["verify_weight_bytes"] / (bw * 1e9) * 1e3
print(f"| median of {len(by['off'])} / {len(by['on'])} processes | --cuda-graphs off | --cuda-graphs on | on / off |")
print("|---|---|---|---|")
for key, name in (("verify_ms", "verify, one block (ms)"), ("draft_ms", "drafter call (ms)"),
                  ("prefill_ms", "prefill (ms)"), ("e2e_ms", "end-to-end, warm (ms)"),
                  ("e2e_cold_ms", "end-to-end, first run (ms)")):
    a, b = med("off", key), med("on", key)
    print(f"| {name} | {cell(a)} | {cell(b)} | {cell(b / a if a and b else None, '{:.3f}')} |")
for mode in ("off", "on"):
    v = med(mode, "verify_ms")
    if v:
        print(f"\nverify with --cuda-graphs {mode}: {v:.2f} ms = {v / bound:.2f}x the bound "
              f"({first['verify_weight_bytes'] / 1e9:.2f} GB / {bw:.0f} GB/s = {bound:.2f} ms; goal <= 1.5x)")
for r in runs:
    print(f"{r['label']}: verify [{r.get('verify_cuda_graphs', '')}], drafter [{r.get('draft_cuda_graphs', '')}], "
          f"run [{r.get('run_cuda_graphs', '')}], "
          f"steps {r.get('steps')}, tau {r.get('tau', 0):.3f}")
keys = {(tuple(r["output_ids"]), tuple(r["acceptance_lengths"])) for r in runs if "output_ids" in r}
print("output ids and acceptance lengths: " + ("identical in every process" if len(keys) == 1 else
                                                f"{len(keys)} different results"))
