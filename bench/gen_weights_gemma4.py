"""Writes a random Gemma-4-shaped dense target and a DFlash drafter for it, for the Gemma 4
benchmark (docs/PERFORMANCE.md, "Gemma 4 target"), on the GPU:

  <dir>/target   Gemma4ForCausalLM made by HF transformers itself (its own initialisation,
                 bf16, `save_pretrained`), of an assumed gemma-4-31B-like layer shape (the
                 release's config was not at hand here): H 5376, 32 query heads of 256 on
                 sliding layers and of 512 on full ones, 16 kv heads (sliding) / 4 with values
                 = keys (`attention_k_eq_v`, full), I 21504, V 262144, window 1024, five
                 sliding layers to one full, proportional rotary 0.25 on the full layers,
                 final logit soft-capping 30, tied head, no per-layer inputs or KV sharing;
                 GEMMA4_LAYERS layers (default 30, half the 31B depth, so that target, build
                 and scratch fit the GPU machine's disk).
  <dir>/drafter  a DFlash drafter for it (an assumption too: 5 Qwen3 layers, H 5376, 32 / 8
                 heads of 128, I 14336, block 16, mask V - 1, taps spread over the depth,
                 `input_embedding_scale` sqrt(H) as DFLASH.md asks for Gemma targets).
  <dir>/prompt.json  512 random prompt token ids
Deterministic (seed 0). Nothing here is committed.
usage: python3 bench/gen_weights_gemma4.py DIR
"""
import json
import os
import sys
import time

import torch
import transformers
from safetensors.torch import save_file

L = int(os.environ.get("GEMMA4_LAYERS", "30"))
H, HQ, HKV, GKV, D, GD, I, V, WINDOW = 5376, 32, 16, 4, 256, 512, 21504, 262144, 1024
DL, DHQ, DHKV, DD, DI, BLOCK = 5, 32, 8, 128, 14336, 16
PROMPT_LEN = 512


def target(root):
    types = ["full_attention" if (l + 1) % 6 == 0 else "sliding_attention" for l in range(L)]
    types[-1] = "full_attention"
    cfg = transformers.Gemma4TextConfig(
        vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=L, num_attention_heads=HQ,
        num_key_value_heads=HKV, head_dim=D, global_head_dim=GD, attention_k_eq_v=True,
        num_global_key_value_heads=GKV, sliding_window=WINDOW, layer_types=types, max_position_embeddings=131072,
        final_logit_softcapping=30.0, tie_word_embeddings=True, hidden_size_per_layer_input=0,
        num_kv_shared_layers=0, enable_moe_block=False, bos_token_id=2, eos_token_id=1, pad_token_id=0,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1000000.0}})
    cfg.architectures = ["Gemma4ForCausalLM"]
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.Gemma4ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(os.path.join(root, "target"), safe_serialization=True, max_shard_size="5GB")
    n = sum(p.numel() * p.element_size() for p in model.parameters())
    del model
    torch.cuda.empty_cache()
    return n


def drafter(root):
    d = os.path.join(root, "drafter")
    os.makedirs(d, exist_ok=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    taps = sorted({max(1, round(1 + i * (L - 3) / (DL - 1))) for i in range(DL)})

    def randn(shape, std, mean=0.0):
        return (mean + torch.randn(shape, generator=g, device="cuda") * std).to(torch.bfloat16).cpu()
    t = {"fc.weight": randn((H, len(taps) * H), 0.02 / len(taps) ** 0.5), "hidden_norm.weight": randn((H,), 0.1, 1.0),
         "norm.weight": randn((H,), 0.1, 1.0)}
    for l in range(DL):
        p = f"layers.{l}."
        t.update({p + "input_layernorm.weight": randn((H,), 0.1, 1.0), p + "post_attention_layernorm.weight": randn((H,), 0.1, 1.0),
                  p + "self_attn.q_proj.weight": randn((DHQ * DD, H), 0.02), p + "self_attn.k_proj.weight": randn((DHKV * DD, H), 0.02),
                  p + "self_attn.v_proj.weight": randn((DHKV * DD, H), 0.02),
                  p + "self_attn.o_proj.weight": randn((H, DHQ * DD), 0.02 / (2 * DL) ** 0.5),
                  p + "self_attn.q_norm.weight": randn((DD,), 0.1, 1.0), p + "self_attn.k_norm.weight": randn((DD,), 0.1, 1.0),
                  p + "mlp.gate_proj.weight": randn((DI, H), 0.02), p + "mlp.up_proj.weight": randn((DI, H), 0.02),
                  p + "mlp.down_proj.weight": randn((H, DI), 0.02 / (2 * DL) ** 0.5)})
    save_file(t, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "attention_bias": False, "head_dim": DD,
           "hidden_act": "silu", "hidden_size": H, "intermediate_size": DI, "num_hidden_layers": DL,
           "num_attention_heads": DHQ, "num_key_value_heads": DHKV, "rms_norm_eps": 1e-6, "vocab_size": V,
           "max_position_embeddings": 131072, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
           "tie_word_embeddings": False, "dtype": "bfloat16", "block_size": BLOCK, "num_target_layers": L,
           "dflash_config": {"mask_token_id": V - 1, "target_layer_ids": taps, "input_embedding_scale": H ** 0.5}}
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=1)
    return sum(v.numel() * 2 for v in t.values())


def main():
    root = sys.argv[1]
    t0 = time.perf_counter()
    tb = target(root)
    db = drafter(root)
    ids = torch.randint(3, V - 2, (PROMPT_LEN,), generator=torch.Generator().manual_seed(1)).tolist()
    json.dump(ids, open(os.path.join(root, "prompt.json"), "w"))
    print(f"gen_weights_gemma4: {L} layers, target {tb / 1e9:.2f} GB, drafter {db / 1e9:.2f} GB "
          f"in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
