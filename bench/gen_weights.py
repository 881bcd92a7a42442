"""Writes random bf16 checkpoints for the benchmark (docs/PERFORMANCE.md), on the GPU:

  <dir>/target   Qwen3-8B shape: 36 layers, H 4096, 32/8 heads (head_dim 128), I 12288,
                 V 151936, untied LM head; sharded safetensors (~4 GB shards) + index
  <dir>/drafter  Qwen3-8B-DFlash-b16 shape: 5 layers, block 16, tapped [1, 9, 17, 25, 33]
  <dir>/prompt.json  512 random prompt token ids

Weights are N(0, 0.02) (o_proj/down_proj scaled by 1/sqrt(2 L), GPT-2 style, so the
residual stream stays bounded over 36 layers), norm weights 1 + N(0, 0.1). Deterministic
(seed 0). Nothing here is committed: the files are 18 GB.
usage: python3 bench/gen_weights.py DIR
"""
import json
import os
import sys
import time

import torch
from safetensors.torch import save_file

H, L, HQ, HKV, D, I, V = 4096, 36, 32, 8, 128, 12288, 151936
DRAFT_LAYERS, BLOCK, TAPPED, MASK_ID = 5, 16, [1, 9, 17, 25, 33], 151669
PROMPT_LEN = 512
dev = torch.device("cuda")
gen = torch.Generator(device=dev).manual_seed(0)


def randn(shape, std):
    return (torch.randn(shape, generator=gen, device=dev, dtype=torch.float32) * std).to(torch.bfloat16)


def norm_w(n):
    return (1.0 + 0.1 * torch.randn((n,), generator=gen, device=dev)).to(torch.bfloat16)


def layer_tensors(prefix, n_layers):
    out_std = 0.02 / (2 * n_layers) ** 0.5
    return {
        prefix + "input_layernorm.weight": lambda: norm_w(H),
        prefix + "post_attention_layernorm.weight": lambda: norm_w(H),
        prefix + "self_attn.q_proj.weight": lambda: randn((HQ * D, H), 0.02),
        prefix + "self_attn.k_proj.weight": lambda: randn((HKV * D, H), 0.02),
        prefix + "self_attn.v_proj.weight": lambda: randn((HKV * D, H), 0.02),
        prefix + "self_attn.o_proj.weight": lambda: randn((H, HQ * D), out_std),
        prefix + "self_attn.q_norm.weight": lambda: norm_w(D),
        prefix + "self_attn.k_norm.weight": lambda: norm_w(D),
        prefix + "mlp.gate_proj.weight": lambda: randn((I, H), 0.02),
        prefix + "mlp.up_proj.weight": lambda: randn((I, H), 0.02),
        prefix + "mlp.down_proj.weight": lambda: randn((H, I), out_std),
    }


def common_config(n_layers):
    return {
        "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
        "head_dim": D, "hidden_act": "silu", "hidden_size": H, "initializer_range": 0.02,
        "intermediate_size": I, "layer_types": ["full_attention"] * n_layers, "max_position_embeddings": 40960,
        "max_window_layers": n_layers, "model_type": "qwen3", "num_attention_heads": HQ,
        "num_hidden_layers": n_layers, "num_key_value_heads": HKV, "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "sliding_window": None,
        "tie_word_embeddings": False, "dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
        "vocab_size": V,
    }


def write_target(d):
    os.makedirs(d, exist_ok=True)
    makers = {"model.embed_tokens.weight": lambda: randn((V, H), 0.02)}
    for l in range(L):
        makers.update(layer_tensors(f"model.layers.{l}.", L))
    makers["model.norm.weight"] = lambda: norm_w(H)
    makers["lm_head.weight"] = lambda: randn((V, H), 0.02)
    shard, shard_bytes, shards, weight_map, total = {}, 0, [], {}, 0

    def flush():
        nonlocal shard, shard_bytes
        if shard:
            shards.append(shard)
            shard, shard_bytes = {}, 0

    for name, make in makers.items():
        t = make()
        shard[name] = t
        shard_bytes += t.numel() * 2
        total += t.numel() * 2
        if shard_bytes >= 4_000_000_000:
            flush()
    flush()
    n = len(shards)
    for i, s in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        save_file({k: v.cpu() for k, v in s.items()}, os.path.join(d, fname), metadata={"format": "pt"})
        for k in s:
            weight_map[k] = fname
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    cfg = common_config(L)
    cfg["architectures"] = ["Qwen3ForCausalLM"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    return total


def write_drafter(d):
    os.makedirs(d, exist_ok=True)
    t = {"fc.weight": randn((H, len(TAPPED) * H), 0.02 / len(TAPPED) ** 0.5),
         "hidden_norm.weight": norm_w(H), "norm.weight": norm_w(H)}
    for l in range(DRAFT_LAYERS):
        t.update({k: m() for k, m in layer_tensors(f"layers.{l}.", DRAFT_LAYERS).items()})
    save_file({k: v.cpu() for k, v in t.items()}, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = common_config(DRAFT_LAYERS)
    cfg.update({"architectures": ["DFlashDraftModel"], "block_size": BLOCK, "num_target_layers": L,
                "dflash_config": {"mask_token_id": MASK_ID, "target_layer_ids": TAPPED}})
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    return sum(v.numel() * 2 for v in t.values())


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    t0 = time.perf_counter()
    tb = write_target(os.path.join(root, "target"))
    db = write_drafter(os.path.join(root, "drafter"))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 151643, (PROMPT_LEN,), generator=g).tolist()
    with open(os.path.join(root, "prompt.json"), "w") as f:
        json.dump(ids, f)
    print(f"gen_weights: target {tb / 1e9:.2f} GB, drafter {db / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
