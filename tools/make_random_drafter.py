#!/usr/bin/env python3
"""Writes a tiny DFlash drafter with random weights for a given target, to exercise the
loop on targets that have no trained drafter (e.g. the tiny Qwen3.5 hybrid fixtures).
Standard library only (no torch or numpy needed).

    python3 tools/make_random_drafter.py TARGET_DIR OUT_DIR [--layers 1] [--block-size 8]
        [--target-layer-ids 0,2] [--mask-token-id N] [--seed 0]

The drafter copies the target's hidden size and vocabulary; its acceptance will be near 1
(random weights), but every code path of the loop runs, including hybrid state rollback.
"""
import argparse
import json
import os
import random
import struct


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--block-size", type=int, default=8)
    ap.add_argument("--target-layer-ids", default="")
    ap.add_argument("--mask-token-id", type=int, default=-1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.target, "config.json")))
    cfg = cfg.get("text_config", cfg)
    H, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    ids = [int(x) for x in a.target_layer_ids.split(",")] if a.target_layer_ids else [0, L - 2]
    heads, kv, hd, inter = 4, 2, H // 4, 2 * H
    rng = random.Random(a.seed)
    tensors = {}

    def rand(name, shape, scale):
        n = 1
        for d in shape:
            n *= d
        tensors[name] = (shape, [rng.gauss(0.0, scale) for _ in range(n)])

    def ones(name, n):
        tensors[name] = ([n], [1.0] * n)

    rand("fc.weight", [H, len(ids) * H], 0.02)
    ones("hidden_norm.weight", H)
    ones("norm.weight", H)
    for l in range(a.layers):
        p = f"layers.{l}."
        ones(p + "input_layernorm.weight", H)
        ones(p + "post_attention_layernorm.weight", H)
        rand(p + "self_attn.q_proj.weight", [heads * hd, H], 0.02)
        rand(p + "self_attn.k_proj.weight", [kv * hd, H], 0.02)
        rand(p + "self_attn.v_proj.weight", [kv * hd, H], 0.02)
        rand(p + "self_attn.o_proj.weight", [H, heads * hd], 0.02)
        ones(p + "self_attn.q_norm.weight", hd)
        ones(p + "self_attn.k_norm.weight", hd)
        rand(p + "mlp.gate_proj.weight", [inter, H], 0.02)
        rand(p + "mlp.up_proj.weight", [inter, H], 0.02)
        rand(p + "mlp.down_proj.weight", [H, inter], 0.02)

    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    config = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": H,
        "intermediate_size": inter, "num_hidden_layers": a.layers, "num_attention_heads": heads,
        "num_key_value_heads": kv, "head_dim": hd, "vocab_size": V, "rms_norm_eps": 1e-6,
        "max_position_embeddings": cfg.get("max_position_embeddings", 4096), "hidden_act": "silu",
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "dtype": "float32",
        "block_size": a.block_size, "num_target_layers": L,
        "dflash_config": {"mask_token_id": a.mask_token_id if a.mask_token_id >= 0 else V - 1,
                          "target_layer_ids": ids},
    }
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    print(f"wrote {a.out}: {a.layers} layer(s), hidden {H}, block {a.block_size}, tapped layers {ids}")


if __name__ == "__main__":
    main()
