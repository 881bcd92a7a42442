#!/usr/bin/env bash
# Installs the Debian 12 packages draftscope builds and tests with. Idempotent: it only
# calls apt-get when a package is missing. Needs root or sudo.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache
  libtorch-dev libopenblas0-pthread       # engine (CPU libtorch 1.13; OpenBLAS, not reference BLAS)
  nlohmann-json3-dev libpcre2-dev libutf8proc-dev libcli11-dev
  qt6-base-dev libqt6svg6-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  fonts-dejavu-core                        # fonts for figures rendered headless
  xvfb xdotool                             # tools/gui-smoke.sh: the demo in a real X window
  clang libclang-rt-14-dev python3         # tools/fuzz-smoke.sh: libFuzzer targets and their seeds
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
