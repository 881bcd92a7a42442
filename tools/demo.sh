#!/usr/bin/env bash
# The README's run command: installs dependencies if missing, builds, then opens the
# draftscope window on the bundled demo pair (resources/demo: a 6-layer Qwen3 target trained
# on Python source and its DFlash drafter) with a sample prompt and runs it. Without a
# display (SSH session, server) it runs draftscope-cli on the same pair instead. Extra
# arguments go to the program that runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/app/draftscope --demo "$@"
fi
echo "demo: no display found; running draftscope-cli on the demo pair (see README for --export-figures)"
exec ./build/app/draftscope-cli run \
  --target resources/demo/target --drafter resources/demo/drafter \
  --prompt-file resources/prompts/fibonacci.py --max-new 96 --ignore-eos "$@"
