"""Sums an Nsight Compute CSV (bench/profile_verify.sh: `ncu --csv --page raw --metrics
gpu__time_duration.sum`, one verify step) by kernel kind and lists the largest kernels.
usage: python3 bench/report_profile.py ncu.csv [draftscope-bench.json]
"""
import collections
import csv
import json
import re
import sys

KINDS = [  # first match wins
    ("attention (SDPA)", r"fmha|attention|flash|mem_eff|efficient"),
    ("triangular solves (Gated DeltaNet chunk rule)", r"trsm|trsv|triangular"),
    ("causal conv (Gated DeltaNet)", r"conv|cudnn|depthwise"),
    ("GEMM (linear layers, LM head)", r"gemm|cutlass|xmma|nvjet|cublas|gemv|splitK"),
    ("normalisation / reductions", r"reduce|norm|rms|softmax"),
    ("copies, cat, index", r"cat|copy|index|gather|scatter|fill"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise"),
]
SCALE = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}

lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
rows = list(csv.DictReader(lines[start:]))
unit = rows[0].get("gpu__time_duration.sum", "") if rows and not rows[0]["ID"] else "nsecond"
scale = SCALE.get(unit, 1e-6)
kernels = [(r["Kernel Name"], float(r["gpu__time_duration.sum"].replace(",", "")) * scale)
           for r in rows if r["ID"] and r.get("gpu__time_duration.sum", "").replace(",", "").replace(".", "").isdigit()]
total = sum(t for _, t in kernels)
by_kind = collections.defaultdict(lambda: [0, 0.0])
by_name = collections.defaultdict(lambda: [0, 0.0])
for name, t in kernels:
    kind = next((k for k, rx in KINDS if re.search(rx, name, re.I)), "other")
    by_kind[kind][0] += 1
    by_kind[kind][1] += t
    short = re.sub(r"\(.*", "", name)[:90]
    by_name[short][0] += 1
    by_name[short][1] += t
bench = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else {}
bound = None
if "copy_bandwidth_gbps" in bench:
    bound = bench["verify_weight_bytes"] / (bench["copy_bandwidth_gbps"] * 1e9) * 1e3
# Nsight Compute runs each kernel alone with cold caches, so the sum is an upper bound of
# the GPU time of a replayed step; the bench's own timings are taken under ncu and mean
# nothing here (bench/run_graphs.sh measures the step).
print(f"{bench.get('label', sys.argv[1])}: {len(kernels)} kernels, {total:.2f} ms of kernel time"
      + (f" [{bench['verify_cuda_graphs']}]" if "verify_cuda_graphs" in bench else "")
      + (f"; bandwidth bound {bound:.2f} ms" if bound else ""))
print("| kind | kernels | ms | share |\n|---|---|---|---|")
for kind, (n, t) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
    print(f"| {kind} | {n} | {t:.3f} | {100 * t / total:.1f}% |")
print("\n| largest kernels (by total time) | launches | ms |\n|---|---|---|")
for name, (n, t) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:12]:
    print(f"| `{name}` | {n} | {t:.3f} |")
