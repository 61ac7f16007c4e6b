#!/bin/bash
# Echo servers against the public programs of the same API (issue 9): ringside's epoll, uring,
# uring-multishot and uring-defer beside frevib's C epoll and io_uring servers (seed 000's
# contenders) and joakimthun's C++ epoll and multishot io_uring servers (seed 004), all built by
# bench/peers-build.sh. Under the exclusive benchmark lock:
#
#   flock -x /tmp/ringside-bench.lock bench/peers-echo.sh OUTDIR RINGSIDE_BIN PEERS_BIN
#
# Clients are the seeds' own: rust_echo_bench at 1, 2 and 50 connections x 64 B (seed 000's
# command lines), and tcpkali at 128 and 256 connections x 1024 B (seed 004's; tcpkali streams
# the message as fast as it can, so its figure is echoed bytes / 1024 per second; its window
# follows a ramp of 100 connections/s, whose bytes it counts too). Each run: a
# fresh server on CPU 0 and the client on CPU 1, both SCHED_FIFO 50 (FINDINGS: without it other
# work on the machine moved echo figures 2-9x; tcpkali excepted, see below), DURATION (default
# 10 s); the server's CPU time is
# read from /proc/PID/stat around the client. Servers alternate within each case, in an order
# that flips every round (ROUNDS, default 3). Then a correctness probe per server, with
# ringside's verifying load generator against a fresh server: 50 connections ping-pong twice
# (a second set after the first closed: one peer broke only then), and the slow-reader stream.
# Traffic goes to 127.0.0.1 only. bench/peers-echo-summary.py makes the tables. SERVERS, CASES,
# DURATION and ROUNDS override the matrix; a server named alt-ENGINE runs ENGINE from the build
# ALT_BIN, for an A/B of a change beside the peers. CHECKS=0 skips the correctness probe.
set -uo pipefail
out=$1
bin=$2
peers=$3
rounds=${ROUNDS:-3}
duration=${DURATION:-10}
cases=${CASES:-"echo_bench:1:64 echo_bench:2:64 echo_bench:50:64 tcpkali:128:1024 tcpkali:256:1024"}
servers=(${SERVERS:-ringside-epoll ringside-uring ringside-uring-multishot ringside-uring-defer frevib_epoll frevib_uring joakimthun_epoll joakimthun_uring})
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/runs"
head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > "$out/1024.in"

{
  echo "start: $(date -u +%FT%TZ)"
  echo "$("$bin" probe | head -1)"
  echo "ringside: $bin ($(sha256sum "$bin" | cut -c1-16)) $(git -C "$here" rev-parse --short HEAD)"
  for peer in frevib_epoll frevib_uring joakimthun_epoll joakimthun_uring echo_bench tcpkali; do
    echo "peer $peer: $(sha256sum "$peers/$peer" | cut -c1-16)"
  done
  echo "rounds: $rounds, duration: ${duration}s, cases: $cases"
  echo "servers: ${servers[*]}"
} | tee "$out/session.txt"

port_seq=24100
server_pid=
server_port=

wait_listening() { # PORT: until a connection is accepted, at most 5 s
  for _ in $(seq 1 100); do
    (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null && return 0
    sleep 0.05
  done
  return 1
}

start_server() { # NAME
  case $1 in
    ringside-*)
      port_seq=$((port_seq + 1)) # a fresh port each run: the last one may hold TIME_WAITs
      server_port=$port_seq
      chrt -f 50 taskset -c 0 "$bin" serve echo --engine "${1#ringside-}" \
        --listen "127.0.0.1:$server_port" --cpu 0 --quiet > /dev/null 2>> "$out/server.stderr" &
      ;;
    alt-*) # the same engine from another ringside build (ALT_BIN), for an A/B of a change
      port_seq=$((port_seq + 1))
      server_port=$port_seq
      chrt -f 50 taskset -c 0 "$ALT_BIN" serve echo --engine "${1#alt-}" \
        --listen "127.0.0.1:$server_port" --cpu 0 --quiet > /dev/null 2>> "$out/server.stderr" &
      ;;
    frevib_*)
      port_seq=$((port_seq + 1))
      server_port=$port_seq
      chrt -f 50 taskset -c 0 "$peers/$1" "$server_port" > /dev/null 2>> "$out/server.stderr" &
      ;;
    joakimthun_*)
      server_port=6379 # hard-coded in its source
      chrt -f 50 taskset -c 0 "$peers/$1" > /dev/null 2>> "$out/server.stderr" &
      ;;
  esac
  server_pid=$!
  wait_listening "$server_port" || echo "server $1 did not listen on $server_port" >&2
}

stop_server() {
  kill -TERM "$server_pid" 2> /dev/null
  for _ in $(seq 1 30); do kill -0 "$server_pid" 2> /dev/null || break; sleep 0.1; done
  kill -KILL "$server_pid" 2> /dev/null
  wait "$server_pid" 2> /dev/null
  # An io_uring server's listening socket can outlive its process for a moment (the ring is torn
  # down asynchronously), and a client would then wait forever in its backlog: wait until no
  # socket listens on the port (joakimthun's servers all use 6379).
  for _ in $(seq 1 100); do
    [ -z "$(ss -Hltn "sport = :$server_port")" ] && break
    sleep 0.1
  done
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2> /dev/null || echo 0; }

run_case() { # ROUND SERVER CLIENT CONNECTIONS PAYLOAD
  local round=$1 name=$2 client=$3 connections=$4 payload=$5 before after file
  file="$out/runs/r$round-$name-$client-$connections-$payload.txt"
  start_server "$name"
  before=$(cpu_ticks "$server_pid")
  case $client in
    echo_bench)
      timeout $((duration + 30)) chrt -f 50 taskset -c 1 "$peers/echo_bench" \
        -a "127.0.0.1:$server_port" -c "$connections" -t "$duration" -l "$payload" > "$file" 2>&1
      ;;
    tcpkali)
      # tcpkali's default ramp (100 connections/s, as seed 004 ran it): faster, its 1 s connect
      # timeout closes connections its busy loop has not seen complete, and it churns. And the
      # normal class: under SCHED_FIFO its worker, never idle against a fast server, starves
      # tcpkali's own main thread on the same CPU, which ends the test, so it never ends.
      timeout $((duration + 30)) taskset -c 1 "$peers/tcpkali" -w 1 \
        -c "$connections" -f "$out/1024.in" -T "${duration}s" "127.0.0.1:$server_port" \
        > "$file" 2>&1
      ;;
  esac
  after=$(cpu_ticks "$server_pid")
  kill -0 "$server_pid" 2> /dev/null || echo "server_died: 1" >> "$file"
  echo "server_cpu_s: $(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN{print t/hz}')" >> "$file"
  stop_server
}

for round in $(seq 1 "$rounds"); do
  order=("${servers[@]}")
  if [ $((round % 2)) = 0 ]; then
    order=()
    for ((i = ${#servers[@]} - 1; i >= 0; i--)); do order+=("${servers[i]}"); done
  fi
  for case in $cases; do
    IFS=: read -r client connections payload <<< "$case"
    for name in "${order[@]}"; do
      echo "round $round: $name $client $connections x $payload B" >&2
      run_case "$round" "$name" "$client" "$connections" "$payload"
    done
  done
done

# Correctness: ringside's verifying load generator against a fresh server of each kind.
[ "${CHECKS:-1}" = 0 ] && servers=()
for name in "${servers[@]}"; do
  start_server "$name"
  for set in 1 2; do
    "$bin" load echo --target "127.0.0.1:$server_port" -c 50 --payload 64 -d 2s --warmup 0s \
      --cpu 1 --format json > "$out/check-$name-pingpong-$set.json" 2>> "$out/check.stderr"
    echo "$name pingpong set $set exit $?" >> "$out/check.txt"
  done
  stop_server
  start_server "$name"
  "$bin" load echo --target "127.0.0.1:$server_port" -c 8 --payload 1000 --mode stream \
    --read-rate 4m -d 3s --warmup 0s --cpu 1 --format json > "$out/check-$name-stream.json" \
    2>> "$out/check.stderr"
  echo "$name stream exit $?" >> "$out/check.txt"
  stop_server
done
echo "end: $(date -u +%FT%TZ)" | tee -a "$out/session.txt"
python3 "$here/peers-echo-summary.py" "$out" | tee "$out/summary.md"
