#!/usr/bin/env bash
# bench/kernels.md's data: the kernel lab (lab/kernels.sh) on this tree's release build. Keeps the
# summary (every step's command and exit code, the verdict) and each kernel's engine listing in
# bench/kernels/; the full results (every step's JSON and stderr, the consoles) stay in
# target/kernel-lab/. Exits as the lab does.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
out=target/kernel-lab
rc=0
LAB_OUT=$out lab/kernels.sh target/release/ringside || rc=$?
rm -rf bench/kernels
mkdir -p bench/kernels
cp "$out/summary.md" bench/kernels/
for kernel in "$out"/*/; do
  [ -f "$kernel/lab/engines.json" ] || continue
  cp "$kernel/lab/engines.json" "bench/kernels/$(basename "$kernel")-engines.json"
done
exit "$rc"
