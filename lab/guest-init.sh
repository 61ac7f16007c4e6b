#!/bin/sh
# /init of a kernel-lab guest (busybox sh, PID 1). Loads the modules lab/kernels.sh packed, mounts
# the scratch disk, runs ringside's behaviour checks and writes every step's stdout (JSON), stderr
# and exit code to /lab on that disk, where the host reads them after the guest powers off.
# A step's line on the serial console ("lab: step NAME rc=N Ns") is the host's live progress.

/bin/busybox --install -s
export PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
mkdir -p /proc /sys /dev /run /tmp /root /mnt
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
ip link set lo up

# shellcheck source=/dev/null
. /lab.conf # LAB_POLL_DEVICE (nullb or nvme), written by the host

say() { echo "lab: $*" >/dev/console; }
halt_guest() {
  sync
  umount /poll 2>/dev/null
  umount /mnt 2>/dev/null
  poweroff -f
}

# Loads a module the host packed (and its dependencies, listed before it in /modules/order),
# with the given parameters; a module built into this kernel has no file and needs nothing.
load() {
  name=$1
  shift
  if [ -f "/modules/$name.ko" ]; then
    insmod "/modules/$name.ko" "$@" || say "insmod $name $* failed"
  fi
}
# The dependencies first, in the order the host resolved them (each loaded once).
load_with_deps() {
  target=$1
  shift
  while read -r module deps; do
    [ "$module" = "$target" ] || continue
    for dep in $deps; do
      grep -qw "^$dep" /proc/modules || load "$dep"
    done
  done </modules/order
  grep -qw "^$target" /proc/modules || load "$target" "$@"
}

for module in virtio_pci virtio_blk crc32c_generic ext4 sch_netem veth; do
  load_with_deps "$module"
done

if ! mount -t ext4 /dev/vda /mnt; then
  say "FATAL: cannot mount the scratch disk /dev/vda"
  halt_guest
fi
R=/mnt/lab
mkdir -p "$R"
uname -r >"$R/kernel"
# kvm-clock is offered only when the guest runs under KVM.
if grep -q kvm-clock /sys/devices/system/clocksource/clocksource0/available_clocksource; then
  echo kvm >"$R/accel"
else
  echo tcg >"$R/accel"
fi
say "kernel $(uname -r) up after $(cut -d' ' -f1 /proc/uptime) s, disk mounted"

# step NAME SECONDS COMMAND...: stdout to NAME.json, stderr to NAME.err, exit code to NAME.rc.
step() {
  name=$1
  limit=$2
  shift 2
  start=$(cut -d. -f1 /proc/uptime)
  (cd /mnt && timeout -s TERM "$limit" "$@" >"$R/$name.json" 2>"$R/$name.err")
  rc=$?
  echo "$rc" >"$R/$name.rc"
  echo "$*" >"$R/$name.cmd"
  say "step $name rc=$rc $(($(cut -d. -f1 /proc/uptime) - start))s"
  sync
}

# The engines `ringside engines` (its JSON in $1) calls available for workload $2, comma separated.
available() {
  awk -F'"' -v workload="$2" '
    /"workload":/ { w = $4 }
    /"engine":/ { e = $4 }
    /"available":/ { a = ($0 ~ /true/) }
    /^  }/ { if (a && w == workload) { list = list sep e; sep = "," } a = 0 }
    END { print list }' "$1"
}
# The engines available in listing $2 but not in listing $1, for workload $3.
newly_available() {
  before=",$(available "$1" "$3"),"
  for engine in $(available "$2" "$3" | tr ',' ' '); do
    case "$before" in *",$engine,"*) ;; *) printf '%s\n' "$engine" ;; esac
  done | paste -sd, -
}

ringside=/usr/local/bin/ringside
step probe 60 $ringside probe --dir /mnt --format json
step engines 60 $ringside engines --format json

files="--size 16M --runs 1 --runtime 2s --dir /mnt --format json --quiet"
fs_write=$(available "$R/engines.json" fs-write)
fs_cycle=$(available "$R/engines.json" fs-cycle)
step fs-write 300 $ringside fs write --engine "$fs_write" $files
step fs-write-direct 300 $ringside fs write --engine "$fs_write" --direct $files
cycle="--size 1M --runs 1 --dir /mnt --format json --quiet"
step fs-cycle 300 $ringside fs cycle --engine "$fs_cycle" $cycle
step fs-cycle-direct 300 $ringside fs cycle --engine "$fs_cycle" --direct $cycle
# fs read: libaio reads only O_DIRECT files (it refuses a buffered run), so it joins --direct only.
reads="--size 16M --depth 1,8 --runs 1 --runtime 2s --dir /mnt --format json --quiet"
fs_read=$(available "$R/engines.json" fs-read)
fs_read_buffered=$(printf '%s\n' "$fs_read" | tr ',' '\n' | grep -vx libaio | paste -sd, -)
step fs-read 300 $ringside fs read --engine "$fs_read_buffered" $reads
step fs-read-direct 300 $ringside fs read --engine "$fs_read" --direct $reads

network="--connections 1,8 --duration 1s --warmup 0.5s --runs 1 --format json --quiet"
step echo 300 $ringside echo --engine "$(available "$R/engines.json" echo)" $network
step http 300 $ringside http --engine "$(available "$R/engines.json" http)" $network

# Teardown with requests in flight (issue 31): every available server stopped by SIGTERM three
# times while 32 connections stream 16 KiB messages at it; each must exit 0 within 10 s and say
# nothing. Its teardown cancels by IORING_ASYNC_CANCEL_ANY from 5.19, request by request before.
cat >/tmp/teardown.sh <<'SCRIPT'
ringside=/usr/local/bin/ringside
failed=0
for engine in $(echo "$1" | tr ',' ' '); do
  for stop in 1 2 3; do
    $ringside serve echo --quiet --listen 127.0.0.1:0 --engine "$engine" >/tmp/serve.out \
      2>/tmp/serve.err &
    server=$!
    address=
    for _ in $(seq 100); do
      address=$(sed -n 's/^listening on //p' /tmp/serve.out)
      [ -n "$address" ] && break
      sleep 0.1
    done
    $ringside load echo --mode stream --connections 32 --payload 16k --duration 60s \
      --warmup 0s --target "$address" >/dev/null 2>&1 &
    load=$!
    sleep 1
    kill -TERM "$server"
    waited=0
    while kill -0 "$server" 2>/dev/null && [ "$waited" -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    kill -0 "$server" 2>/dev/null && kill -KILL "$server"
    wait "$server"
    rc=$?
    kill "$load" 2>/dev/null
    wait "$load" 2>/dev/null
    if [ "$rc" != 0 ] || [ -s /tmp/serve.err ]; then
      echo "$engine stop $stop: exit $rc $(cat /tmp/serve.err)" >&2
      failed=1
    fi
  done
  echo "$engine: stopped 3 times under load, in $((waited / 10)).$((waited % 10)) s the last"
done
exit $failed
SCRIPT
step teardown 600 sh /tmp/teardown.sh "$(available "$R/engines.json" echo)"

# Teardown holding thousands of idle connections: every available multiplexing server holds 5,000
# connections that each have their receive armed (an open loop of 50 messages/s over all of them),
# then gets SIGTERM; it must exit 0 and say nothing (no request still out when the teardown's
# stall bound passes, which prints "still held"), having held all 5,000 (a load that could not
# connect them checked nothing, and fails the step). 5.10 has neither DEFER_TASKRUN nor SQPOLL
# without privileges to drain, 6.1 and 6.12 have both. The time to exit is printed (under TCG it
# is not the host's). The thread-per-connection servers are left to tests/teardown.rs on the
# host: under TCG, threads' 5,000 threads took 500 s and the load's connect budget ran out.
# The step has its own budget (its second argument, in seconds of guest time, so the guest fits
# its 900 s on a slow day): engines go in the order of the teardown paths they add (io-wq
# workers, the SQPOLL thread, DEFER_TASKRUN, zero-copy notifications, buffer rings, then the
# rest), and those not started before it runs out are listed as not reached, which the verdict
# says as not checked.
cat >/tmp/idle.sh <<'SCRIPT'
ringside=/usr/local/bin/ringside
connections=5000
budget=$2
ulimit -n $((connections + 1024))
failed=0
# Seconds, and hundredths of a second, since boot.
seconds() { cut -d. -f1 /proc/uptime; }
now() { tr -d . </proc/uptime | cut -d' ' -f1; }
# TCP sockets in use, both ends of a connection and the listener (O(1), unlike /proc/net/tcp);
# established connections, both ends, from /proc/net/tcp (state 01).
in_use() { sed -n 's/^TCP: inuse \([0-9]*\).*/\1/p' /proc/net/sockstat; }
established() { grep -c '^ *[0-9]*: [0-9A-F:]* [0-9A-F:]* 01 ' /proc/net/tcp; }
deadline=$(($(seconds) + budget))
ordered=$(for first in uring-async uring-sqpoll uring-defer uring-send-zc uring-multishot epoll uring \
  $(echo "$1" | tr ',' ' '); do
  case ",$1," in *",$first,"*) echo "$first" ;; esac
done | awk '!seen[$0]++')
not_reached=
for engine in $ordered; do
  case "$engine" in blocking | threads) continue ;; esac # one connection at a time, a thread each
  # An engine needs up to 120 s to connect and 90 s to stop; one starts only with 60 s left.
  if [ $((deadline - $(seconds))) -lt 60 ]; then
    not_reached="$not_reached${not_reached:+, }$engine"
    continue
  fi
  $ringside serve echo --quiet --listen 127.0.0.1:0 --engine "$engine" >/tmp/serve.out \
    2>/tmp/serve.err &
  server=$!
  address=
  for _ in $(seq 100); do
    address=$(sed -n 's/^listening on //p' /tmp/serve.out)
    [ -n "$address" ] && break
    sleep 0.1
  done
  started=$(now)
  $ringside load echo --connections $connections --rate 50 --duration 300s --warmup 0s \
    --timeout 60s --target "$address" >/dev/null 2>/tmp/load.err &
  load=$!
  # Both ends of every connection established, within 120 s of guest time.
  connect_by=$(($(seconds) + 120))
  while [ "$(seconds)" -lt "$connect_by" ]; do
    [ "$(in_use)" -gt $((2 * connections)) ] && [ "$(established)" -ge $((2 * connections)) ] \
      && break
    sleep 0.5
  done
  held=$(($(established) / 2))
  connected=$(($(now) - started))
  sleep 2 # every connection sends within 100 s at 50/s over 5,000; its first after connecting
  signalled=$(now)
  kill -TERM "$server"
  waited=0
  while kill -0 "$server" 2>/dev/null && [ "$waited" -lt 900 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -0 "$server" 2>/dev/null && kill -KILL "$server"
  wait "$server"
  rc=$?
  took=$(($(now) - signalled))
  kill "$load" 2>/dev/null
  wait "$load" 2>/dev/null
  if [ "$held" -lt "$connections" ]; then
    echo "$engine: the load held $held of $connections connections after $((connected / 100)) s: $(tail -n 3 /tmp/load.err | tr '\n' ' ')" >&2
    failed=1
  elif [ "$rc" != 0 ] || [ -s /tmp/serve.err ]; then
    echo "$engine: holding $held connections, exit $rc after SIGTERM: $(cat /tmp/serve.err)" >&2
    failed=1
  fi
  echo "$engine: holding $held established connections (connected in $((connected / 100)).$((connected % 100 / 10)) s), exited $rc $((took / 100)).$((took % 100 / 10)) s after SIGTERM"
done
[ -n "$not_reached" ] && echo "not reached in the step's $budget s: $not_reached"
exit $failed
SCRIPT
step idle-teardown 600 sh /tmp/idle.sh "$(available "$R/engines.json" echo)" 360

step run-quick 600 $ringside run --quick --out /mnt/run-quick --dir /mnt --quiet
cp /mnt/run-quick/results.json "$R/run-quick-results.json" 2>/dev/null

# Three claims' short experiments (a cached read, buffered appends, multishot receive), so the
# ledger has this kernel's verdicts: `ringside claims merge` of the guests' documents and a host's
# prints where each was reproduced (docs/claims.md).
step claims 900 $ringside claims run --quick --quiet --out /mnt/claims --dir /mnt --format json \
  fs-read-cached-inline fs-write-appends-liburing-1261 echo-netbench-multishot
cp /mnt/claims/results.json "$R/claims-results.json" 2>/dev/null

# netem on the veth pair (root only, which PID 1 is): delay and loss, for function only.
step netem 300 $ringside echo --engine "$(available "$R/engines.json" echo)" \
  --network veth --rtt 200us --loss 0.1% --connections 8 --duration 1s --warmup 0.5s --runs 1 \
  --format json --quiet

# IOPOLL needs a block device with poll queues: a memory-backed null_blk where the module has
# poll_queues (5.13+), else the NVMe disk the host attached (nvme's poll_queues is older).
case "$LAB_POLL_DEVICE" in
  nullb)
    load_with_deps null_blk nr_devices=1 queue_mode=2 memory_backed=1 gb=1 bs=4096 \
      poll_queues=2 submit_queues=2
    poll_disk=/dev/nullb0
    ;;
  nvme)
    load_with_deps nvme poll_queues=2
    # The nvme driver probes the controller asynchronously.
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/nvme0n1 ] && break; sleep 1; done
    poll_disk=/dev/nvme0n1
    ;;
esac
name=$(basename "$poll_disk")
echo "$poll_disk io_poll=$(cat "/sys/block/$name/queue/io_poll" 2>/dev/null)" >"$R/poll-device"
mkdir -p /poll
if mkfs.ext4 -q -F "$poll_disk" >"$R/poll-mkfs.err" 2>&1 && mount -t ext4 "$poll_disk" /poll; then
  step engines-poll 60 $ringside engines --format json
  iopoll=$(newly_available "$R/engines.json" "$R/engines-poll.json" fs-write)
  echo "$iopoll" >"$R/iopoll-engines"
  if [ -n "$iopoll" ]; then
    step iopoll 300 $ringside fs write --engine "$iopoll" --direct --size 16M --runs 1 \
      --runtime 2s --dir /poll --format json --quiet
  fi
else
  say "cannot make or mount ext4 on $poll_disk"
fi

cut -d' ' -f1 /proc/uptime >"$R/seconds"
say "done after $(cat "$R/seconds") s"
halt_guest
