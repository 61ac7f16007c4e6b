#!/bin/bash
# Measures bench/http-peers.md: ringside's four HTTP servers against seed 001's fixed-response
# servers (github.com/ryanseipp/iouring-test, built outside this repo), side by side in one session.
# Downloads nothing: the peers' binaries are given as NAME=PATH arguments. Run it under the
# exclusive benchmark lock (it takes no lock itself, so nothing inside may take it either):
#   flock -x /tmp/ringside-bench.lock bench/http-peers.sh OUTDIR RINGSIDE_BIN NAME=PATH...
# A NAME containing "epoll" is an epoll peer, any other an io_uring peer. Every peer listens on
# 127.0.0.1:8000 (hard-coded in its source). Traffic goes to 127.0.0.1 only.
#
# For each of ROUNDS rounds (servers in order, then reversed, then in order), each server and each
# connection count (50, 256): a fresh server on CPU 0, then one client on CPU 1 for 10 s, then the
# server is stopped; clients are wrk (server CPU from /proc/PID/stat around wrk) and ringside's
# load generator (server CPU and kernel-counted syscalls over its measured window, --server-pid).
set -uo pipefail
out=$1
bin=$2
shift 2
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/runs"

names=(ringside-epoll ringside-uring ringside-uring-multishot ringside-uring-defer)
check_only=() # peers given as check:NAME=PATH get the correctness probe only (e.g. one that crashes)
declare -A path
for arg in "$@"; do
  name=${arg%%=*}
  if [[ $name == check:* ]]; then
    name=${name#check:}
    check_only+=("$name")
  else
    names+=("$name")
  fi
  path[$name]=${arg#*=}
done

{
  echo "start: $(date -u +%FT%TZ)"
  echo "loadavg: $(cat /proc/loadavg)"
  echo "$("$bin" probe | head -1)"
  echo "ringside: $bin ($(sha256sum "$bin" | cut -c1-16))"
  for name in "${names[@]}" "${check_only[@]}"; do
    [ -n "${path[$name]:-}" ] && echo "peer $name: ${path[$name]} ($(sha256sum "${path[$name]}" | cut -c1-16))"
  done
  [ ${#check_only[@]} -gt 0 ] && echo "correctness probe only: ${check_only[*]}"
  echo "wrk: $(wrk -v 2>&1 | head -1)"
  echo "rounds: $rounds, duration: $duration"
} | tee "$out/session.txt"

port_seq=39300
server_pid=
server_port=

start_server() { # NAME
  local name=$1
  if [[ $name == ringside-* ]]; then
    port_seq=$((port_seq + 1)) # a fresh port each time: the previous one may hold TIME_WAITs
    server_port=$port_seq
    taskset -c 0 "$bin" serve http --engine "${name#ringside-}" --listen "127.0.0.1:$server_port" \
      --quiet > /dev/null 2> "$out/server.stderr" &
  else
    server_port=8000
    taskset -c 0 "${path[$name]}" > /dev/null 2> "$out/server.stderr" &
  fi
  server_pid=$!
  for _ in $(seq 50); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$server_port/" && return 0
    sleep 0.1
  done
  echo "server $name did not answer on port $server_port" >&2
  return 1
}

stop_server() {
  kill -TERM "$server_pid" 2> /dev/null
  for _ in $(seq 20); do
    kill -0 "$server_pid" 2> /dev/null || break
    sleep 0.05
  done
  kill -KILL "$server_pid" 2> /dev/null
  wait "$server_pid" 2> /dev/null
  # An io_uring server's listening socket can outlive the process for a moment (the ring is torn
  # down asynchronously and holds it): the next peer on the same port must wait for it.
  for _ in $(seq 100); do
    [ -z "$(ss -Hltn "sport = :$server_port")" ] && break
    sleep 0.1
  done
}

sampler_pid=
start_sampler() { # PID FILE: the server's CPU ticks every 0.1 s while it lives (some peers die
  # when the client closes its connections, taking /proc/PID/stat with them)
  (while ticks=$(cpu_ticks "$1") && [ "$ticks" != NA ]; do echo "$ticks"; sleep 0.1; done) > "$2" &
  sampler_pid=$!
}

cpu_ticks() { # PID: utime + stime in clock ticks
  awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2> /dev/null || echo NA
}

# Correctness first: one fresh server each, a handful of requests.
: > "$out/correctness.jsonl"
for name in "${names[@]}" "${check_only[@]}"; do
  start_server "$name" || { echo "{\"server\": \"$name\", \"error\": \"did not start\"}" >> "$out/correctness.jsonl"; stop_server; continue; }
  python3 "$here/http-peers-check.py" "$name" "$server_port" >> "$out/correctness.jsonl"
  sleep 0.2
  kill -0 "$server_pid" 2> /dev/null && alive=yes || alive=no
  echo "{\"server\": \"$name\", \"alive_after_probe\": \"$alive\", \"stderr_tail\": $(tail -c 300 "$out/server.stderr" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}" >> "$out/correctness.jsonl"
  stop_server
done

printf 'round\tserver\tconnections\tclient\tfile\tserver_cpu_ticks\tclk_tck\twall_s\tclient_cpu_s\talive_after\tfds_after\tstderr_lines\n' \
  > "$out/runs.tsv"
tck=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
  order=("${names[@]}")
  if [ $((round % 2)) -eq 0 ]; then
    order=()
    for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[i]}"); done
  fi
  for name in "${order[@]}"; do
    for connections in 50 256; do
      for client in wrk ringside; do
        file="runs/r$round-$name-c$connections-$client"
        start_server "$name" || { printf '%s\t%s\t%s\t%s\t%s\tNA\t%s\tNA\tNA\tno-start\tNA\tNA\n' \
          "$round" "$name" "$connections" "$client" "$file" "$tck" >> "$out/runs.tsv"; stop_server; continue; }
        start_sampler "$server_pid" "$out/cpu.samples"
        t0=$(date +%s.%N)
        if [ "$client" = wrk ]; then
          TIMEFORMAT='%U %S'
          { time taskset -c 1 wrk -t1 -c"$connections" -d"$duration" --latency \
              "http://127.0.0.1:$server_port/" > "$out/$file.txt" 2>&1; } 2> "$out/$file.time"
          client_cpu=$(awk '{ print $1 + $2 }' "$out/$file.time")
          rm -f "$out/$file.time"
        else
          "$bin" load http --target "http://127.0.0.1:$server_port/" --cpu 1 -c "$connections" \
            -d "$duration" --server-pid "$server_pid" --format json > "$out/$file.json" \
            2> "$out/$file.stderr"
          [ -s "$out/$file.stderr" ] || rm -f "$out/$file.stderr"
          client_cpu=NA
        fi
        t1=$(date +%s.%N)
        sleep 0.2
        kill "$sampler_pid" 2> /dev/null
        wait "$sampler_pid" 2> /dev/null
        before=$(head -1 "$out/cpu.samples")
        after=$(tail -1 "$out/cpu.samples")
        [ -n "$before" ] || before=NA
        [ -n "$after" ] || after=NA
        state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$server_pid/stat" 2> /dev/null)
        if [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]; then
          alive=yes
          fds=$(ls "/proc/$server_pid/fd" | wc -l)
        else
          alive=no
          fds=NA
        fi
        if [ "$before" != NA ] && [ "$after" != NA ]; then ticks=$((after - before)); else ticks=NA; fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$connections" \
          "$client" "$file" "$ticks" "$tck" "$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")" "$client_cpu" "$alive" "$fds" \
          "$(wc -l < "$out/server.stderr")" >> "$out/runs.tsv"
        stop_server
      done
    done
  done
done
rm -f "$out/server.stderr" "$out/cpu.samples"
echo "end: $(date -u +%FT%TZ) loadavg: $(cat /proc/loadavg)" | tee -a "$out/session.txt"
python3 "$here/http-peers-summary.py" "$out" | tee "$out/summary.md"
