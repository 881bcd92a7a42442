#!/usr/bin/env python3
"""Calibration table of `draftscope-cli diagnose` on drafters trained with a known convention
(issue 15): runs diagnose on every drafter that tools/train_convention_drafters.py wrote into
the given folders, compares its convention findings with the one its training convention
should produce, and prints a Markdown table (the one in docs/DIAGNOSE.md) plus the per-family
summary: bug drafters named correctly, clean and weak drafters given a finding (false positives).

    python3 tools/calibrate_diagnose.py --cli build/app/draftscope-cli calib/a calib/h
    python3 tools/calibrate_diagnose.py --cli build-cuda/app/draftscope-cli --device cuda \\
        --dtype bfloat16 --json calib.json calib/h

A folder holds the trainer's manifest(s) (*.json with "drafters": [{name, trained_with}]) and
one sub-folder per drafter. The expected finding follows from `trained_with` alone (never from
the drafter's name). Exits 1 when a drafter's findings differ from the expected ones.
Standard library only.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# trained_with key of tools/train_convention_drafters.py -> the finding diagnose should raise.
EXPECTED_BY_KEY = {
    "causal": "convention-block-causal",
    "pos_offset": "convention-position-offset",
    "tap_offset": "convention-tap-offset",
    "window": "convention-window",
    "leak": "context-leak",
    "label_shift": "label-shift",
}
# Keys of drafters that follow the declared convention (no finding expected).
CLEAN_KEYS = {"seed", "steps_div", "noise"}


def expected_findings(trained_with: dict) -> list:
    unknown = set(trained_with) - set(EXPECTED_BY_KEY) - CLEAN_KEYS
    if unknown:
        raise SystemExit(f"unknown trained_with key(s) {sorted(unknown)}: extend EXPECTED_BY_KEY")
    return sorted(EXPECTED_BY_KEY[k] for k in trained_with if k in EXPECTED_BY_KEY)


def kind_of(trained_with: dict) -> str:
    if any(k in EXPECTED_BY_KEY for k in trained_with):
        return "bug"
    return "weak" if ("steps_div" in trained_with or "noise" in trained_with) else "clean"


def drafters_in(folder: Path):
    for manifest in sorted(folder.glob("*.json")):
        try:
            entries = json.loads(manifest.read_text()).get("drafters", [])
        except (json.JSONDecodeError, AttributeError):
            continue
        for d in entries:
            path = folder / d["name"]
            if (path / "config.json").is_file():
                yield d["name"], path, d.get("trained_with", {})


def is_convention_finding(fid: str) -> bool:
    return fid.startswith("convention-") or fid in ("context-leak", "label-shift")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--cli", default=str(REPO / "build/app/draftscope-cli"))
    ap.add_argument("--target", default=str(REPO / "resources/demo/target"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", default="0")
    ap.add_argument("--probes", default="context-leak,label-shift,block-causal,position-offset,tap-offset,window")
    ap.add_argument("--json", help="write every drafter's row (with all alternatives) here")
    args = ap.parse_args()

    rows = []
    for folder in args.folders:
        for name, path, trained_with in drafters_in(folder):
            out = Path(f"/tmp/calibrate-{folder.name}-{name}.json")
            t0 = time.time()
            p = subprocess.run([args.cli, "diagnose", "--target", args.target, "--drafter", str(path),
                                "--device", args.device, "--dtype", args.dtype, "--threads", args.threads,
                                "--probes", args.probes, "--json", str(out)], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"{folder.name}/{name}: diagnose failed ({p.returncode}): {p.stderr[-1500:]}", file=sys.stderr)
                rows.append({"set": folder.name, "name": name, "trained_with": trained_with, "error": p.stderr[-500:],
                             "expected": expected_findings(trained_with), "kind": kind_of(trained_with), "ok": False})
                continue
            d = json.loads(out.read_text())["drafters"][0]
            found = sorted(f["id"] for f in d["findings"] if is_convention_finding(f["id"]))
            best = max(d["convention_probes"], key=lambda c: c["expected_difference_lower"])
            row = {"set": folder.name, "name": name, "trained_with": trained_with, "kind": kind_of(trained_with),
                   "declared_tau": d["probe"]["tau"], "best": best, "found": found,
                   "expected": expected_findings(trained_with), "seconds": round(time.time() - t0, 1),
                   "alternatives": d["convention_probes"]}
            row["ok"] = row["found"] == row["expected"]
            rows.append(row)
            print(f"{'ok  ' if row['ok'] else 'MISS'} {folder.name}/{name}: declared {row['declared_tau']:.3f}, "
                  f"best {best['family']} {best['alternative']} {best['tau']:.3f} expected {best['expected_tau']:.3f} "
                  f"[{best['expected_difference_lower']:+.3f}, {best['expected_difference_upper']:+.3f}] found {found} "
                  f"expected {row['expected']} ({row['seconds']} s)", file=sys.stderr)

    print(f"\nCalibration: {args.device}, {args.dtype}, probes {args.probes}\n")
    print("| drafter | trained with | declared probe tau (expected acceptance) | strongest alternative: probe tau, "
          "expected acceptance (99% interval of its gain) | findings | expected | |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        tw = ", ".join(f"{k}={v}" for k, v in r["trained_with"].items()) or "declared convention"
        if "error" in r:
            print(f"| {r['set']}/{r['name']} | {tw} | error | | | {', '.join(r['expected']) or 'none'} | MISS |")
            continue
        b = r["best"]
        print(f"| {r['set']}/{r['name']} | {tw} | {r['declared_tau']:.3f} ({b['expected_declared_tau']:.3f}) | "
              f"{b['family']}: {b['alternative']} {b['tau']:.3f}, {b['expected_tau']:.3f} "
              f"[{b['expected_difference_lower']:+.3f}, {b['expected_difference_upper']:+.3f}] | "
              f"{', '.join(r['found']) or 'none'} | {', '.join(r['expected']) or 'none'} | "
              f"{'ok' if r['ok'] else 'MISS'} |")
    bugs = [r for r in rows if r["kind"] == "bug"]
    clean = [r for r in rows if r["kind"] != "bug"]
    named = sum(r["ok"] for r in bugs)
    false_pos = sum(bool(r.get("found")) for r in clean)
    print(f"\nBug drafters named correctly: {named}/{len(bugs)}; clean and weak drafters with a convention "
          f"finding: {false_pos}/{len(clean)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "dtype": args.dtype, "probes": args.probes,
                                               "rows": rows}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
