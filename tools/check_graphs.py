#!/usr/bin/env python3
"""Runs draftscope-cli with CUDA graphs off and on, on the dense and hybrid test targets,
and compares the runs: output ids and acceptance lengths must be identical (issue 16: "the
hybrid tests pass on the GPU machine with graphs on and off"; docs/ENGINE.md, "CUDA graphs").
With --baseline fused-off it compares instead the fused CUDA kernels (backend/src/kernels)
off (DRAFTSCOPE_FUSED_KERNELS=0) and on, both with graphs on: use --dtype bfloat16, the
kernels take bf16/fp16 only (docs/ENGINE.md, "Fused kernels").

    python3 tools/check_graphs.py --cli build-cuda/app/draftscope-cli [--device cuda] [--json out.json]
                                  [--dtype bfloat16] [--baseline graphs-off|fused-off]

Targets: the demo pair, and the tiny dense and hybrid fixtures (tests/data/models) with a
random drafter (tools/make_random_drafter.py, block 8). Each runs greedy and sampled at
temperature 30: at that temperature target and drafter are both near uniform, so the
rejection test accepts most drafts and the hybrid state commit (VerifyGraph::commit) runs
for many accepted lengths, not only the one token a random drafter gets greedily. The
"on" run must have replayed verify steps. Exit code 1 on any difference.
Standard library only.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "tests/data/models")
# (name, target dir, drafter dir or None for a random drafter)
CASES = [
    ("demo", os.path.join(ROOT, "resources/demo/target"), os.path.join(ROOT, "resources/demo/drafter")),
    ("tiny-llama3", os.path.join(MODELS, "tiny-llama3"), None),
    ("qwen3_5-hybrid", os.path.join(MODELS, "qwen3_5-tiny-causallm"), None),
]
PROMPTS = [[5, 17, 300, 42, 7, 99, 211, 3, 64, 128, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]]


def run(cli, target, drafter, ids, temperature, graphs, a, tmp, fused=True):
    out = os.path.join(tmp, "r.json")
    env = dict(os.environ, DRAFTSCOPE_FUSED_KERNELS="1" if fused else "0")
    p = subprocess.run([cli, "run", "--target", target, "--drafter", drafter, "--prompt-ids", ",".join(map(str, ids)),
                        "--max-new", str(a.max_new), "--ignore-eos", "--loop", "current", "--temperature",
                        str(temperature), "--seed", "7", "--device", a.device, "--dtype", a.dtype, "--cuda-graphs",
                        graphs, "--json", out, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=env)
    if p.returncode != 0:
        sys.exit(f"draftscope-cli run failed ({target}, graphs {graphs}):\n{p.stderr}")
    return json.load(open(out))["runs"][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--max-new", type=int, default=61)
    ap.add_argument("--json", help="write the comparison here")
    ap.add_argument("--baseline", choices=["graphs-off", "fused-off"], default="graphs-off",
                    help="what the graphs-on run with fused kernels is compared with")
    a = ap.parse_args()
    rows, failures = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, target, drafter in CASES:
            if drafter is None:
                drafter = os.path.join(tmp, name + "-drafter")
                subprocess.run([sys.executable, os.path.join(ROOT, "tools/make_random_drafter.py"), target, drafter,
                                "--block-size", "8", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
            for p, ids in enumerate(PROMPTS):
                for temperature in (0.0, 30.0):
                    if a.baseline == "graphs-off":
                        off = run(a.cli, target, drafter, ids, temperature, "off", a, tmp)
                    else:
                        off = run(a.cli, target, drafter, ids, temperature, "on", a, tmp, fused=False)
                    on = run(a.cli, target, drafter, ids, temperature, "on", a, tmp)
                    same = (on["output_ids"] == off["output_ids"] and
                            on["acceptance_lengths"] == off["acceptance_lengths"])
                    replayed = "replayed" in on.get("cuda_graphs", "")
                    lengths = collections.Counter(on["acceptance_lengths"])
                    ok = same and replayed
                    failures += not ok
                    rows.append({"target": name, "prompt": p, "temperature": temperature, "equal": same,
                                 "on": on.get("cuda_graphs", ""), "off": off.get("cuda_graphs", ""),
                                 "acceptance_lengths": dict(sorted(lengths.items()))})
                    print(f"{name:15s} p{p} T={temperature:<4} {'==' if same else '!='}  "
                          f"lengths {dict(sorted(lengths.items()))}  [{on.get('cuda_graphs', '')}]", flush=True)
    what = "CUDA graphs on and off" if a.baseline == "graphs-off" else "fused kernels on and off (graphs on)"
    print(f"{len(rows) - failures}/{len(rows)} runs identical with {what} ({a.device}, {a.dtype})")
    if a.json:
        json.dump({"device": a.device, "dtype": a.dtype, "baseline": a.baseline, "runs": rows}, open(a.json, "w"), indent=1)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
