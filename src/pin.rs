//! Pinning threads to cores, so a server and its load generator (or a file engine and the
//! noise of the machine) do not share a CPU by accident.

use anyhow::Context;
use rustix::thread::{sched_setaffinity, CpuSet};

/// Pins the calling thread (and threads it starts later) to `cpu`.
pub fn pin_current_thread(cpu: usize) -> anyhow::Result<()> {
    let count = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    anyhow::ensure!(
        cpu < CpuSet::MAX_CPU && cpu < count.max(cpu_count_online()),
        "--cpu {cpu} is not a CPU of this machine (it has {count}: 0..{})",
        count - 1
    );
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).with_context(|| format!("cannot pin to CPU {cpu}"))
}

/// CPUs online, from sysfs; `available_parallelism` may already be narrowed by a pin.
pub fn cpu_count_online() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| {
            text.trim()
                .split(',')
                .map(|range| {
                    let mut ends = range.split('-').map(|n| n.parse::<usize>().ok());
                    match (ends.next().flatten(), ends.next().flatten()) {
                        (Some(first), Some(last)) => Some(last + 1 - first),
                        (Some(_), None) => Some(1),
                        _ => None,
                    }
                })
                .sum::<Option<usize>>()
        })
        .unwrap_or(1)
}
