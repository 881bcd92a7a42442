"""Writes a random gpt-oss-20b-shaped checkpoint with MXFP4 experts, and a DFlash drafter for
it, for the gpt-oss benchmark (docs/PERFORMANCE.md, "gpt-oss target"), on the GPU:

  <dir>/target   GptOssForCausalLM, openai/gpt-oss-20b's shape: 24 layers alternating
                 sliding_attention (window 128) / full_attention, H 2880, 64 query / 8 KV heads
                 of 64, attention sinks, YaRN (factor 32 over 4096), 32 experts top-4 of width
                 2880 stored as the release stores them (MXFP4 `*_blocks` / `*_scales`, biases
                 bf16, `quantization_config.quant_method: mxfp4`), V 201088, untied head.
                 ~13.8 GB on disk.
  <dir>/drafter  a DFlash drafter for it (this shape is an assumption, not z-lab's release:
                 5 Qwen3 layers, H 2880, 32 / 8 heads of 64, I 7680, block 16, mask V - 1,
                 target_layer_ids [1, 6, 11, 16, 21] = the DFlash fallback rule for 24 layers).
  <dir>/prompt.json  512 random prompt token ids

Dense weights N(0, 0.02) (o_proj and the drafter's down_proj scaled by 1/sqrt(2 L)), norms
1 + N(0, 0.1), sinks N(0, 1). Expert codes uniform random bytes; scales 120 for gate_up (values
of RMS about 0.023) and 118 for down. Deterministic (seed 0). Nothing here is committed.
usage: python3 bench/gen_weights_gptoss.py DIR
"""
import json
import os
import sys
import time

import torch
from safetensors.torch import save_file

L, H, HQ, HKV, D, E, K, I, V, WINDOW = 24, 2880, 64, 8, 64, 32, 4, 2880, 201088, 128
DRAFT_LAYERS, DHQ, DHKV, DI, BLOCK = 5, 32, 8, 7680, 16
TAPPED = [1, 6, 11, 16, 21]
PROMPT_LEN = 512
dev = torch.device("cuda")
gen = torch.Generator(device=dev).manual_seed(0)


def randn(shape, std, mean=0.0):
    return (mean + torch.randn(shape, generator=gen, device=dev, dtype=torch.float32) * std).to(torch.bfloat16)


def codes(shape):
    return torch.randint(0, 256, shape, generator=gen, device=dev, dtype=torch.int32).to(torch.uint8)


def target_layer(l):
    p, a, m = f"model.layers.{l}.", f"model.layers.{l}.self_attn.", f"model.layers.{l}.mlp."
    out_std = 0.02 / (2 * L) ** 0.5
    return {
        p + "input_layernorm.weight": lambda: randn((H,), 0.1, 1.0),
        p + "post_attention_layernorm.weight": lambda: randn((H,), 0.1, 1.0),
        a + "q_proj.weight": lambda: randn((HQ * D, H), 0.02), a + "q_proj.bias": lambda: randn((HQ * D,), 0.02),
        a + "k_proj.weight": lambda: randn((HKV * D, H), 0.02), a + "k_proj.bias": lambda: randn((HKV * D,), 0.02),
        a + "v_proj.weight": lambda: randn((HKV * D, H), 0.02), a + "v_proj.bias": lambda: randn((HKV * D,), 0.02),
        a + "o_proj.weight": lambda: randn((H, HQ * D), out_std), a + "o_proj.bias": lambda: randn((H,), 0.02),
        a + "sinks": lambda: randn((HQ,), 1.0),
        m + "router.weight": lambda: randn((E, H), 0.02), m + "router.bias": lambda: randn((E,), 0.02),
        m + "experts.gate_up_proj_blocks": lambda: codes((E, 2 * I, H // 32, 16)),
        m + "experts.gate_up_proj_scales": lambda: torch.full((E, 2 * I, H // 32), 120, dtype=torch.uint8, device=dev),
        m + "experts.gate_up_proj_bias": lambda: randn((E, 2 * I), 0.02),
        m + "experts.down_proj_blocks": lambda: codes((E, H, I // 32, 16)),
        m + "experts.down_proj_scales": lambda: torch.full((E, H, I // 32), 118, dtype=torch.uint8, device=dev),
        m + "experts.down_proj_bias": lambda: randn((E, H), 0.02),
    }


def write_sharded(d, makers, config):
    os.makedirs(d, exist_ok=True)
    shards, shard, size, total, weight_map = [], {}, 0, 0, {}
    for name, make in makers.items():
        t = make()
        shard[name] = t
        n = t.numel() * t.element_size()
        size += n
        total += n
        if size >= 4_000_000_000:
            shards.append(shard)
            shard, size = {}, 0
    if shard:
        shards.append(shard)
    for i, s in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: v.cpu() for k, v in s.items()}, os.path.join(d, fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in s})
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(d, "model.safetensors.index.json"), "w"), indent=1)
    json.dump(config, open(os.path.join(d, "config.json"), "w"), indent=1)
    return total


def target_config():
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
        "hidden_size": H, "intermediate_size": I, "num_hidden_layers": L, "num_attention_heads": HQ,
        "num_key_value_heads": HKV, "head_dim": D, "vocab_size": V, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5, "sliding_window": WINDOW, "num_local_experts": E, "num_experts_per_tok": K,
        "layer_types": ["sliding_attention" if l % 2 == 0 else "full_attention" for l in range(L)],
        "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                            "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096},
        "tie_word_embeddings": False, "hidden_act": "silu", "swiglu_limit": 7.0, "bos_token_id": 199998,
        "eos_token_id": 200002, "pad_token_id": 199999, "dtype": "bfloat16",
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]},
    }


def drafter_layer(p):
    out_std = 0.02 / (2 * DRAFT_LAYERS) ** 0.5
    return {
        p + "input_layernorm.weight": randn((H,), 0.1, 1.0), p + "post_attention_layernorm.weight": randn((H,), 0.1, 1.0),
        p + "self_attn.q_proj.weight": randn((DHQ * D, H), 0.02), p + "self_attn.k_proj.weight": randn((DHKV * D, H), 0.02),
        p + "self_attn.v_proj.weight": randn((DHKV * D, H), 0.02), p + "self_attn.o_proj.weight": randn((H, DHQ * D), out_std),
        p + "self_attn.q_norm.weight": randn((D,), 0.1, 1.0), p + "self_attn.k_norm.weight": randn((D,), 0.1, 1.0),
        p + "mlp.gate_proj.weight": randn((DI, H), 0.02), p + "mlp.up_proj.weight": randn((DI, H), 0.02),
        p + "mlp.down_proj.weight": randn((H, DI), out_std),
    }


def write_drafter(d):
    os.makedirs(d, exist_ok=True)
    t = {"fc.weight": randn((H, len(TAPPED) * H), 0.02 / len(TAPPED) ** 0.5), "hidden_norm.weight": randn((H,), 0.1, 1.0),
         "norm.weight": randn((H,), 0.1, 1.0)}
    for l in range(DRAFT_LAYERS):
        t.update(drafter_layer(f"layers.{l}."))
    save_file({k: v.cpu() for k, v in t.items()}, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "attention_bias": False, "head_dim": D,
           "hidden_act": "silu", "hidden_size": H, "intermediate_size": DI, "num_hidden_layers": DRAFT_LAYERS,
           "num_attention_heads": DHQ, "num_key_value_heads": DHKV, "rms_norm_eps": 1e-6, "vocab_size": V,
           "max_position_embeddings": 131072, "rope_parameters": {"rope_theta": 150000.0, "rope_type": "default"},
           "tie_word_embeddings": False, "dtype": "bfloat16", "block_size": BLOCK, "num_target_layers": L,
           "dflash_config": {"mask_token_id": V - 1, "target_layer_ids": TAPPED}}
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=1)
    return sum(v.numel() * 2 for v in t.values())


def main():
    root = sys.argv[1]
    t0 = time.perf_counter()
    makers = {"model.embed_tokens.weight": lambda: randn((V, H), 0.02)}
    for l in range(L):
        makers.update(target_layer(l))
    makers["model.norm.weight"] = lambda: randn((H,), 0.1, 1.0)
    makers["lm_head.weight"] = lambda: randn((V, H), 0.02)
    tb = write_sharded(os.path.join(root, "target"), makers, target_config())
    db = write_drafter(os.path.join(root, "drafter"))
    ids = torch.randint(0, 199998, (PROMPT_LEN,), generator=torch.Generator().manual_seed(1)).tolist()
    json.dump(ids, open(os.path.join(root, "prompt.json"), "w"))
    print(f"gen_weights_gptoss: target {tb / 1e9:.2f} GB, drafter {db / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
