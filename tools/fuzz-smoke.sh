#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan into ./build-fuzz and
# runs each for a bounded time with a fixed seed from fresh seed corpora (made from the test
# fixtures by tests/fuzz/make_seeds.py). Fails if any target crashes, trips a sanitizer,
# leaks, times out or throws anything but draftscope::Error. Crashing inputs are kept in
# build-fuzz/artifacts/<target>/; reproduce one with build-fuzz/tests/fuzz/fuzz_<target> FILE.
#
# Usage: tools/fuzz-smoke.sh [seconds per target, default 30] [target ...]
#   targets: safetensors shard_index config tokenizer_json tokenizer_encode results_file
#            prompt_set pt_pickle pt_archive (default: all)
# Environment: JOBS (build jobs, default nproc), FUZZ_SEED (libFuzzer -seed, default 1),
#   FUZZ_KEEP_CORPUS=1 (grow build-fuzz/corpus/<target> across runs instead of starting
#   fresh: for long runs), FUZZ_ARGS (extra libFuzzer flags, e.g. -jobs=2), FUZZ_PARALLEL=N
#   (run N targets at once; default 1), FUZZ_TIMEOUT (seconds one input may take, default 30:
#   raise it for a long run under `nice` on a busy machine, where a starved process can
#   spend 30 s of wall-clock time on an input that takes milliseconds).
# The long run (1 hour per target) is documented in docs/RELIABILITY.md "Fuzzing".
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
seconds="${1:-30}"
[[ $# -gt 0 ]] && shift
all=(safetensors shard_index config tokenizer_json tokenizer_encode results_file prompt_set pt_pickle pt_archive)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
jobs="${JOBS:-$(nproc)}"
seed="${FUZZ_SEED:-1}"

start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DDRAFTSCOPE_FUZZ=ON \
      -DDRAFTSCOPE_BUILD_GUI=OFF -DDRAFTSCOPE_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target "${targets[@]/#/fuzz_}"
echo "fuzz-smoke: built ${#targets[@]} targets in $(( $(date +%s) - start )) s"
python3 tests/fuzz/make_seeds.py build-fuzz/seeds >/dev/null

# Runs one target; prints its summary line and leaves its exit status in build-fuzz/fuzz_<t>.rc.
run_target() {
  local t="$1"
  local corpus="build-fuzz/corpus/$t"
  [[ "${FUZZ_KEEP_CORPUS:-0}" == 1 ]] || rm -rf "$corpus"
  mkdir -p "$corpus" "build-fuzz/artifacts/$t"
  local dict="tests/fuzz/dict/$t.dict"
  [[ $t == pt_archive ]] && dict="tests/fuzz/dict/pt_pickle.dict"
  local dictArg=()
  [[ -f $dict ]] && dictArg=(-dict="$dict")
  # libtorch (not instrumented) keeps process-lifetime allocations that LeakSanitizer would
  # report; the torch-free targets are checked for leaks (docs/RELIABILITY.md "Sanitizers").
  local leaks=1
  [[ $t == pt_* ]] && leaks=0
  local log="build-fuzz/fuzz_$t.log"
  local rc cpu
  local TIMEFORMAT="cpu %U s user + %S s system over %R s"
  set +e
  { time ASAN_OPTIONS="detect_leaks=$leaks:strict_string_checks=1:check_initialization_order=1:suppressions=$root/tools/sanitizers/asan.supp" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tools/sanitizers/ubsan.supp" \
    "build-fuzz/tests/fuzz/fuzz_$t" -seed="$seed" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=4096 \
      -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t/" "${dictArg[@]}" ${FUZZ_ARGS:-} \
      "$corpus" "build-fuzz/seeds/$t" >"$log" 2>&1; } 2>"build-fuzz/fuzz_$t.time"
  rc=$?
  set -e
  echo "$rc" >"build-fuzz/fuzz_$t.rc"
  local stats execs
  stats=$(grep -E '^#[0-9]+.*(DONE|INITED)' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cpu=$(cat "build-fuzz/fuzz_$t.time")
  echo "fuzz-smoke: $t: exit $rc, $execs runs, $cpu; ${stats:-no stats}"
  [[ $rc -eq 0 ]] || tail -n 60 "$log"
}

# FUZZ_PARALLEL=N runs up to N targets at once (the long run: every target gets its hours of
# wall-clock time in one sitting); the default runs them one after the other.
parallel="${FUZZ_PARALLEL:-1}"
for t in "${targets[@]}"; do
  if [[ $parallel -le 1 ]]; then
    run_target "$t"
  else
    while [[ $(jobs -rp | wc -l) -ge $parallel ]]; do wait -n || true; done
    run_target "$t" &
  fi
done
wait
failed=()
for t in "${targets[@]}"; do
  [[ "$(cat "build-fuzz/fuzz_$t.rc" 2>/dev/null)" == 0 ]] || failed+=("$t")
done
echo "fuzz-smoke: done in $(( $(date +%s) - start )) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz-smoke: FAILED: ${failed[*]} (logs: build-fuzz/fuzz_<target>.log, inputs: build-fuzz/artifacts/)" >&2
  exit 1
fi
