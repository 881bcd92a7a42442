"""Prints the split-target table (markdown) from the JSON files bench/run_split.sh writes:
the target on one placement group and split into two groups on the same GPU, one file per
process (alternating rounds). Each cell is the median over the processes (end-to-end: over
every warm run); the overhead column is split / single - 1.
usage: python3 bench/report_split.py --single A.json [B.json ...] --split C.json [D.json ...]"""
import argparse
import json
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("--single", nargs="+", required=True)
ap.add_argument("--split", nargs="+", required=True)
a = ap.parse_args()
one = [json.load(open(f)) for f in a.single]
two = [json.load(open(f)) for f in a.split]
gib = 1 << 30


def med(runs, key, scale=1.0):
    v = [r[key] / scale for r in runs if r.get(key) is not None]
    return statistics.median(v) if v else None


def warm(runs):
    v = [x for r in runs for x in r.get("e2e_all_ms", [])]
    return statistics.median(v) if v else None


def best(runs):
    v = [x for r in runs for x in r.get("e2e_all_ms", [])]
    return min(v) if v else None


def per_step(runs):
    v = [(x - r["e2e_prefill_ms"]) / r["steps"] for r in runs for x in r.get("e2e_all_ms", []) if r.get("steps")]
    return statistics.median(v) if v else None


def row(name, x, y, fmt="{:.2f}", overhead=True):
    na = lambda v: "n/a" if v is None else fmt.format(v)
    o = "" if not overhead or x is None or y is None or x == 0 else f"{(y / x - 1) * 100:+.1f}%"
    return f"| {name} | {na(x)} | {na(y)} | {o} |"


print(f"| median of {len(one)} / {len(two)} processes | one group (`--device cuda`) | two groups "
      f"(`--device cuda:0,cuda:0`) | split overhead |")
print("|---|---:|---:|---:|")
print(f"| placement | {one[0].get('placement', 'n/a')} | {two[0].get('placement', 'n/a')} | |")
print(row("load (s)", med(one, "load_s"), med(two, "load_s")))
print(row("load (GB/s)", med(one, "load_gbps"), med(two, "load_gbps"), overhead=False))
print(row("prefill 512 tokens + features (ms)", med(one, "prefill_ms"), med(two, "prefill_ms")))
print(row("draft step: 1 drafter call (ms)", med(one, "draft_ms"), med(two, "draft_ms")))
print(row("verify step: target on 16 tokens (ms)", med(one, "verify_ms"), med(two, "verify_ms")))
print(row("rollback to 1 committed token: crop() alone (ms)", med(one, "rollback_1_ms"), med(two, "rollback_1_ms"),
          overhead=False))
print(row("end-to-end: prefill + new tokens, warm (ms)", warm(one), warm(two), "{:.0f}"))
print(row("end-to-end, warm, best of all runs (ms)", best(one), best(two), "{:.0f}"))
print(row("end-to-end, first run of the process (ms)", med(one, "e2e_cold_ms"), med(two, "e2e_cold_ms"), "{:.0f}"))
print(row("loop time per step, warm (ms)", per_step(one), per_step(two)))
print(row("peak GPU memory during the run (GiB)", med(one, "peak_run_bytes", gib), med(two, "peak_run_bytes", gib),
          overhead=False))
print(row("GPU memory after load (GiB)", med(one, "mem_after_load_bytes", gib), med(two, "mem_after_load_bytes", gib),
          overhead=False))
ref = one[0]
same_ids = all(r.get("output_ids") is not None and r.get("output_ids") == ref.get("output_ids") for r in one + two)
same_acc = all(r.get("acceptance_lengths") is not None and r.get("acceptance_lengths") == ref.get("acceptance_lengths")
               for r in one + two)
print()
print("per process, verify ms / warm e2e ms: " + "; ".join(
    f"{r.get('label')} {r.get('verify_ms', 0):.1f} / {', '.join(f'{x:.0f}' for x in r.get('e2e_all_ms', []))}"
    for r in one + two))
print(f"new tokens: {len(ref.get('output_ids', []))}; steps {[r.get('steps') for r in one + two]}; tau {ref.get('tau')}")
print(f"output ids identical in every process: {'yes' if same_ids else 'NO'}; "
      f"acceptance lengths identical: {'yes' if same_acc else 'NO'}")
