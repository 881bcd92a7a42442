#!/usr/bin/env bash
# GPU machine: builds the fused CUDA kernels' check (tests/gpu) with tools/gpu-build.sh and
# runs it: each kernel against the plain-op reference on random bf16/fp16 inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
DRAFTSCOPE_BUILD_TARGET=check_fused_kernels bash tools/gpu-build.sh "$@"
source build-cuda/env.sh
build-cuda/tests/gpu/check_fused_kernels
