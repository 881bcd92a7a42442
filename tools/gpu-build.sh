#!/usr/bin/env bash
# Builds the engine and draftscope-cli (no Qt) against the CUDA libtorch of the GPU machine's
# Python torch. The few Debian dev packages it needs (nlohmann-json, CLI11, PCRE2, utf8proc,
# pkgconf) are unpacked from .deb files in ./.deb if the machine lacks them:
#   (here)   mkdir -p .deb && (cd .deb && apt-get download nlohmann-json3-dev libcli11-dev \
#              libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2 pkgconf pkgconf-bin libpkgconf3)
#   (there)  bash tools/gpu-build.sh [cmake -D options]   -> build-cuda/app/draftscope-cli
#            (DRAFTSCOPE_BUILD_TARGET=name builds that target only, e.g. draftscope-bench)
# Afterwards, source build-cuda/env.sh to get the library path.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=/tmp/draftscope-deps
mkdir -p "$deps"
for f in .deb/*.deb; do dpkg -x "$f" "$deps"; done
lib="$deps/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}"
export PKG_CONFIG_SYSROOT_DIR="$deps"
export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$deps/usr/share/pkgconfig"
# The fused CUDA kernels (backend/src/kernels) are on by default here; pass
# -DDRAFTSCOPE_CUDA_KERNELS=OFF to build without them.
export CUDACXX="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
export TORCH_CUDA_ARCH_LIST="9.0"
cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DDRAFTSCOPE_BUILD_GUI=OFF -DDRAFTSCOPE_BUILD_TESTS=OFF -DDRAFTSCOPE_CUDA_KERNELS=ON "$@" \
  -DPKG_CONFIG_EXECUTABLE="$deps/usr/bin/pkgconf" -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr" >build-cuda.log 2>&1 \
  || { tail -40 build-cuda.log; exit 1; }
cmake --build build-cuda -j"$(nproc)" ${DRAFTSCOPE_BUILD_TARGET:+--target "$DRAFTSCOPE_BUILD_TARGET"} >>build-cuda.log 2>&1 || { grep -B2 -A12 -m3 "error" build-cuda.log; exit 1; }
echo "export LD_LIBRARY_PATH=$lib:$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))'):\${LD_LIBRARY_PATH:-}" > build-cuda/env.sh
echo "built build-cuda (${DRAFTSCOPE_BUILD_TARGET:-all targets})"
