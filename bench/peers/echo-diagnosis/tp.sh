#!/bin/bash
# tp.sh NAME PORT CMD...: server on CPU 0 (FIFO), echo_bench 50 conns on CPU 1 for 6 s; perf stat
# io_uring tracepoints of the server process for 3 s in the middle.
name=$1; shift; port=$1; shift
chrt -f 50 taskset -c 0 "$@" > /dev/null 2>&1 &
pid=$!
sleep 0.5
chrt -f 50 taskset -c 1 /work/peers/bin/echo_bench -a 127.0.0.1:$port -c 50 -t 6 -l 64 > $name.bench 2>&1 &
bpid=$!
sleep 2
perf stat -x, -e 'io_uring:io_uring_submit_req,io_uring:io_uring_complete,io_uring:io_uring_poll_arm,io_uring:io_uring_task_work_run,syscalls:sys_enter_io_uring_enter,sched:sched_switch' -p $pid -- sleep 3 2> $name.tp
wait $bpid
kill $pid; wait $pid 2>/dev/null
for _ in $(seq 50); do [ -z "$(ss -Hltn "sport = :$port")" ] && break; sleep 0.1; done
