#!/usr/bin/env python3
"""Runs `draftscope-cli diagnose` on the fixture drafters (and on copies whose config.json
declares a convention the weights were not trained with) and checks that every drafter gets
exactly the convention findings it should: the same expectations as tests/tst_diagnose.cpp,
for any --device/--dtype (issue 15, item 4: the findings on CUDA in bfloat16 equal those on
the CPU in float32).

    python3 tools/check_diagnose.py --cli build-cuda/app/draftscope-cli --device cuda --dtype bfloat16
    python3 tools/check_diagnose.py --cli build/app/draftscope-cli            # CPU, float32

Prints one line per drafter (probe tau, convention findings, expected, seconds) and the
cost the CLI printed; exits 1 when a drafter's findings differ from the expected ones.
Standard library only.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "resources/demo/target"
GOOD = REPO / "resources/demo/drafter"
MODELS = REPO / "tests/data/models"
CONVENTION_IDS = ("context-leak", "label-shift")


def edited_copy(src: Path, dst: Path, edit) -> Path:
    """Copies a drafter directory and applies `edit` to its config.json."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    edit(cfg)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


def lost_window(cfg):
    cfg.pop("sliding_window", None)
    cfg.pop("use_sliding_window", None)
    cfg["layer_types"] = ["full_attention"] * len(cfg.get("layer_types", [0, 0]))


def cases(tmp: Path):
    """(name, drafter directory, expected convention finding ids)."""
    return [
        ("drafter-good", GOOD, []),
        ("drafter-swa", MODELS / "drafter-swa", []),
        ("drafter-modelopt-swa", MODELS / "drafter-modelopt-swa", []),
        ("drafter-anchor-leak", MODELS / "drafter-anchor-leak", ["context-leak"]),
        ("drafter-label-shift", MODELS / "drafter-label-shift", ["label-shift"]),
        ("swa, window keys removed", edited_copy(MODELS / "drafter-swa", tmp / "lost-window", lost_window),
         ["convention-window"]),
        ("swa, is_causal false", edited_copy(MODELS / "drafter-swa", tmp / "bidirectional",
                                             lambda c: c.__setitem__("is_causal", False)),
         ["convention-block-causal"]),
        ("good, taps [2, 3, 5]", edited_copy(GOOD, tmp / "deeper-taps",
                                             lambda c: c["dflash_config"].__setitem__("target_layer_ids", [2, 3, 5])),
         ["convention-tap-offset"]),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", default=str(REPO / "build/app/draftscope-cli"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--probes", default="context-leak,label-shift,block-causal,position-offset,tap-offset,window")
    ap.add_argument("--out", help="folder for the diagnose JSON files (default: a temporary one)")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        out = Path(args.out) if args.out else tmp / "json"
        out.mkdir(parents=True, exist_ok=True)
        for i, (name, drafter, expected) in enumerate(cases(tmp)):
            js = out / f"{i}-{drafter.name}.json"
            t0 = time.time()
            p = subprocess.run([args.cli, "diagnose", "--target", str(TARGET), "--drafter", str(drafter),
                                "--device", args.device, "--dtype", args.dtype, "--probes", args.probes,
                                "--json", str(js)], capture_output=True, text=True)
            secs = time.time() - t0
            if p.returncode != 0:
                print(f"FAIL {name}: exit {p.returncode}\n{p.stderr[-2000:]}")
                failed += 1
                continue
            d = json.loads(js.read_text())["drafters"][0]
            got = sorted(f["id"] for f in d["findings"]
                         if f["id"].startswith("convention-") or f["id"] in CONVENTION_IDS)
            ok = got == sorted(expected)
            failed += not ok
            cost = next((l.strip() for l in p.stdout.splitlines() if l.strip().startswith("cost:")), "")
            print(f"{'ok  ' if ok else 'FAIL'} {name:26s} probe tau {d['probe']['tau']:.3f}  findings {got}"
                  f" expected {sorted(expected)} ({secs:.1f} s)")
            for c in d["convention_probes"]:
                print(f"       {c['family']:16s} {c['tau']:.3f} gain {c['difference']:+.3f} "
                      f"[{c['difference_lower']:+.3f}, {c['difference_upper']:+.3f}] {c['alternative']}"
                      f"{'  FINDING' if c['finding'] else ''}")
            print(f"       {cost}")
    print(f"{args.device} {args.dtype}: {'all findings as expected' if not failed else f'{failed} drafter(s) differ'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
