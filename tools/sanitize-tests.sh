#!/usr/bin/env bash
# Builds draftscope's fast suites (CTest label `unit` by default) with AddressSanitizer and
# UndefinedBehaviorSanitizer into ./build-asan and runs them. libtorch, Qt and the other
# Debian libraries are not instrumented; docs/RELIABILITY.md "Sanitizers" explains the
# options below and every entry of tools/sanitizers/*.supp.
#
# Usage: tools/sanitize-tests.sh [ctest label regex, default: unit] [extra cmake arguments...]
# Environment: JOBS (default: nproc), DRAFTSCOPE_SANITIZE (default: address,undefined).
set -euo pipefail
cd "$(dirname "$0")/.."
label="${1:-unit}"
[[ $# -gt 0 ]] && shift
jobs="${JOBS:-$(nproc)}"
root="$PWD"

# Debug (-O0, assert()s on): with the sanitizers an -O2 build of a JSON-heavy file takes
# minutes with GCC; the tests' heavy work runs inside libtorch, which is optimised anyway.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DDRAFTSCOPE_BUILD_GUI=OFF \
      -DDRAFTSCOPE_SANITIZE="${DRAFTSCOPE_SANITIZE:-address,undefined}" "$@" >/dev/null
# Build only what the chosen suites need: their executables (each depends on what it runs).
mapfile -t suites < <(cd build-asan && ctest -N -L "$label" | sed -n 's/^ *Test *#[0-9]*: *//p')
if [[ ${#suites[@]} -eq 0 ]]; then
  echo "sanitize-tests: no suite has label '$label'" >&2
  exit 1
fi
echo "sanitize-tests: building ${suites[*]}"
cmake --build build-asan -j"$jobs" --target "${suites[@]}"

# detect_leaks=0: libtorch (not built with ASan) keeps process-lifetime allocations (its
#   operator registry, thread pools, the CPU allocator's caches) that LeakSanitizer would
#   report at exit as leaks although they are reachable only through uninstrumented code.
# halt_on_error / abort_on_error: any report fails the suite (ctest sees the abort).
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:suppressions=$root/tools/sanitizers/asan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tools/sanitizers/ubsan.supp"
cd build-asan
QT_QPA_PLATFORM=offscreen ctest -L "$label" --output-on-failure --timeout 1800
