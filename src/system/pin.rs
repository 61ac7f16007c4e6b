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
    cpus_online().len().max(1)
}

/// The online CPUs, ascending (`/sys/devices/system/cpu/online`; CPU 0 alone if unreadable).
pub fn cpus_online() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| parse_cpus(text.trim()).ok())
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// A CPU list given on the command line (one value, not one per CPU, to clap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Parses a CPU list in the kernel's notation (`0-3,6`), ascending and without repeats.
pub fn parse_cpus(text: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("'{text}' is not a CPU list (e.g. 1 or 0-3,6)");
    let mut cpus = Vec::new();
    for range in text.split(',') {
        let (first, last) = match range.split_once('-') {
            Some((first, last)) => (first.trim(), last.trim()),
            None => (range.trim(), range.trim()),
        };
        let first: usize = first.parse().map_err(|_| bad())?;
        let last: usize = last.parse().map_err(|_| bad())?;
        if first > last || last >= CpuSet::MAX_CPU {
            return Err(bad());
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The CPUs the calling thread may run on.
pub fn current_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU)
            .filter(|&cpu| set.is_set(cpu))
            .collect(),
        Err(_) => cpus_online(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_the_kernels() {
        assert_eq!(parse_cpus("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpus("1").unwrap(), vec![1]);
        assert_eq!(parse_cpus("2,0-1,1").unwrap(), vec![0, 1, 2]);
        for bad in ["", "a", "3-1", "1-", "99999"] {
            assert!(parse_cpus(bad).is_err(), "{bad}");
        }
        assert!(!cpus_online().is_empty());
    }
}
