#!/bin/sh
# Issue 32, documents and flags: a crafted results file given to `merge`, and flag values that
# panicked, run against two builds. Prints each case's exit code, peak RSS and first line of
# stderr. Usage: bench/reliability-documents.sh BEFORE_BIN AFTER_BIN OUT_DIR
set -eu
before=$1 after=$2 out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# Two hosts' documents (the fuzz corpus's two-host merge, each with a real latency histogram),
# the second's histogram replaced by the issue's 56 characters: HdrHistogram's V2 header
# declaring 4 GiB of counts.
python3 - "$work" <<'PY'
import base64, json, struct, sys, zlib
work = sys.argv[1]
first, second = open("fuzz/corpus/document/merge-two-hosts.json", "rb").read().split(b"\0")
open(f"{work}/host1.json", "wb").write(first)
doc = json.loads(second)
row = doc["results"][0]
header = struct.pack(">IIIIQQd", 0x1C849313, 0xFFFFFFF0, 0, 3, 1, 100_000_000_000, 1.0)
packed = zlib.compress(header)
field = base64.b64encode(struct.pack(">II", 0x1C849314, len(packed)) + packed).decode()
assert len(field) == 56, len(field)
row["latency_ns_histogram"] = field
json.dump(doc, open(f"{work}/host2.json", "w"))
PY
run() { # build name args...
    bin=$1 name=$2
    shift 2
    set +e
    /usr/bin/time -f '%M' -o "$work/rss" "$bin" "$@" >/dev/null 2>"$work/err"
    code=$?
    set -e
    printf '%s\t%s\texit %s\tpeak RSS %s KiB\t%s\n' "$name" "$bin_name" "$code" \
        "$(tail -n 1 "$work/rss")" "$(grep -v '^ *$' "$work/err" | head -n 1 | cut -c1-160)"
}
for bin_name in before after; do
    eval bin=\$$bin_name
    run "$bin" "merge-4GiB-header" merge "$work/host1.json" "$work/host2.json" -o "$work/merged.json"
    run "$bin" "echo--duration-1e20" echo --duration 1e20
    run "$bin" "echo--warmup-1e20" echo --warmup 1e20
    run "$bin" "echo--idle-timeout-1e20" echo --idle-timeout 1e20
    run "$bin" "load--rate-1e-300" load echo --target 127.0.0.1:1 --rate 1e-300 --duration 1s
done | tee "$out/cases.tsv"
