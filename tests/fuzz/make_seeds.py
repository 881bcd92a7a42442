#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets (tests/fuzz) from the test fixtures.

Usage: make_seeds.py OUTPUT_DIR

Writes OUTPUT_DIR/<target>/ for every fuzz target: the small files committed in
tests/fuzz/seeds/<target>/ plus seeds derived from tests/data and resources/ (configs,
prompt sets, the demo tokenizer, data.pkl records of the .pt fixtures, shrunken copies of
the safetensors fixtures, shard indexes made from their tensor names). Only the standard
library is used; nothing large is committed (docs/RELIABILITY.md "Fuzzing").
"""
import json
import pathlib
import shutil
import struct
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
COMMITTED = ROOT / "tests" / "fuzz" / "seeds"
TARGETS = ["safetensors", "shard_index", "config", "tokenizer_json", "tokenizer_encode",
           "pt_pickle", "pt_archive", "results_file", "prompt_set"]


def read_safetensors(path):
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_safetensors(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


SIZES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def shrink_safetensors(path, max_tensors=12):
    """The fixture's metadata and first tensors (names, dtypes, ranks kept), each cut to at
    most 2 elements per dimension, with their real leading bytes."""
    header, data = read_safetensors(path)
    out, blob = {}, b""
    if "__metadata__" in header:
        out["__metadata__"] = header["__metadata__"]
    names = [k for k in header if k != "__metadata__"][:max_tensors]
    for name in names:
        e = header[name]
        shape = [min(d, 2) for d in e["shape"]]
        numel = 1
        for d in shape:
            numel *= d
        size = numel * SIZES[e["dtype"]]
        begin = e["data_offsets"][0]
        out[name] = {"dtype": e["dtype"], "shape": shape, "data_offsets": [len(blob), len(blob) + size]}
        blob += data[begin:begin + size]
    return write_safetensors(out, blob), names


def main():
    out = pathlib.Path(sys.argv[1])
    if out.exists():
        shutil.rmtree(out)
    for t in TARGETS:
        (out / t).mkdir(parents=True)
        src = COMMITTED / t
        if src.is_dir():
            for f in sorted(src.iterdir()):
                shutil.copy(f, out / t / f.name)

    fixtures = sorted(DATA.glob("*.safetensors")) + sorted(DATA.glob("models/*/model.safetensors"))
    for i, path in enumerate(fixtures):
        small, names = shrink_safetensors(path)
        label = path.parent.name if path.name == "model.safetensors" else path.stem
        (out / "safetensors" / f"{label}.safetensors").write_bytes(small)
        if path.name == "model.safetensors":
            half = len(names) // 2
            index = {"metadata": {"total_size": len(small)},
                     "weight_map": {n: f"model-0000{1 if k < half else 2}-of-00002.safetensors"
                                    for k, n in enumerate(names)}}
            (out / "shard_index" / f"{label}.json").write_text(json.dumps(index, indent=2))

    configs = sorted(DATA.glob("models/*/config.json")) + [DATA / "pt" / "config.json"] + \
        sorted((ROOT / "resources" / "demo").glob("*/config.json"))
    for path in configs:
        (out / "config" / f"{path.parent.name}.json").write_bytes(path.read_bytes())

    demo_tok = ROOT / "resources" / "demo" / "target" / "tokenizer.json"
    shutil.copy(demo_tok, out / "tokenizer_json" / "demo.json")

    for path in sorted((DATA / "pt").glob("*.pt")):
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                for name in z.namelist():
                    if name.endswith("/data.pkl"):
                        (out / "pt_pickle" / f"{path.stem}.pkl").write_bytes(z.read(name))
            if path.stat().st_size <= 64 * 1024:
                shutil.copy(path, out / "pt_archive" / path.name)
        else:  # legacy (pre-1.6) format: pickles back to back; the unpickler sees the first
            (out / "pt_pickle" / f"{path.stem}.pkl").write_bytes(path.read_bytes())

    for path in sorted((ROOT / "resources" / "prompts").glob("*.jsonl")):
        shutil.copy(path, out / "prompt_set" / path.name)
        for k, line in enumerate(path.read_text().splitlines()[:8]):
            try:
                text = json.loads(line).get("prompt")
            except (ValueError, AttributeError):
                continue
            if isinstance(text, str):
                (out / "tokenizer_encode" / f"{path.stem}-{k}.txt").write_text(text)

    for t in TARGETS:
        print(f"{t}: {len(list((out / t).iterdir()))} seeds")


if __name__ == "__main__":
    main()
