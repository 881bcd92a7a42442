#!/usr/bin/env python3
"""Runs `draftscope-cli forward` on the tiny gpt-oss fixtures (tests/data/gptoss: bf16 and MXFP4
experts) and compares hidden states and logits with HF transformers' float32 goldens, as
tst_gptoss does on the CPU; for the GPU machine, which has no Qt to build the test suites.

    python3 tools/check_gptoss.py --cli build-cuda/app/draftscope-cli --device cuda [--dtype float32] [--json F]

Prints max abs difference over the golden's max abs per model and tensor; exit code 1 if one
exceeds 1e-4 (float32; for other dtypes the numbers are reported only).
Standard library only.
"""
import argparse
import array
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

import check_goldens  # tools/, beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests/data/gptoss")


def read_safetensors(path):
    """{name: array of F32 / I64 values, or raw bytes} (check_goldens.read_safetensors, decoded)."""
    codes = {"F32": "f", "I64": "q"}
    return {k: array.array(codes[dtype], raw) if dtype in codes else raw
            for k, (dtype, _shape, raw) in check_goldens.read_safetensors(path).items()}


def unpack(src, dst):
    """Copies src to dst with every *.xz file decompressed."""
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        s = os.path.join(src, f)
        if f.endswith(".xz"):
            with lzma.open(s) as a, open(os.path.join(dst, f[:-3]), "wb") as b:
                b.write(a.read())
        else:
            shutil.copyfile(s, os.path.join(dst, f))


def rel_err(x, golden):
    scale = max(abs(v) for v in golden) or 1.0
    return max(abs(a - b) for a, b in zip(x, golden)) / scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    with lzma.open(os.path.join(DATA, "goldens.safetensors.xz")) as f, open(os.path.join(tmp, "g.safetensors"), "wb") as g:
        g.write(f.read())
    goldens = read_safetensors(os.path.join(tmp, "g.safetensors"))
    rows, failed = [], False
    for m in ("tiny-gpt-oss", "tiny-gpt-oss-mxfp4"):
        model = os.path.join(tmp, m)
        unpack(os.path.join(DATA, m), model)
        ids = ",".join(str(i) for i in goldens[m + ".input_ids"])
        out = os.path.join(tmp, m + ".out.safetensors")
        subprocess.run([a.cli, "forward", "--model", model, "--prompt-ids", ids, "--out", out, "--device", a.device,
                        "--dtype", a.dtype], check=True, stdout=subprocess.DEVNULL)
        got = read_safetensors(out)
        row = {"model": m, "device": a.device, "dtype": a.dtype,
               "hidden_states": rel_err(got["hidden_states"], goldens[m + ".hidden_states"]),
               "logits": rel_err(got["logits"], goldens[m + ".logits"])}
        ok = a.dtype != "float32" or max(row["hidden_states"], row["logits"]) <= 1e-4
        failed |= not ok
        rows.append(row)
        print(f"{m} {a.device} {a.dtype}: hidden {row['hidden_states']:.3g}, logits {row['logits']:.3g}"
              + ("" if ok else "  FAIL"))
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    shutil.rmtree(tmp)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
