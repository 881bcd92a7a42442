#!/usr/bin/env python3
"""Makes tiny gpt-oss targets and their goldens with HF transformers, on the GPU machine (the
only one with transformers). Random weights (seeded), saved in bf16; goldens computed on CPU in
float32 by HF's own GptOssForCausalLM (eager attention) from the saved checkpoints.

    python3 tools/make_gptoss_fixtures.py OUTDIR  -> OUTDIR/models/<name>, OUTDIR/gptoss_goldens.safetensors

Models:
  tiny-gpt-oss        GptOssForCausalLM as HF save_pretrained writes it (bf16 experts in HF's
                      parameter layout: gate_up_proj [E, H, 2I], down_proj [E, I, H])
  tiny-gpt-oss-mxfp4  the same weights with the experts packed to MXFP4 by pack_mxfp4() below
                      (this project's packer; layout as the released checkpoints:
                      *_blocks uint8 [E, rows, cols/32, 16], *_scales uint8 [E, rows, cols/32]),
                      quantization_config {quant_method: mxfp4}. Its goldens come from HF's
                      loader dequantising those blocks (Mxfp4Config(dequantize=True)); where
                      that loader refuses to run on this machine, from HF's own
                      convert_moe_packed_tensors into a float32 model (metadata says which).
Both: 4 layers alternating sliding_attention (window 8) / full_attention, attention sinks,
YaRN rope (gpt-oss's default: factor 32, beta 32/1, truncate false, original 4096), q/k/v/o
bias, 8 experts top-2 with biases, untied head.
Goldens per model M (the protocol of tools/make_moe_fixtures.py):
  M.input_ids [40], M.hidden_states [L+1,40,H], M.logits [40,V]      prefill without cache
  M.extra_ids [9]: 3 single-token steps then one 6-token block on the prefill's cache:
  M.decode_logits [3,V], M.verify_logits [6,V]
  M.greedy_ids [12 + 24]: HF generate(do_sample=False) from the first 12 input ids
  M.router_top [L,40,2]: the experts each prefill token chose per layer (HF router indices)
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

from make_moe_fixtures import step_goldens  # tools/, beside this script: the shared protocol

V = 512
FP4 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def config():
    return transformers.GptOssConfig(
        hidden_size=64, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, vocab_size=V, max_position_embeddings=512, rms_norm_eps=1e-5, sliding_window=8,
        num_local_experts=8, num_experts_per_tok=2, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        tie_word_embeddings=False, router_aux_loss_coef=0.0, output_router_logits=False,
        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                         "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096})


def build(seed):
    torch.manual_seed(seed)
    model = transformers.GptOssForCausalLM(config())
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
            elif n.endswith("sinks"):  # sink logits that matter next to the q.k logits
                p.copy_(torch.randn_like(p))
            elif "router" in n:  # spread the expert choice
                p.copy_(0.5 * torch.randn_like(p))
            elif n.endswith("_bias") or n.endswith(".bias"):
                p.copy_(0.05 * torch.randn_like(p))
            elif "experts" in n:  # large enough that the clamps at +-7 bite sometimes
                p.copy_(0.3 * torch.randn_like(p))
    return model.to(torch.bfloat16).eval()


def pack_mxfp4(w):
    """w float [..., cols] (cols % 32 == 0) -> blocks uint8 [..., cols/32, 16], scales uint8 [..., cols/32].
    Each block of 32 gets the smallest power of two 2^e with max|x| / 2^e <= 6; codes are the
    nearest e2m1 value (ties to the lower code); byte k holds code 2k (low nibble) and 2k+1."""
    x = w.float().reshape(*w.shape[:-1], w.shape[-1] // 32, 32)
    amax = x.abs().amax(-1, keepdim=True)
    e = torch.where(amax > 0, torch.ceil(torch.log2(amax / 6.0)), torch.zeros_like(amax)).clamp(-127, 127)
    y = x / torch.pow(2.0, e)
    mags = FP4[:8]
    code = (y.abs().unsqueeze(-1) - mags).abs().argmin(-1)
    code = code + 8 * (y < 0).long() * (code > 0).long()
    code = code.to(torch.uint8)
    blocks = code[..., 0::2] | (code[..., 1::2] << 4)
    scales = (e.squeeze(-1) + 127).to(torch.uint8)
    return blocks.contiguous(), scales.contiguous()


def write_mxfp4(src, dst):
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f != "model.safetensors":
            with open(os.path.join(src, f), "rb") as a, open(os.path.join(dst, f), "wb") as b:
                b.write(a.read())
    sd = load_file(os.path.join(src, "model.safetensors"))
    out = {}
    for n, t in sd.items():
        if n.endswith("experts.gate_up_proj") or n.endswith("experts.down_proj"):
            blocks, scales = pack_mxfp4(t.transpose(1, 2))  # HF [E, in, out] -> rows = out
            out[n + "_blocks"] = blocks
            out[n + "_scales"] = scales
        else:
            out[n] = t
    save_file(out, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
    cfg_path = os.path.join(dst, "config.json")
    cfg = json.load(open(cfg_path))
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    json.dump(cfg, open(cfg_path, "w"), indent=2)


def load_reference(path, mxfp4):
    kw = dict(dtype=torch.float32, attn_implementation="eager")
    if not mxfp4:
        return transformers.GptOssForCausalLM.from_pretrained(path, **kw).eval(), "bf16 checkpoint"
    try:
        m = transformers.GptOssForCausalLM.from_pretrained(
            path, quantization_config=transformers.Mxfp4Config(dequantize=True), device_map="cpu", **kw).eval()
        return m.float(), "HF Mxfp4Config(dequantize=True) loader"
    except Exception as e:  # noqa: BLE001
        print("HF MXFP4 loader refused:", repr(e)[:300], flush=True)
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    sd = load_file(os.path.join(path, "model.safetensors"))
    cfg = transformers.GptOssConfig.from_pretrained(path)
    cfg.quantization_config = None
    m = transformers.GptOssForCausalLM._from_config(cfg, dtype=torch.float32, attn_implementation="eager").eval()
    state = {}
    for n, t in sd.items():
        if n.endswith("_blocks"):
            base = n[: -len("_blocks")]
            state[base] = convert_moe_packed_tensors(t, sd[base + "_scales"], dtype=torch.bfloat16).float()
        elif not n.endswith("_scales"):
            state[n] = t.float()
    missing, unexpected = m.load_state_dict(state, strict=False)
    assert not unexpected and all("rotary" in k for k in missing), (missing, unexpected)
    return m, "HF convert_moe_packed_tensors into a float32 GptOssForCausalLM"


def goldens_of(name, ref, seed, goldens):
    g = torch.Generator().manual_seed(300 + seed)
    ids = torch.randint(3, V, (1, 40), generator=g)
    extra = torch.randint(3, V, (1, 9), generator=g)
    tops = []  # HF router indices per call; the first L are the prefill's (step_goldens runs it first)
    hooks = [layer.mlp.router.register_forward_hook(lambda mod, inp, out: tops.append(out[2].clone()))
             for layer in ref.model.layers]
    step_goldens(name, ref, ids, extra, goldens)
    for h in hooks:
        h.remove()
    tops = tops[:len(ref.model.layers)]
    with torch.no_grad():
        gen = ref.generate(ids[:, :12], max_new_tokens=24, do_sample=False, min_new_tokens=24,
                           eos_token_id=None, pad_token_id=0)
    goldens[f"{name}.greedy_ids"] = gen[0].contiguous()
    goldens[f"{name}.router_top"] = torch.stack(tops).reshape(len(tops), 40, -1).long().contiguous()


def main(out):
    os.makedirs(os.path.join(out, "models"), exist_ok=True)
    goldens, how = {}, {}
    model = build(seed=31)
    bf16 = os.path.join(out, "models", "tiny-gpt-oss")
    model.save_pretrained(bf16, safe_serialization=True)
    print("saved", sorted(k for k in load_file(os.path.join(bf16, "model.safetensors")) if "layers.0." in k))
    mx = os.path.join(out, "models", "tiny-gpt-oss-mxfp4")
    write_mxfp4(bf16, mx)
    for name, path, packed in (("tiny-gpt-oss", bf16, False), ("tiny-gpt-oss-mxfp4", mx, True)):
        ref, how[name] = load_reference(path, packed)
        print(name, "reference:", how[name], "experts impl:", getattr(ref.config, "_experts_implementation", None),
              "attn:", ref.config._attn_implementation, flush=True)
        goldens_of(name, ref, 31, goldens)
    save_file(goldens, os.path.join(out, "gptoss_goldens.safetensors"),
              metadata={"producer": "tools/make_gptoss_fixtures.py", "transformers": transformers.__version__,
                        "torch": torch.__version__, "reference": json.dumps(how)})


if __name__ == "__main__":
    main(sys.argv[1])
