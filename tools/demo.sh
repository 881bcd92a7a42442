#!/usr/bin/env bash
# The README's run command: installs dependencies if missing, builds, then runs the bundled
# demo pair (resources/demo: a 6-layer Qwen3 target trained on Python source and its DFlash
# drafter) on a sample prompt with draftscope-cli. Extra arguments go to draftscope-cli run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
exec ./build/app/draftscope-cli run \
  --target resources/demo/target --drafter resources/demo/drafter \
  --prompt-file resources/prompts/fibonacci.py --max-new 96 --ignore-eos "$@"
