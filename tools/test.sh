#!/usr/bin/env bash
# The README's test command: installs dependencies if missing, builds, runs every suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
cd build
QT_QPA_PLATFORM=offscreen ctest --output-on-failure --timeout 900
