#!/usr/bin/env python3
"""Writes torch.save training checkpoints of a DFlash drafter, nested the ways trainers
nest them, for draftscope's .pt loader tests (tests/data/pt/). Run where torch exists:
    python3 tools/make_pt_fixtures.py resources/demo/drafter OUTDIR
Outputs (each state dict equals the safetensors one; bf16 kept):
  trainer.pt        {"model": {"module._orig_mod.<key>": t}, "optimizer": {...}, "step": 40000, ...}
  state_dict.pt     {"state_dict": OrderedDict("_orig_mod.<key>": t)}, float32
  draft_model.pt    {"draft_model": {"module.<key>": t}, "config": {...}} (tied storage views)
  flat.pt           OrderedDict(<key>: t)
  namespace.pt      {"model": ..., "args": argparse.Namespace(lr=1e-4)}   -> must be refused
  legacy.pt         flat, _use_new_zipfile_serialization=False           -> must be refused
"""
import argparse
import collections
import json
import os
import sys

import torch
from safetensors.torch import load_file

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
sd = load_file(os.path.join(src, "model.safetensors"))
cfg = json.load(open(os.path.join(src, "config.json")))
keys = sorted(sd)

opt_state = {i: {"step": torch.tensor(40000.0), "exp_avg": torch.zeros_like(sd[k], dtype=torch.float32)}
             for i, k in enumerate(keys[:3])}
torch.save({"model": collections.OrderedDict(("module._orig_mod." + k, sd[k]) for k in keys),
            "optimizer": {"state": opt_state, "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.95), "params": [0, 1, 2]}]},
            "step": 40000, "epoch": 3, "loss": 1.234, "tag": "run-17", "done": False, "extra": None},
           os.path.join(out, "trainer.pt"))
torch.save({"state_dict": collections.OrderedDict(("_orig_mod." + k, sd[k].float()) for k in keys)},
           os.path.join(out, "state_dict.pt"))
# Views sharing one storage, as parameters of a model that was flattened.
flat = torch.cat([sd[k].reshape(-1) for k in keys])
views, off = {}, 0
for k in keys:
    n = sd[k].numel()
    views["module." + k] = flat[off:off + n].view(sd[k].shape)
    off += n
torch.save({"draft_model": views, "config": cfg}, os.path.join(out, "draft_model.pt"))
torch.save(collections.OrderedDict((k, sd[k]) for k in keys), os.path.join(out, "flat.pt"))
torch.save({"model": collections.OrderedDict((k, sd[k]) for k in keys), "args": argparse.Namespace(lr=1e-4)},
           os.path.join(out, "namespace.pt"))
torch.save(collections.OrderedDict((k, sd[k]) for k in keys), os.path.join(out, "legacy.pt"),
           _use_new_zipfile_serialization=False)
# Round-trip check with torch itself.
for name in ["trainer.pt", "state_dict.pt", "draft_model.pt", "flat.pt"]:
    obj = torch.load(os.path.join(out, name), weights_only=True)
    print(name, "ok", type(obj).__name__)
print("torch", torch.__version__)
