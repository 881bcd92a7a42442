"""Prints the split-target table (markdown) from the two JSON files bench/run_split.sh
writes: the target on one placement group and split into two groups on the same GPU.
usage: python3 bench/report_split.py single.json split.json"""
import json
import sys

one, two = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
gib = 1 << 30


def per_step(r):
    if "e2e_ms" not in r or not r.get("steps"):
        return None
    return (r["e2e_ms"] - r["e2e_prefill_ms"]) / r["steps"]


def row(name, a, b, fmt="{:.2f}", overhead=True):
    na = lambda v: "n/a" if v is None else fmt.format(v)
    o = "" if not overhead or a is None or b is None or a == 0 else f"{(b / a - 1) * 100:+.1f}%"
    return f"| {name} | {na(a)} | {na(b)} | {o} |"


print(f"| | one group (`--device cuda`) | two groups (`--device cuda:0,cuda:0`) | split overhead |")
print("|---|---:|---:|---:|")
print(f"| placement | {one.get('placement', 'n/a')} | {two.get('placement', 'n/a')} | |")
print(row("load (s)", one.get("load_s"), two.get("load_s")))
print(row("load (GB/s)", one.get("load_gbps"), two.get("load_gbps"), overhead=False))
print(row("prefill 512 tokens + features (ms)", one.get("prefill_ms"), two.get("prefill_ms")))
print(row("draft step: 1 drafter call (ms)", one.get("draft_ms"), two.get("draft_ms")))
print(row("verify step: target on 16 tokens (ms)", one.get("verify_ms"), two.get("verify_ms")))
if "rollback_1_ms" in one:
    print(row("rollback to 1 committed token, beyond the verify (ms)", one.get("rollback_1_ms"), two.get("rollback_1_ms"),
              overhead=False))
print(row("end-to-end: prefill + new tokens, warm (ms)", one.get("e2e_ms"), two.get("e2e_ms"), "{:.0f}"))
print(row("end-to-end, first run of the process (ms)", one.get("e2e_cold_ms"), two.get("e2e_cold_ms"), "{:.0f}"))
print(row("loop time per step, warm (ms)", per_step(one), per_step(two)))
pk = lambda r, k: None if r.get(k) is None else r[k] / gib
print(row("peak GPU memory during the run (GiB)", pk(one, "peak_run_bytes"), pk(two, "peak_run_bytes"), overhead=False))
print(row("GPU memory after load (GiB)", pk(one, "mem_after_load_bytes"), pk(two, "mem_after_load_bytes"), overhead=False))
same_ids = one.get("output_ids") is not None and one.get("output_ids") == two.get("output_ids")
same_tau = one.get("acceptance_lengths") is not None and one.get("acceptance_lengths") == two.get("acceptance_lengths")
print()
print(f"new tokens: {len(one.get('output_ids', []))}; steps {one.get('steps')} / {two.get('steps')}; "
      f"tau {one.get('tau')} / {two.get('tau')}")
print(f"output ids identical: {'yes' if same_ids else 'NO'}; acceptance lengths identical: {'yes' if same_tau else 'NO'}")
