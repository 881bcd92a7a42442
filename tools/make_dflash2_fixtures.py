#!/usr/bin/env python3
"""Makes the DFlash2 fixtures of tests/data (dflash2_goldens.json, dflash2_tensors.safetensors,
models/dflash2-demo, models/dflash2-hybrid) with the official z-lab reference code, on the GPU
machine (the only machine with transformers). Everything runs on the CPU in float32 from the
bf16 weights stored, as the other goldens (tests/data/FIXTURES.md).

    python3 tools/make_dflash2_fixtures.py --ref REF_MODEL_PY OUT

REF_MODEL_PY is z-lab/dflash `dflash/model.py` at commit 10129599 (the revision that adds
DFlash2DraftModel, GroupedDynamicCausalConv and CandidateSelector). It is not part of this
repository: bring it to the machine beside the working tree (an ignored folder, `carry`).

Drafters (weights made here, seeded; the reference code then loads them with its own
from_pretrained, codebook key mapping included, and produces every golden):
  dflash2-demo    the demo drafter (resources/demo/drafter: trained DFlash weights) turned into
                  a DFlash2 drafter: per layer an attention_conv and an mlp_conv (kernel 2,
                  groups of 16) near the identity, a candidate selector (rank 16, top-k 8), and
                  output_multiplier 0.5 / final_logit_softcapping 20. Stored sharded: shard 1
                  holds the DFlash2 tensors, shard 2 is the demo drafter's own file (the test
                  build copies it there, so the repository does not hold it twice).
  dflash2-hybrid  a random DFlash2 drafter (2 layers, H 128, block 8, conv kernel 3, groups of
                  8, selector rank 8, top-k 4; layer 0 sliding window 12 and causal, layer 1 full
                  and bidirectional) over tests/data/models/qwen3_5-tiny-causallm.
Goldens (dflash2_goldens.json):
  generate["<drafter>.p<i>"]: output_ids and acceptance_lengths of dflash_generate (T=0, no
    stop tokens), and per step the selector's block tokens (`proposals`) and the argmax of
    the drafter's logits (`argmax`), so a view of "selector vs argmax" can be checked.
Tensors (dflash2_tensors.safetensors), per drafter D and prompt i, one drafter call with
context = all prompt features, block = [anchor, MASK...] at positions T.., empty cache:
  p<i>.<D>.draft_hidden [B, H], p<i>.<D>.draft_logits [B-1, V] (compute_logits),
  p<i>.<D>.selector_path [B-1] and .selector_candidates [B-1, k] (T=0), and with a seeded
  generator at T=0.8: .sampled_path [B-1], .sampled_candidates [B-1, k], .sampled_q [B-1, k].
"""
import argparse
import importlib.util
import json
import os
import shutil
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_TARGET = os.path.join(ROOT, "resources/demo/target")
DEMO_DRAFTER = os.path.join(ROOT, "resources/demo/drafter")
HYBRID_TARGET = os.path.join(ROOT, "tests/data/models/qwen3_5-tiny-causallm")
GOLDENS = os.path.join(ROOT, "tests/data/goldens.json")
GOLDEN_TENSORS = os.path.join(ROOT, "tests/data/goldens.safetensors")


def load_reference(path):
    spec = importlib.util.spec_from_file_location("zlab_dflash_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def conv_tensors(gen, prefix, H, K, G):
    """One GroupedDynamicCausalConv near the identity: tap 0 ~ 1, later taps small."""
    base = 0.05 * torch.randn(2, K, H, generator=gen)
    base[:, 0, :] += 1.0
    proj = 0.01 * torch.randn(2 * K * G, H, generator=gen)
    return {prefix + "base_kernel": base, prefix + "kernel_projection.weight": proj}


def selector_tensors(gen, V, H, r, scale):
    return {
        "candidate_selector.predecessor_codebook": scale * torch.randn(V, r, generator=gen),
        "candidate_selector.successor_codebook": scale * torch.randn(V, r, generator=gen),
        "candidate_selector.hidden_projection.weight": torch.randn(r, H, generator=gen) / H ** 0.5,
    }


def bf16(tensors):
    return {k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items()}


def make_demo_drafter(out):
    d = os.path.join(out, "dflash2-demo")
    os.makedirs(d, exist_ok=True)
    cfg = json.load(open(os.path.join(DEMO_DRAFTER, "config.json")))
    cfg["architectures"] = ["DFlash2DraftModel"]
    cfg.pop("auto_map", None)
    cfg["dflash_config"].update(conv_kernel_size=2, conv_group_size=16, selector_rank=16, selector_top_k=8,
                                output_multiplier=0.5, final_logit_softcapping=20.0)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    gen = torch.Generator().manual_seed(2030)
    extras = {}
    for l in range(L):
        for conv in ("attention_conv", "mlp_conv"):
            extras.update(conv_tensors(gen, f"layers.{l}.{conv}.", H, 2, H // 16))
    extras.update(selector_tensors(gen, V, H, 16, 0.15))
    extras = bf16(extras)
    save_file(extras, os.path.join(d, "model-00001-of-00002.safetensors"), metadata={"format": "pt"})
    base = load_file(os.path.join(DEMO_DRAFTER, "model.safetensors"))
    shutil.copyfile(os.path.join(DEMO_DRAFTER, "model.safetensors"), os.path.join(d, "model-00002-of-00002.safetensors"))
    weight_map = {k: "model-00001-of-00002.safetensors" for k in extras}
    weight_map.update({k: "model-00002-of-00002.safetensors" for k in base})
    total = sum(t.numel() * t.element_size() for t in list(extras.values()) + list(base.values()))
    json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
              open(os.path.join(d, "model.safetensors.index.json"), "w"), indent=2)
    return d


def make_hybrid_drafter(out, ref):
    d = os.path.join(out, "dflash2-hybrid")
    os.makedirs(d, exist_ok=True)
    tcfg = json.load(open(os.path.join(HYBRID_TARGET, "config.json")))
    H, V = tcfg["hidden_size"], tcfg["vocab_size"]
    cfg = {
        "architectures": ["DFlash2DraftModel"], "model_type": "qwen3", "attention_bias": False,
        "attention_dropout": 0.0, "hidden_act": "silu", "hidden_size": H, "intermediate_size": 256,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "vocab_size": V,
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
        "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 12, "use_sliding_window": True,
        "num_target_layers": tcfg["num_hidden_layers"], "tie_word_embeddings": False, "dtype": "bfloat16",
        "dflash_config": {"block_size": 8, "mask_token_id": 2047, "target_layer_ids": [0, 2],
                          "conv_kernel_size": 3, "conv_group_size": 8, "selector_rank": 8, "selector_top_k": 4},
    }
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    model = ref.DFlash2DraftModel(transformers.Qwen3Config(**cfg))
    gen = torch.Generator().manual_seed(2031)
    tensors = {}
    for name, p in model.named_parameters():
        if name.startswith("candidate_selector.") or ".attention_conv." in name or ".mlp_conv." in name:
            continue
        if name.endswith("norm.weight"):
            tensors[name] = 1.0 + 0.1 * torch.randn(p.shape, generator=gen)
        else:
            tensors[name] = 0.08 * torch.randn(p.shape, generator=gen)
    for l in range(2):
        for conv in ("attention_conv", "mlp_conv"):
            tensors.update(conv_tensors(gen, f"layers.{l}.{conv}.", H, 3, H // 8))
    tensors.update(selector_tensors(gen, V, H, 8, 0.5))
    save_file(bf16(tensors), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    return d


def load_drafter(ref, d):
    model, info = ref.DFlash2DraftModel.from_pretrained(d, dtype=torch.float32, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"{d}: the reference did not load every tensor: {bad}")
    return model.eval()


@torch.inference_mode()
def one_call(ref, model, target, ids, tensors, key, temperature_sample=0.8):
    """The drafter call of goldens.safetensors' draft_hidden: context = all prompt features,
    block = [anchor, MASK...] at positions T..T+B-1, empty cache."""
    out = target(torch.tensor([ids]), output_hidden_states=True)
    feat = ref.extract_context_feature(out.hidden_states, model.target_layer_ids)
    anchor = out.logits[0, -1].argmax()
    B = model.block_size
    block = torch.full((1, B), model.mask_token_id, dtype=torch.long)
    block[0, 0] = anchor
    scale = float(ref._draft_value(model.config, "input_embedding_scale", 1.0))
    emb = ref._raw_input_embeddings(target, block, scale)
    T = len(ids)
    hidden = model(target_hidden=feat, noise_embedding=emb, position_ids=torch.arange(T + B)[None],
                   past_key_values=None, use_cache=False)
    head = ref._output_head(target)
    logits = model.compute_logits(hidden[:, 1:], head)
    path, cands, _ = model.propose(hidden[:, 1:], block[:, 0], head, 0.0)
    torch.manual_seed(11)
    spath, scands, q = model.propose(hidden[:, 1:], block[:, 0], head, temperature_sample)
    tensors[f"{key}.draft_hidden"] = hidden[0].float()
    tensors[f"{key}.draft_logits"] = logits[0].float()
    tensors[f"{key}.selector_path"] = path[0]
    tensors[f"{key}.selector_candidates"] = cands[0]
    tensors[f"{key}.sampled_path"] = spath[0]
    tensors[f"{key}.sampled_candidates"] = scands[0]
    tensors[f"{key}.sampled_q"] = q[0].float()
    changed = int((path[0] != logits[0].argmax(-1)).sum())
    print(f"{key}: anchor {int(anchor)}, selector differs from argmax at {changed}/{B - 1} positions")


@torch.inference_mode()
def greedy(target, ids, n):
    """Plain greedy decoding with the target's cache, no stop token."""
    cache = transformers.DynamicCache(config=target.config)
    out = list(ids)
    nxt = torch.tensor([ids])
    for _ in range(n):
        logits = target(nxt, past_key_values=cache, use_cache=True).logits
        out.append(int(logits[0, -1].argmax()))
        nxt = torch.tensor([[out[-1]]])
    return out


def check_greedy(name, output_ids, target, ids, n):
    if output_ids != greedy(target, ids, n):
        print(f"WARNING {name}: the DFlash2 output differs from the target's plain greedy decoding")


def run_generate(ref, model, target, ids, max_new):
    records = []
    original = model.propose

    def propose(hidden, anchor_ids, head, temperature):
        r = original(hidden, anchor_ids, head, temperature)
        logits = model.compute_logits(hidden, head)
        records.append({"proposals": r[0][0].tolist(), "argmax": logits.argmax(-1)[0].tolist()})
        return r

    model.propose = propose
    try:
        r = ref.dflash_generate(model, target, torch.tensor([ids]), max_new, None, temperature=0.0, return_stats=True)
    finally:
        del model.propose
    return {"output_ids": r.output_ids[0].tolist(), "acceptance_lengths": list(map(int, r.acceptance_lengths)),
            "steps": records}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("out")
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    ref = load_reference(a.ref)
    os.makedirs(a.out, exist_ok=True)
    goldens = {"reference": "z-lab/dflash dflash/model.py @ 10129599", "transformers": transformers.__version__,
               "torch": torch.__version__, "generate": {}}
    tensors = {}

    demo_dir = make_demo_drafter(a.out)
    hybrid_dir = make_hybrid_drafter(a.out, ref)
    prompts = json.load(open(GOLDENS))["prompt_ids"]
    prompt_list = [prompts[k] for k in sorted(prompts)] if isinstance(prompts, dict) else prompts

    target = transformers.AutoModelForCausalLM.from_pretrained(DEMO_TARGET, dtype=torch.float32).eval()
    model = load_drafter(ref, demo_dir)
    for i, ids in enumerate(prompt_list):
        one_call(ref, model, target, ids, tensors, f"p{i}.dflash2-demo")
        g = run_generate(ref, model, target, ids, 96)
        check_greedy(f"dflash2-demo p{i}", g["output_ids"], target, ids, 96)
        goldens["generate"][f"dflash2-demo.p{i}"] = g
        al = g["acceptance_lengths"]
        diff = sum(s["proposals"] != s["argmax"] for s in g["steps"])
        print(f"dflash2-demo p{i}: tau {sum(al) / len(al):.3f} over {len(al)} steps; selector changed {diff} blocks")

    q35 = load_file(GOLDEN_TENSORS)["q35.input_ids"].tolist()
    hprompt = q35[:40]
    goldens["hybrid_prompt_ids"] = hprompt
    htarget = transformers.AutoModelForCausalLM.from_pretrained(HYBRID_TARGET, dtype=torch.float32).eval()
    hmodel = load_drafter(ref, hybrid_dir)
    one_call(ref, hmodel, htarget, hprompt, tensors, "h0.dflash2-hybrid")
    try:
        g = run_generate(ref, hmodel, htarget, hprompt, 48)
        check_greedy("dflash2-hybrid h0", g["output_ids"], htarget, hprompt, 48)
        goldens["generate"]["dflash2-hybrid.h0"] = g
        print("dflash2-hybrid h0: acceptance", g["acceptance_lengths"])
    except Exception as e:  # the reference loop on a hybrid target: report, keep the one-call goldens
        print(f"WARNING dflash2-hybrid: dflash_generate failed: {type(e).__name__}: {e}")

    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(a.out, "dflash2_tensors.safetensors"))
    json.dump(goldens, open(os.path.join(a.out, "dflash2_goldens.json"), "w"))
    os.remove(os.path.join(demo_dir, "model-00002-of-00002.safetensors"))  # the demo drafter's own file
    print("done")


if __name__ == "__main__":
    sys.exit(main())
