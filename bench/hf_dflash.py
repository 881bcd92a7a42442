"""The reference: the DFlash verification loop (../shared/docs/DFLASH.md section 4) as a
Python harness writes it today, with the target in HF transformers (bf16, its default SDPA
attention, DynamicCache) and the DFlash drafter (DFLASH.md sections 1-3) in plain PyTorch.
Times the same stages as bench/bench_engine.cpp, the same way (synchronise around each
repetition, median), and checks the prompt's tapped hidden states and logits argmax against
the engine's dump.
usage: python3 bench/hf_dflash.py --target DIR --drafter DIR --prompt-ids F --out F.json
              [--cpp-dump F.safetensors] [--cpp-exact-dump F.safetensors] [--cpp-json F.json]
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

dev = torch.device("cuda")


def sync():
    torch.cuda.synchronize()


def time_it(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    sync()
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def rms(x, w, eps=1e-6):  # HF Qwen3RMSNorm
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


class DraftCache:
    def __init__(self, n):
        self.k, self.v, self.len = [None] * n, [None] * n, 0

    def crop(self, n):
        self.k = [k[:, :n] for k in self.k]
        self.v = [v[:, :n] for v in self.v]
        self.len = n


class Drafter:
    """DFlash drafter (DFLASH.md section 3): context K/V from fc + hidden_norm of the target
    features, block K/V from the block's own rows, no mask, logits through the target head."""

    def __init__(self, d, target):
        self.cfg = json.load(open(os.path.join(d, "config.json")))
        self.w = load_file(os.path.join(d, "model.safetensors"), device="cuda")
        c = self.cfg
        self.n, self.hq, self.hkv, self.hd = c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.block = c["block_size"]
        self.mask_id = c["dflash_config"]["mask_token_id"]
        self.feat_idx = [i + 1 for i in c["dflash_config"]["target_layer_ids"]]
        self.embed = target.model.embed_tokens.weight
        self.head = target.lm_head.weight
        theta = c["rope_parameters"]["rope_theta"]
        inv = 1.0 / theta ** (torch.arange(0, self.hd, 2, dtype=torch.int64, device=dev).float() / self.hd)
        self.inv_freq = inv.to(torch.bfloat16).float()  # dtype="auto" rounds the buffer (docs/ENGINE.md)

    def draft(self, feats, block, cache):
        w, B, C, past = self.w, block.shape[0], feats.shape[0], cache.len
        freqs = torch.outer(torch.arange(past, past + C + B, device=dev).float(), self.inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)
        ctx = rms(F.linear(feats, w["fc.weight"]), w["hidden_norm.weight"])
        x = F.embedding(block, self.embed)
        for l in range(self.n):
            p = f"layers.{l}."
            xn = rms(x, w[p + "input_layernorm.weight"])
            q = rms(F.linear(xn, w[p + "self_attn.q_proj.weight"]).view(B, self.hq, self.hd), w[p + "self_attn.q_norm.weight"])
            kv = torch.cat([ctx, xn], 0)
            k = rms(F.linear(kv, w[p + "self_attn.k_proj.weight"]).view(C + B, self.hkv, self.hd), w[p + "self_attn.k_norm.weight"])
            v = F.linear(kv, w[p + "self_attn.v_proj.weight"]).view(C + B, self.hkv, self.hd)
            q = rotate(q.transpose(0, 1), cos[C:], sin[C:])
            k = rotate(k.transpose(0, 1), cos, sin)
            v = v.transpose(0, 1)
            if cache.k[l] is not None:
                k, v = torch.cat([cache.k[l], k], 1), torch.cat([cache.v[l], v], 1)
            cache.k[l], cache.v[l] = k[:, : past + C], v[:, : past + C]  # context rows only
            a = F.scaled_dot_product_attention(q[None], k[None], v[None], enable_gqa=True)[0]  # no mask
            x = x + F.linear(a.transpose(0, 1).reshape(B, -1), w[p + "self_attn.o_proj.weight"])
            h = rms(x, w[p + "post_attention_layernorm.weight"])
            x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"]),
                             w[p + "mlp.down_proj.weight"])
        cache.len = past + C
        return F.linear(rms(x, w["norm.weight"])[1:], self.head)  # [B-1, V]


def features(out, idx, rows=None):
    hs = [out.hidden_states[i][0] for i in idx]
    if rows is not None:
        hs = [h[:rows] for h in hs]
    return torch.cat(hs, -1)


@torch.inference_mode()
def dflash(model, drafter, prompt, max_new):
    """DFLASH.md section 4, greedy."""
    P, B = prompt.shape[0], drafter.block
    out = model(input_ids=prompt[None], use_cache=True, output_hidden_states=True, logits_to_keep=1)
    cache = out.past_key_values
    ctx = features(out, drafter.feat_idx)
    anchor = out.logits[0, -1].argmax()
    tokens = [int(anchor.item())]
    start, dcache, steps = P, DraftCache(drafter.n), []
    while start < P + max_new:
        block = torch.full((B,), drafter.mask_id, dtype=torch.long, device=dev)
        block[0] = anchor
        block[1:] = drafter.draft(ctx, block, dcache).argmax(-1)
        out = model(input_ids=block[None], past_key_values=cache, use_cache=True, output_hidden_states=True)
        post = out.logits[0].argmax(-1)
        acc = int((block[1:] == post[:-1]).cumprod(0).sum().item())
        tokens += torch.cat([block[1 : acc + 1], post[acc : acc + 1]]).tolist()
        start += acc + 1
        cache.crop(start)  # as the official loop (HF 5.17 prefers crop(-n); same effect)
        ctx = features(out, drafter.feat_idx, acc + 1)
        anchor = post[acc]
        steps.append(acc + 1)
    return tokens[:max_new], steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--drafter", required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--e2e-reps", type=int, default=2)
    ap.add_argument("--cpp-dump")
    ap.add_argument("--cpp-exact-dump")
    ap.add_argument("--cpp-json")
    a = ap.parse_args()
    import transformers

    res = {"label": "hf-transformers", "transformers": transformers.__version__, "torch": torch.__version__}
    torch.empty(1, device=dev)
    sync()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(a.target, dtype=torch.bfloat16, device_map="cuda")
    model.eval()
    drafter = Drafter(a.drafter, model)
    sync()
    res["load_s"] = time.perf_counter() - t0
    res["attn_implementation"] = model.config._attn_implementation
    wbytes = sum(p.numel() * p.element_size() for p in model.parameters()) + sum(t.numel() * 2 for t in drafter.w.values())
    res["weight_bytes"] = wbytes
    res["load_gbps"] = wbytes / res["load_s"] / 1e9
    res["peak_load_bytes"] = torch.cuda.max_memory_allocated()

    prompt = torch.tensor(json.load(open(a.prompt_ids)), dtype=torch.long, device=dev)
    P, B = prompt.shape[0], drafter.block
    with torch.inference_mode():
        def prefill():
            out = model(input_ids=prompt[None], use_cache=True, output_hidden_states=True, logits_to_keep=1)
            features(out, drafter.feat_idx)
            return out, int(out.logits[0, -1].argmax().item())

        res["prefill_ms"] = statistics.median(time_it(prefill, 1, 5))
        out, anchor = prefill()
        cache = out.past_key_values
        ctx = features(out, drafter.feat_idx)
        block = torch.full((B,), drafter.mask_id, dtype=torch.long, device=dev)
        block[0] = anchor
        dcache = DraftCache(drafter.n)
        drafter.draft(ctx, block, dcache)
        ctx1 = ctx[P - 1 : P]
        holder = {}

        def draft_step():
            holder["d"] = drafter.draft(ctx1, block, dcache).argmax(-1).cpu()
            dcache.crop(P)

        res["draft_ms"] = statistics.median(time_it(draft_step, 3, a.reps))
        vids = torch.cat([block[:1], holder["d"].to(dev)])

        def verify_step():
            o = model(input_ids=vids[None], past_key_values=cache, use_cache=True, output_hidden_states=True)
            features(o, drafter.feat_idx)
            o.logits[0].argmax(-1).cpu()
            cache.crop(P)

        res["verify_ms"] = statistics.median(time_it(verify_step, 3, a.reps))
        del out, cache

        sync()
        t0 = time.perf_counter()
        dflash(model, drafter, prompt, a.new)  # first full run: new key lengths (cuDNN plans)
        sync()
        res["e2e_cold_ms"] = (time.perf_counter() - t0) * 1e3
        e2e = []
        torch.cuda.reset_peak_memory_stats()
        for _ in range(a.e2e_reps):
            sync()
            t0 = time.perf_counter()
            toks, steps = dflash(model, drafter, prompt, a.new)
            sync()
            e2e.append((time.perf_counter() - t0) * 1e3)
        res["e2e_ms"] = statistics.median(e2e)
        res["e2e_all_ms"] = e2e
        res["steps"] = len(steps)
        res["tau"] = sum(steps) / len(steps)
        res["output_ids"] = toks
        res["peak_run_bytes"] = torch.cuda.max_memory_allocated()

        if a.cpp_dump:  # numerical check: engine bf16 vs HF bf16 on the prompt
            out = model(input_ids=prompt[None], use_cache=False, output_hidden_states=True)
            hf_h = {i: out.hidden_states[i][0].float() for i in drafter.feat_idx}
            hf_arg = out.logits[0].argmax(-1)
            del out
            # float32 reference of the same weights (bf16 -> fp32 is exact): how far each bf16
            # computation is from the exact function.
            model.float()
            ref = model(input_ids=prompt[None], use_cache=False, output_hidden_states=True)
            ref_h = {i: ref.hidden_states[i][0] for i in drafter.feat_idx}
            ref_arg = ref.logits[0].argmax(-1)
            del ref
            model.to(torch.bfloat16)

            def compare(x, y):
                cos = F.cosine_similarity(x, y, dim=-1)
                return {"cos_min": cos.min().item(), "cos_mean": cos.mean().item(),
                        "rel_l2": ((x - y).norm() / y.norm()).item()}

            res["numerics_hf_vs_fp32"] = {f"layer_{i - 1}": compare(hf_h[i], ref_h[i]) for i in drafter.feat_idx}
            res["numerics_hf_vs_fp32"]["logits_argmax_agreement"] = (hf_arg == ref_arg).float().mean().item()
            for key, path in (("numerics", a.cpp_dump), ("numerics_exact", a.cpp_exact_dump)):
                if not path:
                    continue
                cpp = load_file(path, device="cuda")
                check = {f"layer_{i - 1}": compare(cpp[f"hidden.{i - 1}"].float(), hf_h[i]) for i in drafter.feat_idx}
                check["logits_argmax_agreement"] = (hf_arg == cpp["logits_argmax"]).float().mean().item()
                check["cos_min_all"] = min(v["cos_min"] for k, v in check.items() if k.startswith("layer_"))
                fp = {f"layer_{i - 1}": compare(cpp[f"hidden.{i - 1}"].float(), ref_h[i]) for i in drafter.feat_idx}
                fp["logits_argmax_agreement"] = (ref_arg == cpp["logits_argmax"]).float().mean().item()
                res[key] = check
                res[key + "_vs_fp32"] = fp
        if a.cpp_json:
            ours = json.load(open(a.cpp_json))["output_ids"]
            same = 0
            while same < min(len(ours), len(toks)) and ours[same] == toks[same]:
                same += 1
            res["output_common_prefix"] = same
    json.dump(res, open(a.out, "w"), indent=1)
    print(f"hf: load {res['load_s']:.2f} s ({res['load_gbps']:.2f} GB/s), prefill {res['prefill_ms']:.2f} ms, "
          f"draft {res['draft_ms']:.2f} ms, verify {res['verify_ms']:.2f} ms, e2e {res['e2e_ms']:.1f} ms, steps {res['steps']}")


if __name__ == "__main__":
    main()
