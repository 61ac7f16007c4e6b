#!/bin/bash
# prof.sh NAME CMD...: server on CPU 0 (FIFO), echo_bench 50 conns on CPU 1, perf record CPU 0 for 5 s.
name=$1; shift
port=$1; shift
chrt -f 50 taskset -c 0 "$@" > /dev/null 2>&1 &
pid=$!
sleep 0.5
chrt -f 50 taskset -c 1 /work/peers/bin/echo_bench -a 127.0.0.1:$port -c 50 -t 8 -l 64 > $name.bench 2>&1 &
bpid=$!
sleep 2
perf record -q -g -C 0 -e cpu-clock -o $name.data -- sleep 5 2>/dev/null
perf stat -e 'raw_syscalls:sys_enter,context-switches,irq:softirq_entry,ipi:*' -C 0 -- sleep 2 2> $name.stat
wait $bpid
kill $pid; wait $pid 2>/dev/null
for _ in $(seq 50); do [ -z "$(ss -Hltn "sport = :$port")" ] && break; sleep 0.1; done
