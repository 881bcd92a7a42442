"""Writes random bf16 checkpoints for the hybrid benchmark (docs/PERFORMANCE.md, "Hybrid
target"), on the GPU, one safetensors shard at a time (never more than one shard in RAM):

  <dir>/target   Qwen3.6-27B shape (Qwen3_5ForCausalLM, model_type qwen3_5_text): L layers
                 (default 64) in the 3:1 pattern linear_attention x3, full_attention x1;
                 H 5120; gated attention 24 query / 4 KV heads of 256, partial rotary 0.25,
                 rope_theta 1e7; Gated DeltaNet 16 key heads x 128, 48 value heads x 128,
                 conv kernel 4; I 17408; V 248320; untied LM head. ~53.7 GB at 64 layers.
  <dir>/drafter  Qwen3.6-27B-DFlash shape (z-lab's released drafter: 5 Qwen3 layers, H 5120,
                 32 / 8 heads of 128, I 17408, block 16, mask 248070, target_layer_ids
                 [1, 16, 31, 46, 61], which is also the DFlash fallback rule for 64 layers;
                 for fewer target layers the fallback rule is used). ~3.46 GB.
  <dir>/prompt.json  512 random prompt token ids

Weights N(0, 0.02); o_proj / out_proj / down_proj scaled by 1/sqrt(2 L); the (1 + w) norms of
Qwen3.5 get w ~ N(0, 0.1), the plain-w norms (DeltaNet output norm, drafter) 1 + N(0, 0.1);
A_log = log U(1, 16), dt_bias 1, conv1d N(0, 0.5). Deterministic (seed 0).

usage: python3 bench/gen_weights_hybrid.py DIR [--layers L]
       python3 bench/gen_weights_hybrid.py --plan DIR...   prints "DIR L" for the first DIR
              whose file system holds the largest L (multiple of 4, <= 64) with 2 GB spare,
              or the first DIR that already holds complete weights (DIR/draftscope-hybrid),
              whatever their layer count (remove them to force BENCH_LAYERS)
"""
import argparse
import json
import os
import shutil
import sys
import time

H, HQ, HKV, D, I, V = 5120, 24, 4, 256, 17408, 248320
LK, LV, DK, DV, KERNEL = 16, 48, 128, 128, 4
DRAFT_LAYERS, DHQ, DHKV, DD, BLOCK, MASK_ID = 5, 32, 8, 128, 16, 248070
PROMPT_LEN = 512
SHARD_BYTES = 4_000_000_000


def layer_type(l):
    return "full_attention" if (l + 1) % 4 == 0 else "linear_attention"


def target_layer_specs(l, L):
    """(name, shape, kind) of one decoder layer; kind: w (std 0.02), o (scaled output),
    n1 ((1 + w) norm), nw (plain-w norm), alog, dt, conv."""
    p = f"model.layers.{l}."
    s = [(p + "input_layernorm.weight", (H,), "n1"), (p + "post_attention_layernorm.weight", (H,), "n1")]
    if layer_type(l) == "full_attention":
        a = p + "self_attn."
        s += [(a + "q_proj.weight", (2 * HQ * D, H), "w"), (a + "k_proj.weight", (HKV * D, H), "w"),
              (a + "v_proj.weight", (HKV * D, H), "w"), (a + "o_proj.weight", (H, HQ * D), "o"),
              (a + "q_norm.weight", (D,), "n1"), (a + "k_norm.weight", (D,), "n1")]
    else:
        a = p + "linear_attn."
        conv_dim = 2 * LK * DK + LV * DV
        s += [(a + "in_proj_qkv.weight", (conv_dim, H), "w"), (a + "in_proj_z.weight", (LV * DV, H), "w"),
              (a + "in_proj_b.weight", (LV, H), "w"), (a + "in_proj_a.weight", (LV, H), "w"),
              (a + "conv1d.weight", (conv_dim, 1, KERNEL), "conv"), (a + "A_log", (LV,), "alog"),
              (a + "dt_bias", (LV,), "dt"), (a + "norm.weight", (DV,), "nw"),
              (a + "out_proj.weight", (H, LV * DV), "o")]
    s += [(p + "mlp.gate_proj.weight", (I, H), "w"), (p + "mlp.up_proj.weight", (I, H), "w"),
          (p + "mlp.down_proj.weight", (H, I), "o")]
    return s


def target_specs(L):
    s = [("model.embed_tokens.weight", (V, H), "w")]
    for l in range(L):
        s += target_layer_specs(l, L)
    s += [("model.norm.weight", (H,), "n1"), ("lm_head.weight", (V, H), "w")]
    return s


def drafter_specs():
    s = [("fc.weight", (H, 5 * H), "fc"), ("hidden_norm.weight", (H,), "nw"), ("norm.weight", (H,), "nw")]
    for l in range(DRAFT_LAYERS):
        p = f"layers.{l}."
        s += [(p + "input_layernorm.weight", (H,), "nw"), (p + "post_attention_layernorm.weight", (H,), "nw"),
              (p + "self_attn.q_proj.weight", (DHQ * DD, H), "w"), (p + "self_attn.k_proj.weight", (DHKV * DD, H), "w"),
              (p + "self_attn.v_proj.weight", (DHKV * DD, H), "w"), (p + "self_attn.o_proj.weight", (H, DHQ * DD), "od"),
              (p + "self_attn.q_norm.weight", (DD,), "nw"), (p + "self_attn.k_norm.weight", (DD,), "nw"),
              (p + "mlp.gate_proj.weight", (I, H), "w"), (p + "mlp.up_proj.weight", (I, H), "w"),
              (p + "mlp.down_proj.weight", (H, I), "od")]
    return s


def nbytes(specs):
    total = 0
    for _, shape, _ in specs:
        n = 2
        for d in shape:
            n *= d
        total += n
    return total


def total_bytes(L):
    return nbytes(target_specs(L)) + nbytes(drafter_specs())


def fallback_ids(n_target, n_draft=DRAFT_LAYERS):  # DFlash build_target_layer_ids
    if n_draft == 1:
        return [n_target // 2]
    return [int(round(1 + i * (n_target - 4) / (n_draft - 1))) for i in range(n_draft)]


def plan(dirs):
    # Weights an earlier call wrote (prompt.json is written last) are reused where they are.
    for d in dirs:
        cfg = os.path.join(d, "draftscope-hybrid", "target", "config.json")
        if os.path.exists(os.path.join(d, "draftscope-hybrid", "prompt.json")) and os.path.exists(cfg):
            L = json.load(open(cfg))["num_hidden_layers"]
            print(f"plan: {d}: weights already there ({L} layers)", file=sys.stderr)
            print(f"{d} {L}")
            return
    best = None
    for d in dirs:
        if not os.path.isdir(d):
            continue
        free = shutil.disk_usage(d).free
        L = 64
        while L > 4 and total_bytes(L) + 2_000_000_000 > free:
            L -= 4
        print(f"plan: {d}: {free / 1e9:.1f} GB free -> {L} layers ({total_bytes(L) / 1e9:.2f} GB)", file=sys.stderr)
        if best is None or L > best[1]:
            best = (d, L)
    print(f"{best[0]} {best[1]}")


def make(gen, dev, shape, kind, L, L_draft=DRAFT_LAYERS):
    import torch

    def randn(std):
        return (torch.randn(shape, generator=gen, device=dev, dtype=torch.float32) * std).to(torch.bfloat16)

    if kind == "w":
        return randn(0.02)
    if kind == "o":
        return randn(0.02 / (2 * L) ** 0.5)
    if kind == "od":
        return randn(0.02 / (2 * L_draft) ** 0.5)
    if kind == "fc":
        return randn(0.02 / 5 ** 0.5)
    if kind == "conv":
        return randn(0.5)
    if kind == "n1":
        return randn(0.1)
    if kind == "nw":
        return (1.0 + randn(0.1).float()).to(torch.bfloat16)
    if kind == "alog":
        return torch.empty(shape, device=dev).uniform_(1.0, 16.0, generator=gen).log().to(torch.bfloat16)
    if kind == "dt":
        return torch.ones(shape, device=dev, dtype=torch.bfloat16)
    raise ValueError(kind)


def write_sharded(d, specs, L, gen, dev, single_name=None):
    from safetensors.torch import save_file

    os.makedirs(d, exist_ok=True)
    groups, cur, cur_bytes = [], [], 0
    for sp in specs:  # shard boundaries decided up front so names carry the shard count
        cur.append(sp)
        cur_bytes += nbytes([sp])
        if cur_bytes >= SHARD_BYTES and single_name is None:
            groups.append(cur)
            cur, cur_bytes = [], 0
    if cur:
        groups.append(cur)
    weight_map = {}
    for i, g in enumerate(groups):
        fname = single_name or f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        shard = {name: make(gen, dev, shape, kind, L).cpu() for name, shape, kind in g}
        save_file(shard, os.path.join(d, fname), metadata={"format": "pt"})
        del shard
        for name, _, _ in g:
            weight_map[name] = fname
    if single_name is None:
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": nbytes(specs)}, "weight_map": weight_map}, f, indent=1)
    return nbytes(specs)


def target_config(L):
    return {
        "architectures": ["Qwen3_5ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "dtype": "bfloat16", "eos_token_id": 248044, "head_dim": D, "hidden_act": "silu",
        "hidden_size": H, "initializer_range": 0.02, "intermediate_size": I,
        "layer_types": [layer_type(l) for l in range(L)], "full_attention_interval": 4,
        "linear_conv_kernel_dim": KERNEL, "linear_key_head_dim": DK, "linear_num_key_heads": LK,
        "linear_num_value_heads": LV, "linear_value_head_dim": DV, "max_position_embeddings": 262144,
        "model_type": "qwen3_5_text", "num_attention_heads": HQ, "num_hidden_layers": L, "num_key_value_heads": HKV,
        "pad_token_id": None, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-6,
        "rope_parameters": {"partial_rotary_factor": 0.25, "rope_theta": 10000000.0, "rope_type": "default"},
        "tie_word_embeddings": False, "use_cache": True, "vocab_size": V,
    }


def drafter_config(L):
    ids = [1, 16, 31, 46, 61] if L == 64 else fallback_ids(L)
    return {
        "architectures": ["DFlashDraftModel"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "eos_token_id": 248044, "head_dim": DD, "hidden_act": "silu", "hidden_size": H,
        "initializer_range": 0.02, "intermediate_size": I, "layer_types": ["full_attention"] * DRAFT_LAYERS,
        "max_position_embeddings": 262144, "max_window_layers": DRAFT_LAYERS, "model_type": "qwen3",
        "num_attention_heads": DHQ, "num_hidden_layers": DRAFT_LAYERS, "num_key_value_heads": DHKV,
        "rms_norm_eps": 1e-6, "rope_parameters": {"rope_theta": 10000000.0, "rope_type": "default"},
        "sliding_window": None, "tie_word_embeddings": False, "dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": V, "block_size": BLOCK, "num_target_layers": L,
        "dflash_config": {"mask_token_id": MASK_ID, "target_layer_ids": ids},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--layers", type=int, default=64)
    ap.add_argument("--plan", action="store_true")
    a = ap.parse_args()
    if a.plan:
        plan(a.dirs)
        return
    import torch

    root, L = a.dirs[0], a.layers
    if L % 4 or not 4 <= L <= 64:
        sys.exit("--layers must be a multiple of 4 in 4..64")
    os.makedirs(root, exist_ok=True)
    need, free = total_bytes(L), shutil.disk_usage(root).free
    if need + 1_000_000_000 > free:
        sys.exit(f"gen_weights_hybrid: {need / 1e9:.1f} GB needed, {free / 1e9:.1f} GB free in {root}")
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    t0 = time.perf_counter()
    tb = write_sharded(os.path.join(root, "target"), target_specs(L), L, gen, dev)
    with open(os.path.join(root, "target", "config.json"), "w") as f:
        json.dump(target_config(L), f, indent=1)
    db = write_sharded(os.path.join(root, "drafter"), drafter_specs(), L, gen, dev, single_name="model.safetensors")
    with open(os.path.join(root, "drafter", "config.json"), "w") as f:
        json.dump(drafter_config(L), f, indent=1)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 248000, (PROMPT_LEN,), generator=g).tolist()
    with open(os.path.join(root, "prompt.json"), "w") as f:
        json.dump(ids, f)
    print(f"gen_weights_hybrid: {L} layers, target {tb / 1e9:.2f} GB, drafter {db / 1e9:.2f} GB "
          f"in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
