#!/usr/bin/env bash
# Real-window smoke test of a new user's first start: `draftscope --demo` on a fresh
# configuration in a 1600x1000 Xvfb display (no window manager), run to the end; then the
# GUI thread must be idle (no layout loop), a click must be served, and Ctrl+Q must quit
# within seconds.
#
#   tools/gui-smoke.sh [DRAFTSCOPE] [SCREENSHOT_DIR] [-- extra draftscope arguments]
#
# DRAFTSCOPE defaults to build/app/draftscope. With SCREENSHOT_DIR (needs ImageMagick's
# `import`), writes after-run.png and after-click.png there. GUI_SMOKE_RUN_TIMEOUT (seconds,
# default 900) bounds the wait for the run.
# Exit codes: 0 pass, 1 fail, 77 skipped (Xvfb or xdotool missing; tools/install-deps.sh
# installs both).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-build/app/draftscope}
shots=${2:-}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
extra=("$@")
run_timeout=${GUI_SMOKE_RUN_TIMEOUT:-900}

for tool in Xvfb xdotool; do
  if ! command -v "$tool" >/dev/null; then
    echo "gui-smoke: SKIP: $tool not installed (tools/install-deps.sh installs it)"
    exit 77
  fi
done
[ -x "$bin" ] || { echo "gui-smoke: FAIL: $bin is not an executable (build first)"; exit 1; }

work=$(mktemp -d)
xvfb_pid="" app_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill -9 "$app_pid" 2>/dev/null || true
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "gui-smoke: FAIL: $*"
  echo "--- draftscope stdout"; cat "$work/out.log" 2>/dev/null || true
  echo "--- draftscope stderr"; tail -n 20 "$work/err.log" 2>/dev/null || true
  exit 1
}

# A display of our own: Xvfb picks a free number and writes it to fd 3.
exec 3>"$work/display"
Xvfb -displayfd 3 -screen 0 1600x1000x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
xvfb_pid=$!
exec 3>&-
for _ in $(seq 100); do [ -s "$work/display" ] && break; sleep 0.1; done
[ -s "$work/display" ] || fail "Xvfb did not start: $(cat "$work/xvfb.log")"
export DISPLAY=":$(head -n1 "$work/display")"
export XDG_CONFIG_HOME="$work/config"  # fresh settings: default layout, no saved state
unset QT_QPA_PLATFORM                  # ctest runs with offscreen; this test needs the real window
mkdir -p "$XDG_CONFIG_HOME"

"$bin" --demo "${extra[@]}" >"$work/out.log" 2>"$work/err.log" &
app_pid=$!
echo "gui-smoke: draftscope --demo on $DISPLAY (pid $app_pid), waiting for the run to finish"
waited=0
until grep -q "^draftscope: run .* finished" "$work/out.log"; do
  kill -0 "$app_pid" 2>/dev/null || fail "draftscope exited before the run finished"
  [ "$waited" -ge "$run_timeout" ] && fail "no finished run after ${run_timeout}s"
  sleep 1
  waited=$((waited + 1))
done
echo "gui-smoke: $(grep -m1 '^draftscope: run' "$work/out.log") after ~${waited}s"
sleep 3  # the result is shown; queued work settles

# The GUI thread (tid = pid) must be idle: the refit loop kept it at ~100%.
ticks() { awk '{print $14 + $15}' "/proc/$app_pid/task/$app_pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep 3; t1=$(ticks)
busy=$(( (t1 - t0) * 100 / (3 * hz) ))
echo "gui-smoke: GUI thread used ${busy}% of a core over 3 s after the run"
[ "$busy" -lt 25 ] || fail "the GUI thread is busy (${busy}% of a core) after the run: a layout loop?"

[ -n "$shots" ] && mkdir -p "$shots" && import -window root "$shots/after-run.png"
# A click in the block grid (selects a verify step), then Ctrl+Q with the pointer on the
# window (no window manager: the keyboard focus follows the pointer).
xdotool mousemove 640 300 click 1
sleep 2
[ -n "$shots" ] && import -window root "$shots/after-click.png"
t2=$(ticks)
kill -0 "$app_pid" 2>/dev/null || fail "draftscope exited after the click"
xdotool key --clearmodifiers ctrl+q
for _ in $(seq 100); do
  kill -0 "$app_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$app_pid" 2>/dev/null; then
  fail "Ctrl+Q did not quit within 10 s (GUI thread ticks since the click: $(( $(ticks) - t2 )))"
fi
wait "$app_pid" && rc=0 || rc=$?
app_pid=""
[ "$rc" -eq 0 ] || fail "draftscope exited with code $rc after Ctrl+Q"
echo "gui-smoke: PASS (quit on Ctrl+Q)"
