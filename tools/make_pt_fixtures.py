#!/usr/bin/env python3
"""Writes torch.save training checkpoints of a DFlash drafter, nested the ways trainers
nest them, for draftscope's .pt loader tests (tests/data/pt/). Run where torch exists:
    python3 tools/make_pt_fixtures.py resources/demo/drafter OUTDIR
Outputs (bf16 kept; only trainer.pt holds the whole drafter, the others the SMALL subset
of its tensors below, to keep the repository small; each equals the safetensors twin):
  trainer.pt        {"model": {"module._orig_mod.<key>": t}, "optimizer": {...}, "step": 40000, ...}
  state_dict.pt     {"state_dict": OrderedDict("_orig_mod.<key>": t)}, float32, subset
  draft_model.pt    {"draft_model": {"module.<key>": t}, "config": {...}} (views of one storage), subset
  flat.pt           OrderedDict(<key>: t), subset
  namespace.pt      {"model": subset, "args": argparse.Namespace(lr=1e-4)}  -> must be refused
  legacy.pt         flat subset, _use_new_zipfile_serialization=False      -> must be refused
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
SMALL = [k for k in keys if k.endswith("norm.weight")]  # the RMSNorm weights: a few KB

opt_state = {i: {"step": torch.tensor(40000.0), "exp_avg": torch.zeros_like(sd[k], dtype=torch.float32)}
             for i, k in enumerate(keys[:3])}
torch.save({"model": collections.OrderedDict(("module._orig_mod." + k, sd[k]) for k in keys),
            "optimizer": {"state": opt_state, "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.95), "params": [0, 1, 2]}]},
            "step": 40000, "epoch": 3, "loss": 1.234, "tag": "run-17", "done": False, "extra": None},
           os.path.join(out, "trainer.pt"))
torch.save({"state_dict": collections.OrderedDict(("_orig_mod." + k, sd[k].float()) for k in SMALL)},
           os.path.join(out, "state_dict.pt"))
# Views sharing one storage, as parameters of a model that was flattened.
flat = torch.cat([sd[k].reshape(-1) for k in SMALL])
views, off = {}, 0
for k in SMALL:
    n = sd[k].numel()
    views["module." + k] = flat[off:off + n].view(sd[k].shape)
    off += n
torch.save({"draft_model": views, "config": cfg}, os.path.join(out, "draft_model.pt"))
torch.save(collections.OrderedDict((k, sd[k]) for k in SMALL), os.path.join(out, "flat.pt"))
torch.save({"model": collections.OrderedDict((k, sd[k]) for k in SMALL), "args": argparse.Namespace(lr=1e-4)},
           os.path.join(out, "namespace.pt"))
torch.save(collections.OrderedDict((k, sd[k]) for k in SMALL), os.path.join(out, "legacy.pt"),
           _use_new_zipfile_serialization=False)
# Round-trip check with torch itself.
for name in ["trainer.pt", "state_dict.pt", "draft_model.pt", "flat.pt"]:
    obj = torch.load(os.path.join(out, name), weights_only=True)
    print(name, "ok", type(obj).__name__)
print("small subset:", SMALL)
print("torch", torch.__version__)
