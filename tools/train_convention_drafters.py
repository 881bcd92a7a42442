#!/usr/bin/env python3
"""Train small DFlash drafters for the demo target, one per training convention.

These drafters calibrate `draftscope-cli diagnose`'s convention probes (docs/DIAGNOSE.md):
each is trained with the DFlash recipe of DFLASH.md section 6 except for one deliberate
convention change, while its config.json declares the standard convention, which is
exactly the silent mismatch diagnose must name. Two clean drafters (different seeds) and
two weak ones (undertrained; noisy labels) must get no convention finding.

Own code from the recipe (no reference code copied):
  * data: Python source (the interpreter's standard library) cut into 64-token prompts,
    continued greedily by the target for --gen tokens; the features are the target's
    hidden states of the whole sequence (HF `hidden_states`, index 0 = embeddings);
  * packed training: N random anchors per sequence, KV = [context S | N blocks]; a block row
    sees context kv < anchor (strict) and its own block (bidirectional), block i at
    positions a_i .. a_i+B-1, same-position labels (row k learns token a_i+k), loss weight
    exp(-(k-1)/7); the target's embeddings and LM head are frozen and not stored.

Conventions (`--only` selects some): see CONVENTIONS below.

Runs on the GPU machine (torch 2.x, transformers, tokenizers); writes one directory per
drafter under --out and a manifest.json with the settings and final losses. Also checks the
drafter forward against goldens.safetensors (draft_hidden of drafter-good) with --check
(the goldens come from the April 2026 reference, so the check rounds inv_freq to bf16; it
matches to about 1.5e-6 relative).

On one H200: about 13 ms a step alone (one layer); 3 processes side by side keep that pace,
10 do not (they slow each other and ran out of time and memory: each holds its features,
7.5 GB). The calibration sets of docs/DIAGNOSE.md (two layers, 4000 steps, about 80 s a
drafter) were made in one call of the device tool, five processes each training its group
for both sets one after the other (440 s):
  for g in clean-s1,weak-short,causal-block clean-s2,weak-noisy window-lost,anchor-leak \
           position-plus1,label-shift tap-minus1; do
    (python3 tools/train_convention_drafters.py --layers 2 --steps 4000 --out /tmp/c/a2 --only $g \
        --seed-base 200 --data-seed 2 --manifest m-$g.json;
     python3 tools/train_convention_drafters.py --layers 2 --steps 4000 --out /tmp/c/h2 --only $g \
        --seed-base 300 --data-seed 3 --suffix=-h --manifest m-$g.json) & done; wait
Then `tools/calibrate_diagnose.py` runs diagnose on them and prints the table.
"""
import argparse
import glob
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# name -> (description, training convention overrides, declared config overrides)
CONVENTIONS = {
    "clean-s1": ("correct recipe, seed 1", {}, {}),
    "clean-s2": ("correct recipe, seed 2", {"seed": 2}, {}),
    "causal-block": ("causal mask inside the block; config declares the bidirectional base layout",
                     {"causal": True}, {}),
    "position-plus1": ("block rows at positions a+1 .. a+B (ctx_len+1 harness); context positions unchanged",
                       {"pos_offset": 1}, {}),
    "tap-minus1": ("features from hidden_states[id] instead of hidden_states[id+1]",
                   {"tap_offset": -1}, {}),
    "window-lost": ("trained bidirectional with a 32-key sliding window; config declares no window",
                    {"window": 32}, {}),
    "anchor-leak": ("context kv <= anchor (the anchor's own feature leaks)", {"leak": True}, {}),
    "label-shift": ("labels shifted by one (row k learns token a+k+1)", {"label_shift": 1}, {}),
    "weak-short": ("correct recipe, 1/25 of the steps (undertrained)", {"steps_div": 25}, {}),
    "weak-noisy": ("correct recipe, 40% of labels replaced by random tokens", {"noise": 0.4}, {}),
}


def rms_norm(x, w, eps):
    dtype = x.dtype
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return xf.to(dtype) * w


class Norm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class Attn(nn.Module):
    def __init__(self, H, nh, nkv, hd, eps):
        super().__init__()
        self.nh, self.nkv, self.hd = nh, nkv, hd
        self.q_proj = nn.Linear(H, nh * hd, bias=False)
        self.k_proj = nn.Linear(H, nkv * hd, bias=False)
        self.v_proj = nn.Linear(H, nkv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, H, bias=False)
        self.q_norm = Norm(hd, eps)
        self.k_norm = Norm(hd, eps)


class MLP(nn.Module):
    def __init__(self, H, I):
        super().__init__()
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, H, nh, nkv, hd, I, eps):
        super().__init__()
        self.input_layernorm = Norm(H, eps)
        self.post_attention_layernorm = Norm(H, eps)
        self.self_attn = Attn(H, nh, nkv, hd, eps)
        self.mlp = MLP(H, I)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def rope(x, pos, theta, inv_round=None):
    """x [Bt, S, h, hd], pos [Bt, S] absolute positions; rotate-half RoPE in float32.
    inv_round: a dtype inv_freq is rounded through (the April 2026 reference rounded it
    through the checkpoint dtype; the current one keeps float32)."""
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd))
    if inv_round is not None:
        inv = inv.to(inv_round).float()
    fr = pos.float()[..., None] * inv
    emb = torch.cat([fr, fr], -1)
    cos, sin = emb.cos()[:, :, None, :], emb.sin()[:, :, None, :]
    return (x.float() * cos + rotate_half(x.float()) * sin).to(x.dtype)


class Drafter(nn.Module):
    """DFlash drafter (DFLASH.md section 3); tensor names as in released checkpoints."""

    def __init__(self, H, nh, nkv, hd, I, K, n_layers, eps, theta):
        super().__init__()
        self.fc = nn.Linear(K * H, H, bias=False)
        self.hidden_norm = Norm(H, eps)
        self.layers = nn.ModuleList([Layer(H, nh, nkv, hd, I, eps) for _ in range(n_layers)])
        self.norm = Norm(H, eps)
        self.theta = theta
        self.inv_round = None

    def forward(self, feats, block_emb, ctx_pos, blk_pos, visible):
        """feats [Bt,C,K*H], block_emb [Bt,Q,H], ctx_pos [Bt,C], blk_pos [Bt,Q],
        visible [Bt,Q,C+Q] bool -> normed block hidden [Bt,Q,H]."""
        c = self.hidden_norm(self.fc(feats))
        x = block_emb
        Bt, Q, _ = x.shape
        kpos = torch.cat([ctx_pos, blk_pos], 1)
        for L in self.layers:
            a = L.self_attn
            xn = L.input_layernorm(x)
            q = a.q_norm(a.q_proj(xn).view(Bt, Q, a.nh, a.hd))
            kin = torch.cat([c, xn], 1)
            k = a.k_norm(a.k_proj(kin).view(Bt, -1, a.nkv, a.hd))
            v = a.v_proj(kin).view(Bt, -1, a.nkv, a.hd)
            q, k = rope(q, blk_pos, self.theta, self.inv_round), rope(k, kpos, self.theta, self.inv_round)
            rep = a.nh // a.nkv
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=visible[:, None])
            x = x + a.o_proj(o.transpose(1, 2).reshape(Bt, Q, a.nh * a.hd))
            x = x + L.mlp(L.post_attention_layernorm(x))
        return self.norm(x)


def load_target(path, device):
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).eval()
    return m


def check_against_golden(target, repo, device):
    """drafter-good through this file's Drafter vs the reference draft_hidden (DFLASH.md section 3)."""
    from safetensors.torch import load_file
    g = json.load(open(os.path.join(repo, "tests/data/goldens.json")))
    gt = load_file(os.path.join(repo, "tests/data/goldens.safetensors"))
    cfg = json.load(open(os.path.join(repo, "resources/demo/drafter/config.json")))
    sd = load_file(os.path.join(repo, "resources/demo/drafter/model.safetensors"))
    d = make_drafter(cfg, device)
    d.load_state_dict({k: v.float() for k, v in sd.items()})
    d.inv_round = torch.bfloat16  # the goldens come from the April 2026 reference
    ids = cfg["dflash_config"]["target_layer_ids"]
    worst = 0.0
    for p in [k.split(".")[0][1:] for k in gt if k.endswith(".drafter-good.draft_hidden")]:
        pid = torch.tensor([g["prompt_ids"][p]], device=device)
        with torch.no_grad():
            out = target(input_ids=pid, output_hidden_states=True)
            feats = torch.cat([out.hidden_states[i + 1] for i in ids], -1)
            T = pid.shape[1]
            anchor = out.logits[0, -1].argmax().item()
            B = cfg["block_size"]
            block = torch.full((1, B), cfg["dflash_config"]["mask_token_id"], device=device)
            block[0, 0] = anchor
            emb = target.get_input_embeddings()(block)
            ctx_pos = torch.arange(T, device=device)[None]
            blk_pos = torch.arange(T, T + B, device=device)[None]
            vis = torch.ones(1, B, T + B, dtype=torch.bool, device=device)
            h = d(feats, emb, ctx_pos, blk_pos, vis)[0]
        ref = gt[f"p{p}.drafter-good.draft_hidden"].to(device)
        rel = ((h - ref).abs().max() / ref.abs().max()).item()
        worst = max(worst, rel)
        print(f"check p{p}: max abs diff / max abs = {rel:.2e}", flush=True)
    if worst > 1e-4:
        sys.exit(f"drafter forward does not match the golden (rel {worst:.2e})")


def make_drafter(cfg, device):
    return Drafter(cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"],
                   cfg["intermediate_size"], len(cfg["dflash_config"]["target_layer_ids"]), cfg["num_hidden_layers"],
                   cfg["rms_norm_eps"], cfg["rope_parameters"]["rope_theta"]).to(device)


def build_data(target, repo, device, n_seq, prompt_len, gen, corpus_glob, seed):
    """Greedy continuations of source-code prompts and all their hidden states."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(repo, "resources/demo/target/tokenizer.json"))
    files = sorted(f for f in glob.glob(corpus_glob, recursive=True) if "/test" not in f)
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(files), generator=g).tolist()
    prompts = []
    for i in order:
        try:
            text = open(files[i], encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        ids = tok.encode(text).ids
        for s in range((seed * 331) % 997, len(ids) - prompt_len, 997):
            prompts.append(ids[s:s + prompt_len])
            if len(prompts) >= n_seq:
                break
        if len(prompts) >= n_seq:
            break
    print(f"data: {len(prompts)} prompts from {len(files)} files", flush=True)
    seqs, hs = [], []
    with torch.no_grad():
        for b in range(0, len(prompts), 512):
            x = torch.tensor(prompts[b:b + 512], device=device)
            out = target(input_ids=x, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[:, -1].argmax(-1)
            gen_ids = [nxt]
            for _ in range(gen - 1):
                out = target(input_ids=nxt[:, None], past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1)
                gen_ids.append(nxt)
            full = torch.cat([x, torch.stack(gen_ids, 1)], 1)
            out = target(input_ids=full, output_hidden_states=True)
            seqs.append(full)
            hs.append(torch.stack(out.hidden_states, 2).to(torch.bfloat16))  # [b, S, L+1, H]
    return torch.cat(seqs), torch.cat(hs)


def train_one(name, conv, target, seqs, hs, base_cfg, args, device):
    over = dict(conv[1])
    seed = over.get("seed", 1) + args.seed_base
    torch.manual_seed(seed)
    cfg = json.loads(json.dumps(base_cfg))
    d = make_drafter(cfg, device)
    for n, p in d.named_parameters():
        if p.dim() == 2:
            nn.init.normal_(p, std=0.02)
    embed = target.get_input_embeddings().weight.detach()
    head = target.get_output_embeddings().weight.detach()
    ids = cfg["dflash_config"]["target_layer_ids"]
    tap = over.get("tap_offset", 0)
    taps = [i + 1 + tap for i in ids]
    B = cfg["block_size"]
    mask_id = cfg["dflash_config"]["mask_token_id"]
    causal, window = over.get("causal", False), over.get("window")
    leak, shift = over.get("leak", False), over.get("label_shift", 0)
    pos_off, noise = over.get("pos_offset", 0), over.get("noise", 0.0)
    steps = args.steps // over.get("steps_div", 1)
    N, S = seqs.shape
    nb, bt = args.blocks, args.batch
    lo = args.prompt_len  # anchors inside the generated part
    hi = S - B - 1        # room for the shifted label too
    opt = torch.optim.AdamW(d.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    kk = torch.arange(1, B, device=device)
    wts = torch.exp(-(kk - 1).float() / 7.0)
    o = torch.arange(B, device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    t0 = time.time()
    losses = []
    for step in range(steps):
        si = torch.randint(0, N, (bt,), device=device, generator=gen)
        seq = seqs[si]                                     # [bt, S]
        feats = hs[si][:, :, taps].flatten(2).float()      # [bt, S, K*H]
        anchors = torch.stack([torch.randperm(hi - lo, device=device, generator=gen)[:nb] + lo
                               for _ in range(bt)]).sort(1).values  # [bt, nb]
        qpos = (anchors[:, :, None] + o).reshape(bt, nb * B)           # token positions of block rows
        blk = torch.full((bt, nb, B), mask_id, device=device)
        blk[:, :, 0] = seq.gather(1, anchors)
        emb = embed[blk.reshape(bt, nb * B)]
        # visibility [bt, nb*B, S + nb*B]
        a_q = anchors[:, :, None].expand(bt, nb, B).reshape(bt, nb * B)
        j = torch.arange(S, device=device)
        ctx_vis = (j[None, None] <= a_q[:, :, None]) if leak else (j[None, None] < a_q[:, :, None])
        bi = torch.arange(nb, device=device).repeat_interleave(B)
        ob = o.repeat(nb)
        blk_vis = (bi[:, None] == bi[None, :])[None].expand(bt, -1, -1)
        if causal:
            blk_vis = blk_vis & (ob[None, :] <= ob[:, None])[None]
        if window is not None:
            ctx_vis = ctx_vis & (qpos[:, :, None] - j[None, None] < window)
            d_o = (ob[:, None] - ob[None, :]).abs()[None]
            blk_vis = blk_vis & (d_o < window)
        vis = torch.cat([ctx_vis, blk_vis], 2)
        ctx_pos = j[None].expand(bt, S)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = d(feats, emb, ctx_pos, qpos + pos_off, vis)
            h = h.view(bt, nb, B, -1)[:, :, 1:]
            logits = h.float() @ head.T                         # [bt, nb, B-1, V]
        lab_pos = anchors[:, :, None] + kk + shift
        labels = seq.gather(1, lab_pos.reshape(bt, -1)).view(bt, nb, B - 1)
        if noise > 0:
            flip = torch.rand(labels.shape, device=device, generator=gen) < noise
            labels = torch.where(flip, torch.randint(0, head.shape[0], labels.shape, device=device,
                                                     generator=gen), labels)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                             reduction="none").view(bt, nb, B - 1)
        loss = (ce * wts).sum(-1).mean() / wts.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(d.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0 or step == steps - 1:
            losses.append(loss.item())
        if step % 500 == 0:
            print(f"{name}: step {step}/{steps} loss {loss.item():.3f} ({time.time() - t0:.0f} s)", flush=True)
    return d, cfg, losses, time.time() - t0


def save(d, cfg, name, desc, over, losses, secs, out):
    from safetensors.torch import save_file
    p = os.path.join(out, name)
    os.makedirs(p, exist_ok=True)
    save_file({k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in d.state_dict().items()},
              os.path.join(p, "model.safetensors"))
    json.dump(cfg, open(os.path.join(p, "config.json"), "w"), indent=2)
    return {"name": name, "description": desc, "trained_with": over, "final_loss": losses[-1],
            "loss_curve_every_50": losses, "seconds": secs}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated convention names (default: all)")
    ap.add_argument("--check", action="store_true", help="check the drafter forward against the goldens first")
    ap.add_argument("--seqs", type=int, default=4096)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--gen", type=int, default=192)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--intermediate", type=int, default=256)
    ap.add_argument("--corpus", default="/usr/lib/python3*/**/*.py")
    ap.add_argument("--seed-base", type=int, default=0, help="added to every drafter's seed (a second set)")
    ap.add_argument("--data-seed", type=int, default=0, help="seed of the prompt sampling")
    ap.add_argument("--suffix", default="", help="appended to each drafter's directory name")
    ap.add_argument("--manifest", default="manifest.json", help="file name of the manifest under --out")
    args = ap.parse_args()
    device = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    target = load_target(os.path.join(args.repo, "resources/demo/target"), device)
    if args.check:
        check_against_golden(target, args.repo, device)
    t0 = time.time()
    seqs, hs = build_data(target, args.repo, device, args.seqs, args.prompt_len, args.gen, args.corpus, args.data_seed)
    print(f"data: {tuple(seqs.shape)} tokens, hidden states {tuple(hs.shape)} in {time.time() - t0:.0f} s", flush=True)
    base = json.load(open(os.path.join(args.repo, "resources/demo/drafter/config.json")))
    base["num_hidden_layers"] = args.layers
    base["layer_types"] = ["full_attention"] * args.layers
    base["intermediate_size"] = args.intermediate
    names = [n for n in CONVENTIONS if not args.only or n in args.only.split(",")]
    manifest = {"target": "resources/demo/target", "settings": vars(args), "drafters": []}
    os.makedirs(args.out, exist_ok=True)
    for n in names:
        desc, over, _ = CONVENTIONS[n]
        d, cfg, losses, secs = train_one(n, CONVENTIONS[n], target, seqs, hs, base, args, device)
        manifest["drafters"].append(save(d, cfg, n + args.suffix, desc, over, losses, secs, args.out))
        print(f"{n}: final loss {losses[-1]:.3f} in {secs:.0f} s", flush=True)
        # Written after every drafter, so a run cut short by a time limit keeps what it trained.
        json.dump(manifest, open(os.path.join(args.out, args.manifest), "w"), indent=2)


if __name__ == "__main__":
    main()
