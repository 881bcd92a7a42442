#!/usr/bin/env python3
"""Makes the DSpark fixtures of tests/data (dspark_heads.safetensors, dspark_goldens.json,
dspark_tensors.safetensors) on the GPU machine (the only machine with transformers). Everything
runs on the CPU in float32 from the bf16 weights stored, as the other goldens (FIXTURES.md).

    python3 tools/make_dspark_fixtures.py --zlab ZLAB_MODEL_PY --speculators SPECULATORS_SRC OUT

ZLAB_MODEL_PY is z-lab/dflash `dflash/model.py` (@ 10129599): its DFlashDraftModel runs the
drafter's body (the speculators `dflash` body is the same computation: tst_speculators).
SPECULATORS_SRC is vllm-project/speculators `src/` (main, c05b95b3): its
`models/dspark/model_definitions.py` (MarkovHead, ConfidenceHead; it imports torch only) is
loaded from its file and computes the Markov bias and the confidence. Neither is part of this
repository: bring them beside the working tree (an ignored folder, `carry`).

The drafter, `dspark-demo` (made by the tests from these files, as tst_speculators converts):
the demo drafter (resources/demo/drafter) in the speculators format with
speculators_model_type 'dspark', sample_from_anchor true (DSpark's default), the target's
embed_tokens and lm_head copied in, and seeded heads written here: markov_w1 [V, 16],
markov_w2 [V, 16] and a confidence head over [z; W1[prev]] (dspark_heads.safetensors).

A second drafter over the hybrid target qwen3_5-tiny-causallm: the DFlash body of
tests/data/models/dflash2-hybrid (its DFlash2 parts left out) with heads-hybrid.safetensors
(rank 16, H 128), cases "hybrid-anchor.h0" and "hybrid-shifted.h0" (the hybrid prompt of
dflash2_goldens.json, 48 new tokens).

Goldens. There is no runnable DSpark inference loop to call (vLLM's `dspark_sampling.py` needs
vLLM); the walk and the loop below follow vLLM's sample_dspark_markov_block and speculators'
slot layout (slot j of the block predicts position p + j + 1, its Markov predecessor is the
token at p + j) step by step, with the reference modules doing every computation:
Two layouts: "anchor" (sample_from_anchor true: all B rows draft) and "shifted" (false: rows
1..B-1 draft, as DFlash; the demo body was trained so, hence its higher acceptance). D = the
drafting rows.
  dspark_tensors.safetensors, per layout L and prompt i, one drafter call (context = all
  prompt features, block = [anchor, MASK...] at positions T.., empty cache): L.p<i>.draft_hidden
  [B, H], L.p<i>.base_logits [D, V] (no bias), L.p<i>.walk_logits [D, V] (with the bias, greedy
  walk), L.p<i>.walk_path [D], L.p<i>.confidence [D].
  dspark_goldens.json generate["L.p<i>"]: output_ids and acceptance_lengths of the
  greedy chain loop (current loop: B + 1 or B tokens per verify pass, the run ends at P + max_new),
  per step the drafted tokens, the argmax before the bias and the confidence; each output is
  also checked against the target's plain greedy decoding.
"""
import argparse
import importlib.util
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_TARGET = os.path.join(ROOT, "resources/demo/target")
DEMO_DRAFTER = os.path.join(ROOT, "resources/demo/drafter")
GOLDENS = os.path.join(ROOT, "tests/data/goldens.json")
HYBRID_TARGET = os.path.join(ROOT, "tests/data/models/qwen3_5-tiny-causallm")
HYBRID_BODY = os.path.join(ROOT, "tests/data/models/dflash2-hybrid")
DFLASH2_GOLDENS = os.path.join(ROOT, "tests/data/dflash2_goldens.json")
DFLASH2_PARTS = ("candidate_selector.", ".attention_conv.", ".mlp_conv.")
RANK = 16


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_heads(defs, V, H, out, name="heads.safetensors", seed=2040):
    """Seeded heads, stored in bf16 and read back, so the goldens use exactly the stored values."""
    gen = torch.Generator().manual_seed(seed)
    tensors = {
        "markov_head.markov_w1.weight": 0.3 * torch.randn(V, RANK, generator=gen),
        "markov_head.markov_w2.weight": 0.3 * torch.randn(V, RANK, generator=gen),
        "confidence_head.proj.weight": 0.08 * torch.randn(1, H + RANK, generator=gen),
        "confidence_head.proj.bias": torch.tensor([0.4]),
    }
    path = os.path.join(out, name)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items()}, path, metadata={"format": "pt"})
    stored = {k: v.float() for k, v in load_file(path).items()}
    markov = defs.MarkovHead(verifier_vocab_size=V, draft_vocab_size=V, markov_rank=RANK, hidden_size=H)
    markov.markov_w1.weight.copy_(stored["markov_head.markov_w1.weight"])
    markov.markov_w2.weight.copy_(stored["markov_head.markov_w2.weight"])
    conf = defs.ConfidenceHead(H + RANK)
    conf.proj.weight.copy_(stored["confidence_head.proj.weight"])
    conf.proj.bias.copy_(stored["confidence_head.proj.bias"])
    return markov.eval(), conf.eval()


def walk(markov, conf, hidden, base, anchor):
    """vLLM sample_dspark_markov_block at T = 0: slot j adds the bias of its predecessor (the
    anchor, then the token drafted at j - 1) and takes the argmax; the confidence head reads
    [z_j; W1[prev_j]] (speculators DSparkDraftModel.forward)."""
    prev = torch.tensor([[anchor]])
    path, rows, confs = [], [], []
    for j in range(base.shape[0]):
        e = markov.prev_embeddings(prev)  # [1, 1, r]
        bias = markov.block_bias(prev_token_ids=prev, hidden_states=hidden[None, j:j + 1], prev_emb=e)
        row = base[j] + bias[0, 0]
        rows.append(row)
        confs.append(torch.sigmoid(conf(torch.cat([hidden[None, j:j + 1], e.to(hidden.dtype)], -1)))[0, 0])
        tok = int(row.argmax())
        path.append(tok)
        prev = torch.tensor([[tok]])
    return path, torch.stack(rows), torch.stack(confs)


def drafter_call(ref, model, target, seq, start, rows):
    """The drafter's outputs [rows, H] for the block [anchor=seq[start], MASK...] at positions
    start.., with the context features of positions 0..start-1 (no cache: one call)."""
    out = target(torch.tensor([seq[:start]]), output_hidden_states=True)
    feat = ref.extract_context_feature(out.hidden_states, model.target_layer_ids)
    block = torch.full((1, rows), model.mask_token_id, dtype=torch.long)
    block[0, 0] = seq[start]
    emb = ref._raw_input_embeddings(target, block, 1.0)
    hidden = model(target_hidden=feat, noise_embedding=emb, position_ids=torch.arange(start + rows)[None],
                   past_key_values=None, use_cache=False)
    return hidden[0]


@torch.inference_mode()
def greedy(target, ids, n):
    out = list(ids)
    for _ in range(n):
        out.append(int(target(torch.tensor([out])).logits[0, -1].argmax()))
    return out


@torch.inference_mode()
def generate(ref, model, markov, conf, target, ids, max_new, anchor_drafts):
    """The current loop, greedy. anchor_drafts (sample_from_anchor): B + 1 tokens per verify
    pass, every block row drafts; else B per pass, rows 1..B-1 draft. Near the end the block is
    clipped to the rows that draft the tokens still needed."""
    B = model.block_size
    head = ref._output_head(target)
    P = len(ids)
    max_len = P + max_new
    out = list(ids) + [int(target(torch.tensor([ids])).logits[0, -1].argmax())]
    start, steps, lengths = P, [], []
    first = 0 if anchor_drafts else 1
    while start + 1 < max_len:
        verify = min(B + 1 if anchor_drafts else B, max_len - start)
        D = verify - 1
        hidden = drafter_call(ref, model, target, out, start, D + first)[first:]
        base = model.compute_logits(hidden, head)
        drafted, _, confs = walk(markov, conf, hidden, base, out[start])
        logits = target(torch.tensor([out[:start + 1] + drafted])).logits[0, start:start + D + 1]
        post = logits.argmax(-1).tolist()
        acc = 0
        while acc < D and drafted[acc] == post[acc]:
            acc += 1
        produced = (drafted[:acc] + [post[acc]])[:max_len - start - 1]
        steps.append({"drafted": drafted, "argmax": base.argmax(-1).tolist(), "confidence": confs.tolist()})
        lengths.append(len(produced))
        out += produced
        start += len(produced)
    return {"output_ids": out[:max_len], "acceptance_lengths": lengths, "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zlab", required=True)
    ap.add_argument("--speculators", required=True)
    ap.add_argument("out")
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    ref = load_module("zlab_dflash_model", a.zlab)
    defs = load_module("speculators_dspark_defs",
                       os.path.join(a.speculators, "speculators/models/dspark/model_definitions.py"))
    os.makedirs(a.out, exist_ok=True)
    target = transformers.AutoModelForCausalLM.from_pretrained(DEMO_TARGET, dtype=torch.float32).eval()
    model = ref.DFlashDraftModel.from_pretrained(DEMO_DRAFTER, dtype=torch.float32).eval()
    V, H = target.config.vocab_size, target.config.hidden_size
    markov, conf = make_heads(defs, V, H, a.out)
    head = ref._output_head(target)
    B = model.block_size

    prompts = json.load(open(GOLDENS))["prompt_ids"]
    prompt_list = [prompts[k] for k in sorted(prompts)] if isinstance(prompts, dict) else prompts
    goldens = {"reference": "z-lab/dflash dflash/model.py @ 10129599 (body); vllm-project/speculators "
                            "models/dspark/model_definitions.py @ c05b95b3 (heads); loop after vLLM dspark_sampling.py",
               "transformers": transformers.__version__, "torch": torch.__version__, "markov_rank": RANK,
               "generate": {}}
    tensors = {}
    for layout, anchor_drafts in (("anchor", True), ("shifted", False)):
        first = 0 if anchor_drafts else 1
        for i, ids in enumerate(prompt_list):
            key = f"{layout}.p{i}"
            with torch.inference_mode():
                anchor = int(target(torch.tensor([ids])).logits[0, -1].argmax())
                hidden = drafter_call(ref, model, target, list(ids) + [anchor], len(ids), B)
                base = model.compute_logits(hidden[first:], head)
                path, rows, confs = walk(markov, conf, hidden[first:], base, anchor)
            tensors[f"{key}.draft_hidden"] = hidden.float()
            tensors[f"{key}.base_logits"] = base.float()
            tensors[f"{key}.walk_logits"] = rows.float()
            tensors[f"{key}.walk_path"] = torch.tensor(path)
            tensors[f"{key}.confidence"] = confs.float()
            changed = sum(int(p != b) for p, b in zip(path, base.argmax(-1).tolist()))
            print(f"{key}: anchor {anchor}, the bias changed {changed}/{len(path)} slots, confidence "
                  f"{[round(float(c), 3) for c in confs]}")
            g = generate(ref, model, markov, conf, target, ids, 96, anchor_drafts)
            if g["output_ids"] != greedy(target, ids, 96)[:len(g["output_ids"])]:
                print(f"WARNING {key}: the DSpark output differs from the target's plain greedy decoding")
            al = g["acceptance_lengths"]
            changed = sum(a != b for st in g["steps"] for a, b in zip(st["drafted"], st["argmax"]))
            print(f"{key}: tau {sum(al) / len(al):.3f} over {len(al)} steps; the bias changed {changed} drafted tokens")
            goldens["generate"][key] = g
    # The hybrid target: the DFlash body of tests/data/models/dflash2-hybrid (its DFlash2 parts
    # left out: a plain DFlash drafter, 2 layers, H 128, block 8, layer 0 sliding 12 causal)
    # with its own heads, over qwen3_5-tiny-causallm; the loop recomputes the target from
    # scratch every step, so no cache crop is involved on the reference's side.
    body = os.path.join(a.out, "hybrid-body")
    os.makedirs(body, exist_ok=True)
    cfg = json.load(open(os.path.join(HYBRID_BODY, "config.json")))
    cfg["architectures"] = ["DFlashDraftModel"]
    for k in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
        cfg["dflash_config"].pop(k, None)
    json.dump(cfg, open(os.path.join(body, "config.json"), "w"))
    weights = {k: v for k, v in load_file(os.path.join(HYBRID_BODY, "model.safetensors")).items()
               if not any(p in k or k.startswith(p) for p in DFLASH2_PARTS)}
    save_file(weights, os.path.join(body, "model.safetensors"), metadata={"format": "pt"})
    htarget = transformers.AutoModelForCausalLM.from_pretrained(HYBRID_TARGET, dtype=torch.float32).eval()
    hmodel = ref.DFlashDraftModel.from_pretrained(body, dtype=torch.float32).eval()
    hV, hH = htarget.config.get_text_config().vocab_size, htarget.config.get_text_config().hidden_size
    hmarkov, hconf = make_heads(defs, hV, hH, a.out, "heads-hybrid.safetensors", 2041)
    hhead = ref._output_head(htarget)
    hprompt = json.load(open(DFLASH2_GOLDENS))["hybrid_prompt_ids"]
    goldens["hybrid_prompt_ids"] = hprompt
    hB = hmodel.block_size
    for layout, anchor_drafts in (("anchor", True), ("shifted", False)):
        first = 0 if anchor_drafts else 1
        key = f"hybrid-{layout}.h0"
        with torch.inference_mode():
            anchor = int(htarget(torch.tensor([hprompt])).logits[0, -1].argmax())
            hidden = drafter_call(ref, hmodel, htarget, list(hprompt) + [anchor], len(hprompt), hB)
            base = hmodel.compute_logits(hidden[first:], hhead)
            path, rows, confs = walk(hmarkov, hconf, hidden[first:], base, anchor)
        tensors[f"{key}.draft_hidden"] = hidden.float()
        tensors[f"{key}.base_logits"] = base.float()
        tensors[f"{key}.walk_logits"] = rows.float()
        tensors[f"{key}.walk_path"] = torch.tensor(path)
        tensors[f"{key}.confidence"] = confs.float()
        g = generate(ref, hmodel, hmarkov, hconf, htarget, hprompt, 48, anchor_drafts)
        if g["output_ids"] != greedy(htarget, hprompt, 48)[:len(g["output_ids"])]:
            print(f"WARNING {key}: the DSpark output differs from the target's plain greedy decoding")
        al = g["acceptance_lengths"]
        print(f"{key}: tau {sum(al) / len(al):.3f} over {len(al)} steps; acceptance {al}")
        goldens["generate"][key] = g
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(a.out, "dspark_tensors.safetensors"))
    json.dump(goldens, open(os.path.join(a.out, "dspark_goldens.json"), "w"))
    print("done")


if __name__ == "__main__":
    sys.exit(main())
