#!/usr/bin/env python3
"""Runs draftscope-cli on the fixture prompts 0-3 with the fixture drafters and compares
output ids and acceptance lengths with the official DFlash goldens.

    python3 tools/check_goldens.py --cli build/app/draftscope-cli [--device cuda] [--dtype bfloat16] [--cuda-graphs on]
    python3 tools/check_goldens.py --cli ... --variants   # drafter layouts, both loop revisions
    python3 tools/check_goldens.py --cli ... --dflash2    # DFlash2 (tests/data/dflash2_goldens.json)
    python3 tools/check_goldens.py --cli ... --dspark     # DSpark (tests/data/dspark/goldens.json.xz)

Without --variants: the April-2026 loop's goldens (tests/data/goldens.json) of drafter-good,
-anchor-leak and -label-shift. With --variants: tests/data/variant_goldens.json, i.e. the
drafters with sliding-window / causal / YaRN layouts and drafter-good under the current loop
(`current`, and `current_eos` with the eos stop token) and the April loop (`2026-04`).
With --dflash2: tests/data/dflash2_goldens.json, the DFlash2 demo drafter under the current
loop, and each step's drafted block against the reference's proposals. With --dspark:
tests/data/dspark, the demo drafter written as a speculators DSpark checkpoint (as tst_dspark
writes it) in both layouts (`anchor`, `shifted`), and each step's drafted block.

Prints one line per (drafter, prompt) and a summary; exit code 1 if any run differs
(for bfloat16 a difference is expected and reported, not a failure, with --report-only).
Standard library only, so it runs on machines without Qt or numpy.
"""
import argparse
import json
import lzma
import os
import struct
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unpacked(rel):
    """A fixture folder of tests/data whose files may be xz-compressed (FIXTURES.md), with every
    *.xz unpacked into a temporary copy (as the CMake build unpacks them for the suites)."""
    src = os.path.join(ROOT, rel)
    if not any(n.endswith(".xz") for n in os.listdir(src)):
        return src
    dst = os.path.join(tempfile.gettempdir(), "draftscope-fixtures", rel)
    os.makedirs(dst, exist_ok=True)
    for n in os.listdir(src):
        if n.endswith(".xz"):
            out = os.path.join(dst, n[:-3])
            if not os.path.exists(out):
                with lzma.open(os.path.join(src, n)) as f, open(out + ".part", "wb") as g:
                    shutil.copyfileobj(f, g)
                os.replace(out + ".part", out)
        else:
            shutil.copy(os.path.join(src, n), os.path.join(dst, n))
    return dst


DRAFTERS = {
    "drafter-good": os.path.join(ROOT, "resources/demo/drafter"),
    "drafter-anchor-leak": unpacked("tests/data/models/drafter-anchor-leak"),
    "drafter-label-shift": unpacked("tests/data/models/drafter-label-shift"),
}
VARIANT_DRAFTERS = {
    "drafter-swa": unpacked("tests/data/models/drafter-swa"),
    "drafter-modelopt-swa": unpacked("tests/data/models/drafter-modelopt-swa"),
    "drafter-yarn": unpacked("tests/data/models/drafter-yarn"),
    "drafter-good": os.path.join(ROOT, "resources/demo/drafter"),
}
# golden section -> (--loop value, stop at eos)
VARIANT_SECTIONS = {"current": ("current", False), "current_eos": ("current", True), "2026-04": ("2026-04", False)}


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} of a safetensors file (standard library only)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for k in sorted(tensors):
        dtype, shape, raw = tensors[k]
        header[k] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for k in sorted(tensors):
            f.write(tensors[k][2])


def write_dspark(out, anchor_drafts):
    """The demo drafter as a speculators DSpark checkpoint with tests/data/dspark's heads, as
    tst_dspark writes it (tests/speculators_support.h)."""
    os.makedirs(out, exist_ok=True)
    z = json.load(open(os.path.join(ROOT, "resources/demo/drafter/config.json")))
    body = {k: z[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                              "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_parameters", "vocab_size",
                              "max_position_embeddings", "layer_types")}
    body["model_type"] = "qwen3"
    dc = z["dflash_config"]
    config = {"speculators_model_type": "dspark", "architectures": ["DSparkSpeculator"], "transformer_layer_config": body,
              "block_size": z["block_size"], "mask_token_id": dc["mask_token_id"],
              "aux_hidden_state_layer_ids": [t + 1 for t in dc["target_layer_ids"]], "draft_vocab_size": z["vocab_size"],
              "sample_from_anchor": anchor_drafts, "markov_rank": 16, "markov_head_type": "vanilla",
              "enable_confidence_head": True, "confidence_head_with_markov": True}
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)
    tensors = read_safetensors(os.path.join(ROOT, "resources/demo/drafter/model.safetensors"))
    target = read_safetensors(os.path.join(ROOT, "resources/demo/target/model.safetensors"))
    tensors["embed_tokens.weight"] = target["model.embed_tokens.weight"]
    tensors["lm_head.weight"] = target["lm_head.weight"]
    tensors.update(read_safetensors(os.path.join(ROOT, "tests/data/dspark/heads.safetensors")))
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--cuda-graphs", help="passed to draftscope-cli run (auto, on or off); default: the CLI's")
    ap.add_argument("--json", help="write the comparison here")
    ap.add_argument("--variants", action="store_true",
                    help="check tests/data/variant_goldens.json (drafter layouts, current and April loops)")
    ap.add_argument("--dflash2", action="store_true",
                    help="check tests/data/dflash2_goldens.json (DFlash2 demo drafter, current loop)")
    ap.add_argument("--dspark", action="store_true",
                    help="check tests/data/dspark/goldens.json.xz (DSpark demo drafter, both layouts, current loop)")
    a = ap.parse_args()
    tmpdir = tempfile.TemporaryDirectory()
    if a.dspark:
        goldens = json.loads(lzma.open(os.path.join(ROOT, "tests/data/dspark/goldens.json.xz")).read())
        goldens["prompt_ids"] = json.load(open(os.path.join(ROOT, "tests/data/goldens.json")))["prompt_ids"]
        cases = [(layout, write_dspark(os.path.join(tmpdir.name, layout), layout == "anchor"), "generate", "current",
                  False, goldens["generate"]) for layout in ("anchor", "shifted")]
    elif a.dflash2:
        goldens = json.load(open(os.path.join(ROOT, "tests/data/dflash2_goldens.json")))
        goldens["prompt_ids"] = json.load(open(os.path.join(ROOT, "tests/data/goldens.json")))["prompt_ids"]
        # The demo DFlash2 drafter's second shard is the demo drafter's file (its .from names it).
        drafter = os.path.join(tmpdir.name, "dflash2-demo")
        shutil.copytree(os.path.join(ROOT, "tests/data/models/dflash2-demo"), drafter)
        for f in os.listdir(drafter):
            if f.endswith(".from"):
                origin = open(os.path.join(drafter, f)).read().strip()
                shutil.copyfile(os.path.join(ROOT, origin), os.path.join(drafter, f[:-len(".from")]))
        cases = [("dflash2-demo", drafter, "generate", "current", False, goldens["generate"])]
    elif a.variants:
        goldens = json.load(open(os.path.join(ROOT, "tests/data/variant_goldens.json")))
        cases = [(name, path, section, loop, eos, goldens[section])
                 for section, (loop, eos) in VARIANT_SECTIONS.items()
                 for name, path in VARIANT_DRAFTERS.items()]
    else:
        goldens = json.load(open(os.path.join(ROOT, "tests/data/goldens.json")))
        cases = [(name, path, "dflash_generate", "2026-04", False, goldens["dflash_generate"])
                 for name, path in DRAFTERS.items()]
    rows, failures = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, section, loop, eos, table in cases:
            for i in range(4):
                ids = ",".join(map(str, goldens["prompt_ids"][str(i)]))
                out = os.path.join(tmp, "r.json")
                subprocess.run([a.cli, "run", "--target", os.path.join(ROOT, "resources/demo/target"),
                                "--drafter", path, "--prompt-ids", ids, "--max-new", "96", "--loop", loop]
                               + ([] if eos else ["--ignore-eos"])
                               + ["--device", a.device, "--dtype", a.dtype, "--json", out, "--quiet"]
                               + (["--cuda-graphs", a.cuda_graphs] if a.cuda_graphs else []),
                               check=True, stdout=subprocess.DEVNULL)
                run = json.load(open(out))["runs"][0]
                g = table[f"{name}.p{i}"]
                same_ids = run["output_ids"] == g["output_ids"]
                same_len = run["acceptance_lengths"] == g["acceptance_lengths"]
                first_diff = next((k for k, (x, y) in enumerate(zip(run["output_ids"], g["output_ids"])) if x != y), None)
                g_tau = sum(g["acceptance_lengths"]) / len(g["acceptance_lengths"])
                rows.append({"drafter": name, "section": section, "prompt": i, "output_ids_equal": same_ids,
                             "acceptance_lengths_equal": same_len, "tau": run["tau"], "golden_tau": g_tau,
                             "first_differing_token": first_diff, "decode_ms": run["timing_ms"]["decode"],
                             "cuda_graphs": run.get("cuda_graphs", "")})
                same_steps = True
                if "steps" in g:  # DFlash2 / DSpark: the selector's or the walk's block at every step
                    key = "proposals" if "proposals" in g["steps"][0] else "drafted"
                    same_steps = [st["drafted"] for st in run.get("steps", [])] == [st[key] for st in g["steps"]]
                    rows[-1]["proposals_equal"] = same_steps
                    same_len = same_len and same_steps
                failures += not (same_ids and same_len)
                print(f"{name:20s} {section:11s} p{i}  ids {'==' if same_ids else '!='}  lengths {'==' if same_len else '!='}"
                      f"  tau {run['tau']:.3f} (golden {g_tau:.3f})"
                      + ("" if first_diff is None else f"  first differing output token at {first_diff}")
                      + (f"  [{run['cuda_graphs']}]" if "replayed" in run.get("cuda_graphs", "") else ""),
                      flush=True)
    print(f"{len(rows) - failures}/{len(rows)} runs equal to the goldens ({a.device}, {a.dtype})")
    if a.json:
        json.dump({"device": a.device, "dtype": a.dtype, "runs": rows}, open(a.json, "w"), indent=1)
    return 0 if failures == 0 or a.report_only else 1


if __name__ == "__main__":
    sys.exit(main())
