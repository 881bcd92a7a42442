#!/usr/bin/env bash
# The README's test command: installs dependencies if missing, builds, runs every suite,
# then the fuzz smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
(cd build && QT_QPA_PLATFORM=offscreen ctest --output-on-failure --timeout 900)
# The bounded fuzz smoke (docs/RELIABILITY.md "Fuzzing"): builds the libFuzzer targets with
# clang into ./build-fuzz (about 6 CPU-minutes) and runs each for 30 s, one target per core
# at a time (the suites are done by then: each target still gets its 30 s of CPU).
# DRAFTSCOPE_FUZZ_SMOKE=0 skips it (e.g. a machine without clang).
if [[ "${DRAFTSCOPE_FUZZ_SMOKE:-1}" != 0 ]]; then
  FUZZ_PARALLEL="${FUZZ_PARALLEL:-$(nproc)}" bash tools/fuzz-smoke.sh
fi
