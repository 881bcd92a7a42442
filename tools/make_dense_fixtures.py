#!/usr/bin/env python3
"""Makes the small dense-target fixtures of tests/data/models/tiny-* and their goldens
(tests/data/dense_goldens.safetensors) with HF transformers, on the GPU machine (the only
machine with transformers). Random weights, CPU, float32, deterministic seeds.

    python3 tools/make_dense_fixtures.py OUTDIR

Models:
  tiny-llama3     LlamaForCausalLM, llama3 rope scaling, float32 weights, untied
  tiny-llama-tied LlamaForCausalLM, default rope, bfloat16 weights, tie_word_embeddings
  tiny-qwen2      Qwen2ForCausalLM (q/k/v bias), bfloat16 weights
Goldens per model M: M.input_ids [T], M.hidden_states [L+1,T,H], M.logits [T,V] (float32,
computed from the saved weights), M.greedy_ids [T+8] (HF greedy generate with a KV cache).
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file


def rope(theta, **scaling):
    p = {"rope_theta": theta, "rope_type": scaling.pop("rope_type", "default")}
    p.update(scaling)
    return p


def build(kind, seed, dtype, **kw):
    torch.manual_seed(seed)
    common = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=512, max_position_embeddings=256, rms_norm_eps=1e-5,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
    common.update(kw)
    if kind == "llama":
        cfg = transformers.LlamaConfig(**common)
        model = transformers.LlamaForCausalLM(cfg)
    else:
        cfg = transformers.Qwen2Config(**common)
        model = transformers.Qwen2ForCausalLM(cfg)
    with torch.no_grad():  # make norms non-trivial so a missing norm weight shows
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
            if n.endswith(".bias"):
                p.copy_(0.05 * torch.randn_like(p))
    return model.to(dtype).eval()


def main(out):
    os.makedirs(out, exist_ok=True)
    specs = {
        "tiny-llama3": ("llama", 1, torch.float32, dict(
            rope_parameters=rope(500000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                 high_freq_factor=4.0, original_max_position_embeddings=64))),
        "tiny-llama-tied": ("llama", 2, torch.bfloat16, dict(rope_parameters=rope(10000.0),
                                                             tie_word_embeddings=True)),
        "tiny-qwen2": ("qwen2", 3, torch.bfloat16, dict(rope_parameters=rope(1000000.0))),
    }
    goldens = {}
    for name, (kind, seed, dtype, kw) in specs.items():
        model = build(kind, seed, dtype, **kw)
        path = os.path.join(out, "models", name)
        model.save_pretrained(path, safe_serialization=True)
        # Goldens from the saved weights, reloaded in float32 (as the engine computes).
        ref = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        g = torch.Generator().manual_seed(100 + seed)
        ids = torch.randint(3, 512, (1, 40), generator=g)
        with torch.no_grad():
            o = ref(ids, output_hidden_states=True)
            gen = ref.generate(ids, max_new_tokens=8, do_sample=False, min_new_tokens=8)
        goldens[f"{name}.input_ids"] = ids[0].contiguous()
        goldens[f"{name}.hidden_states"] = torch.stack([h[0] for h in o.hidden_states]).float().contiguous()
        goldens[f"{name}.logits"] = o.logits[0].float().contiguous()
        goldens[f"{name}.greedy_ids"] = gen[0].contiguous()
        print(name, "saved", {k: list(v.shape) for k, v in goldens.items() if k.startswith(name)})
    save_file(goldens, os.path.join(out, "dense_goldens.safetensors"),
              metadata={"producer": "tools/make_dense_fixtures.py", "transformers": transformers.__version__,
                        "torch": torch.__version__})


if __name__ == "__main__":
    main(sys.argv[1])
