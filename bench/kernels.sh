#!/usr/bin/env bash
# bench/kernels.md's data: the kernel lab (lab/kernels.sh) on this tree's release build. Keeps the
# summary, and per kernel the engine listing and every step's command and exit code, in
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
  name=$(basename "$kernel")
  [ -d "$kernel/lab" ] || continue
  mkdir -p "bench/kernels/$name"
  cp "$kernel"/lab/engines.json "$kernel"/lab/*.rc "$kernel"/lab/*.cmd "bench/kernels/$name/"
done
exit "$rc"
