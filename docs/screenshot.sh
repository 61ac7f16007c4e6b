#!/usr/bin/env bash
# Makes docs/report.png, the README's picture: the first screen (1366x900) of report.html,
# taken by headless Chromium. Given the results directory of a real default run it re-renders
# that run's report with this tree's `ringside report`; without one it first makes a real
# default `ringside run` under the benchmark lock (about 11 min on a 2-vCPU VM, plus 1–1.5 min
# if it first has to build the reference contenders).
# Usage, from anywhere, as root: docs/screenshot.sh [RESULTS_DIR]   (default: a new run in /tmp/ringside-readme-run)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
if [ -n "${1:-}" ] && [ -f "$1/results.json" ]; then
  out="$(mktemp -d)"
  target/release/ringside report "$1" --out "$out" >/dev/null
else
  out="${1:-/tmp/ringside-readme-run}"
  rm -rf "$out"
  # A run that exits 1 (a failed contender, unverified data) still wrote its report: keep going.
  flock -x /tmp/ringside-bench.lock target/release/ringside run --out "$out" --quiet || echo "ringside run exited $?"
fi
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1366,900 \
  --screenshot="$PWD/docs/report.png" "file://$out/report.html"
