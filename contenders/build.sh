#!/usr/bin/env bash
# Builds ringside's reference contenders into OUT (default: ${CARGO_TARGET_DIR:-target}/contenders):
# node (copied; no dependencies), go, tokio and monoio (each its own Cargo workspace with its
# own target dir under OUT, built from a copy under OUT where its Cargo.toml.in is named
# Cargo.toml: a folder holding a Cargo.toml would be left out of ringside's own package). A contender whose toolchain is missing is skipped with the reason;
# the script fails only when a present toolchain fails to build its contender.
# Usage: contenders/build.sh [OUT] [NAME...]   (NAME: node go tokio monoio; default all)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${CARGO_TARGET_DIR:-$here/../target}/contenders}"
shift || true
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(node go tokio monoio)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
failed=0

skip() { echo "contenders: skipping $1: $2" >&2; }
built() { echo "contenders: $1 built in $out/$1" >&2; }

for name in "${names[@]}"; do
  case "$name" in
    node)
      if ! command -v node >/dev/null 2>&1; then skip node "node is not installed"; continue; fi
      mkdir -p "$out/node" && cp "$here/node/echo.js" "$here/node/http.js" "$out/node/" \
        && built node || failed=1
      ;;
    go)
      if ! command -v go >/dev/null 2>&1; then skip go "go is not installed"; continue; fi
      # GOTOOLCHAIN=local: never download another Go toolchain.
      (cd "$here/go" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath \
        -o "$out/go/ringside-go" .) && built go || failed=1
      ;;
    tokio | monoio)
      if ! command -v cargo >/dev/null 2>&1; then skip "$name" "cargo is not installed"; continue; fi
      source="$out/$name/source"
      rm -rf "$source" && mkdir -p "$source" && cp -R "$here/$name/." "$source/" \
        && mv "$source/Cargo.toml.in" "$source/Cargo.toml" || { failed=1; continue; }
      # --locked: the versions in the contender's Cargo.lock, nothing newer.
      cargo build --quiet --release --locked --manifest-path "$source/Cargo.toml" \
        --target-dir "$out/$name/target" \
        && cp "$out/$name/target/release/ringside-$name" "$out/$name/ringside-$name" \
        && built "$name" || failed=1
      ;;
    *)
      echo "contenders: no reference contender is called '$name' (node, go, tokio, monoio)" >&2
      failed=1
      ;;
  esac
done
exit $failed
