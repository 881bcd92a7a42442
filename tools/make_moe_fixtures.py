#!/usr/bin/env python3
"""Makes small MoE / Qwen3-Next fixtures and their goldens with HF transformers, on the GPU
machine (the only one with transformers). Random bf16 weights, goldens computed on CPU in
float32 from the saved weights, deterministic seeds.

    python3 tools/make_moe_fixtures.py OUTDIR     -> OUTDIR/models/<name>, OUTDIR/moe_goldens.safetensors

Models (each skipped with a message if this transformers lacks the class):
  tiny-qwen3-moe        Qwen3MoeForCausalLM: sparse MoE, top-k with renormalisation
  tiny-qwen3-next       Qwen3NextForCausalLM: fused in_proj_qkvz / in_proj_ba DeltaNet,
                        gated attention, MoE with a gated shared expert
  tiny-qwen3_5-moe      Qwen3_5MoeForCausalLM: Qwen3.5 hybrid with MoE + gated shared expert
Goldens per model M (same protocol as the q35.* goldens):
  M.input_ids [40], M.hidden_states [L+1,40,H], M.logits [40,V]    prefill without cache
  M.extra_ids [9]: 3 single-token steps then one 6-token block on the prefill's cache:
  M.decode_logits [3,V], M.verify_logits [6,V]
"""
import os
import sys
import traceback

import torch
import transformers
from safetensors.torch import save_file

V = 512


def common(**kw):
    c = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=V,
             max_position_embeddings=512, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0,
             tie_word_embeddings=False)
    c.update(kw)
    return c


def moe(**kw):
    m = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
             decoder_sparse_step=1, mlp_only_layers=[], output_router_logits=False, router_aux_loss_coef=0.0)
    m.update(kw)
    return m


def linear(**kw):
    l = dict(linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
             linear_value_head_dim=16)
    l.update(kw)
    return l


def specs():
    out = {}
    out["tiny-qwen3-moe"] = ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(
        **common(num_hidden_layers=2, intermediate_size=128, rope_parameters={"rope_theta": 1e6, "rope_type": "default"}),
        **moe()))
    hybrid_layers = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
    out["tiny-qwen3-next"] = ("Qwen3NextConfig", "Qwen3NextForCausalLM", dict(
        **common(num_hidden_layers=4, intermediate_size=128, layer_types=hybrid_layers, partial_rotary_factor=0.25,
                 rope_parameters={"rope_theta": 1e7, "rope_type": "default", "partial_rotary_factor": 0.25}),
        **moe(shared_expert_intermediate_size=64), **linear()))
    out["tiny-qwen3_5-moe"] = ("Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM", dict(
        **common(num_hidden_layers=4, layer_types=hybrid_layers, partial_rotary_factor=0.25,
                 rope_parameters={"rope_theta": 1e7, "rope_type": "default", "partial_rotary_factor": 0.25}),
        **moe(shared_expert_intermediate_size=64), **linear()))
    return out


def step_goldens(name, ref, ids, extra, goldens):
    """The protocol above for model `ref` (float32): prefill `ids` [1, 40] without cache, then 3
    cached single-token steps and one cached 6-token block of `extra` [1, 9]; fills goldens."""
    with torch.no_grad():
        o = ref(ids, output_hidden_states=True)
        c = ref(ids, use_cache=True)
        pkv = c.past_key_values
        dec = []
        for i in range(3):
            s = ref(extra[:, i:i + 1], past_key_values=pkv, use_cache=True)
            pkv = s.past_key_values
            dec.append(s.logits[0, -1])
        ver = ref(extra[:, 3:9], past_key_values=pkv, use_cache=True).logits[0]
    goldens[f"{name}.input_ids"] = ids[0].contiguous()
    goldens[f"{name}.extra_ids"] = extra[0].contiguous()
    goldens[f"{name}.hidden_states"] = torch.stack([h[0] for h in o.hidden_states]).float().contiguous()
    goldens[f"{name}.logits"] = o.logits[0].float().contiguous()
    goldens[f"{name}.decode_logits"] = torch.stack(dec).float().contiguous()
    goldens[f"{name}.verify_logits"] = ver.float().contiguous()


def build(cfg_cls, model_cls, kw, seed):
    torch.manual_seed(seed)
    cfg = getattr(transformers, cfg_cls)(**kw)
    model = getattr(transformers, model_cls)(cfg)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
            elif "gate.weight" in n and "mlp" in n:  # routers: spread the expert choice
                p.copy_(0.5 * torch.randn_like(p))
    return model.to(torch.bfloat16).eval()


def main(out):
    os.makedirs(os.path.join(out, "models"), exist_ok=True)
    goldens = {}
    for seed, (name, (cfg_cls, model_cls, kw)) in enumerate(specs().items(), start=11):
        try:
            model = build(cfg_cls, model_cls, kw, seed)
            path = os.path.join(out, "models", name)
            model.save_pretrained(path, safe_serialization=True)
            ref = getattr(transformers, model_cls).from_pretrained(path, dtype=torch.float32).eval()
            g = torch.Generator().manual_seed(200 + seed)
            ids = torch.randint(3, V, (1, 40), generator=g)
            extra = torch.randint(3, V, (1, 9), generator=g)
            step_goldens(name, ref, ids, extra, goldens)
            print(name, "ok", sorted(k for k in ref.state_dict().keys() if "layers.0." in k)[:40], flush=True)
        except Exception:
            print(name, "FAILED", flush=True)
            traceback.print_exc()
    save_file(goldens, os.path.join(out, "moe_goldens.safetensors"),
              metadata={"producer": "tools/make_moe_fixtures.py", "transformers": transformers.__version__,
                        "torch": torch.__version__})


if __name__ == "__main__":
    main(sys.argv[1])
