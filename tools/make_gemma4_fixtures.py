#!/usr/bin/env python3
"""Makes tiny Gemma 4 text targets and their goldens with HF transformers, on the GPU machine
(the only one with transformers). Random weights (seeded), saved in bf16; goldens computed on
CPU in float32 by HF's own Gemma4ForCausalLM (eager attention, eager experts) from the saved
checkpoints.

    python3 tools/make_gemma4_fixtures.py OUTDIR  -> OUTDIR/models/<name>, OUTDIR/gemma4_goldens.safetensors

Models (vocabulary 512, hidden 64, 6 layers: sliding, sliding, full, sliding, sliding, full;
window 8; 4 query heads of 16 on sliding layers and of 32 (global_head_dim) on full layers;
rope_parameters HF's defaults: sliding default theta 1e4, full proportional 0.25 theta 1e6;
final_logit_softcapping 30; tied head):
  tiny-gemma4      dense MLPs; attention_k_eq_v with 1 global kv head; per-layer inputs of 8;
                   the last 2 layers share keys/values (num_kv_shared_layers 2) with a
                   double-wide MLP
  tiny-gemma4-moe  the parallel MoE block (8 experts, top-2, width 32) beside dense MLPs; 2 kv
                   heads everywhere; no per-layer inputs, no KV sharing
Every norm weight, layer_scalar, router scale and per-expert scale is perturbed so that each
piece changes the output.
Goldens per model M (the protocol of tools/make_moe_fixtures.py):
  M.input_ids [40], M.hidden_states [L+1,40,H], M.logits [40,V]      prefill without cache
  M.extra_ids [9]: 3 single-token steps then one 6-token block on the prefill's cache:
  M.decode_logits [3,V], M.verify_logits [6,V]
  M.greedy_ids [12 + 24]: HF generate(do_sample=False) from the first 12 input ids
  tiny-gemma4-moe.router_top [L,40,2]: the experts each prefill token chose per layer
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

from make_moe_fixtures import step_goldens  # tools/, beside this script: the shared protocol

V = 512
TYPES = ["sliding_attention", "sliding_attention", "full_attention"] * 2


def config(moe):
    kw = dict(vocab_size=V, hidden_size=64, intermediate_size=64, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, global_head_dim=32, max_position_embeddings=512, rms_norm_eps=1e-6,
              sliding_window=8, layer_types=TYPES, final_logit_softcapping=30.0, tie_word_embeddings=True,
              bos_token_id=2, eos_token_id=1, pad_token_id=0, hidden_activation="gelu_pytorch_tanh",
              rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                               "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                  "rope_theta": 1000000.0}})
    if moe:
        kw.update(enable_moe_block=True, num_experts=8, top_k_experts=2, moe_intermediate_size=32,
                  hidden_size_per_layer_input=0, num_kv_shared_layers=0, attention_k_eq_v=False)
    else:
        kw.update(attention_k_eq_v=True, num_global_key_value_heads=1, hidden_size_per_layer_input=8,
                  vocab_size_per_layer_input=V, num_kv_shared_layers=2, use_double_wide_mlp=True)
    return transformers.Gemma4TextConfig(**kw)


def build(moe, seed):
    torch.manual_seed(seed)
    cfg = config(moe)
    cfg._attn_implementation = "eager"
    model = transformers.Gemma4ForCausalLM(cfg)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("norm.weight") or n.endswith("router.scale") or n.endswith("per_expert_scale"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif "router.proj" in n:  # spread the expert choice
                p.copy_(0.5 * torch.randn_like(p))
        for n, b in model.named_buffers():
            if n.endswith("layer_scalar"):
                b.copy_(0.6 + 0.8 * torch.rand_like(b))
    return model.to(torch.bfloat16).eval()


def load_reference(path):
    m = transformers.Gemma4ForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    if hasattr(m.config, "_experts_implementation"):
        m.config._experts_implementation = "eager"
    return m


def goldens_of(name, ref, seed, goldens, moe):
    g = torch.Generator().manual_seed(400 + seed)
    ids = torch.randint(3, V, (1, 40), generator=g)
    extra = torch.randint(3, V, (1, 9), generator=g)
    tops = []
    hooks = [layer.router.register_forward_hook(lambda mod, inp, out: tops.append(out[2].clone()))
             for layer in ref.model.layers] if moe else []
    step_goldens(name, ref, ids, extra, goldens)
    for h in hooks:
        h.remove()
    with torch.no_grad():
        gen = ref.generate(ids[:, :12], max_new_tokens=24, do_sample=False, min_new_tokens=24,
                           eos_token_id=None, pad_token_id=0)
    goldens[f"{name}.greedy_ids"] = gen[0].contiguous()
    if moe:
        tops = tops[:len(ref.model.layers)]
        goldens[f"{name}.router_top"] = torch.stack(tops).reshape(len(tops), 40, -1).long().contiguous()


def main(out):
    os.makedirs(os.path.join(out, "models"), exist_ok=True)
    goldens = {}
    for name, moe, seed in (("tiny-gemma4", False, 41), ("tiny-gemma4-moe", True, 43)):
        path = os.path.join(out, "models", name)
        build(moe, seed).save_pretrained(path, safe_serialization=True)
        print(name, "saved", sorted(k for k in load_file(os.path.join(path, "model.safetensors")) if "layers.5." in k))
        ref = load_reference(path)
        print(name, "attn:", ref.config._attn_implementation, "experts:",
              getattr(ref.config, "_experts_implementation", None), flush=True)
        goldens_of(name, ref, seed, goldens, moe)
    save_file(goldens, os.path.join(out, "gemma4_goldens.safetensors"),
              metadata={"producer": "tools/make_gemma4_fixtures.py", "transformers": transformers.__version__,
                        "torch": torch.__version__})
    print(json.dumps({k: list(v.shape) for k, v in goldens.items()}))


if __name__ == "__main__":
    main(sys.argv[1])
