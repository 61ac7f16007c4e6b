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

/// Where a server's event loops and its load generator's threads run: loop i on `server[i]`,
/// load thread i on `client[i]` (both round robin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSplit {
    pub server: Vec<usize>,
    pub client: Vec<usize>,
}

impl CpuSplit {
    /// The fair split of `online` for `server_threads` loops: each loop on a CPU of its own
    /// (the first ones of `server`, or of `online` when not given), the load on the CPUs left
    /// (`client` when given). With no CPU left the load runs on the last online CPU, sharing
    /// it with a loop: then the run measures sharing, not scaling (`shared` says so).
    pub fn fair(
        online: &[usize],
        server_threads: usize,
        server: Option<&[usize]>,
        client: Option<&[usize]>,
    ) -> CpuSplit {
        assert!(!online.is_empty() && server_threads > 0);
        let server = server.unwrap_or(online);
        let server: Vec<usize> = server.iter().copied().take(server_threads).collect();
        let client = match client {
            Some(client) => client.to_vec(),
            None => {
                let left: Vec<usize> = (online.iter().copied())
                    .filter(|cpu| !server.contains(cpu))
                    .collect();
                match left.is_empty() {
                    true => vec![*online.last().expect("an online CPU")],
                    false => left,
                }
            }
        };
        assert!(!server.is_empty() && !client.is_empty());
        CpuSplit { server, client }
    }

    /// The CPUs that both a server loop and a load thread run on.
    pub fn shared(&self) -> Vec<usize> {
        (self.client.iter().copied())
            .filter(|cpu| self.server.contains(cpu))
            .collect()
    }
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

    /// The load takes the CPUs the server leaves, one thread each; on a machine with no CPU
    /// left, the last one, shared; CPUs given on the command line win.
    #[test]
    fn the_load_takes_the_cpus_the_server_leaves() {
        let split = |online: &[usize], threads, server: Option<&[usize]>, client| {
            let split = CpuSplit::fair(online, threads, server, client);
            (split.server.clone(), split.client.clone(), split.shared())
        };
        let none: Vec<usize> = Vec::new();
        assert_eq!(
            split(&[0, 1], 1, None, None),
            (vec![0], vec![1], none.clone())
        );
        assert_eq!(
            split(&[0, 1], 2, None, None),
            (vec![0, 1], vec![1], vec![1])
        );
        assert_eq!(split(&[0], 1, None, None), (vec![0], vec![0], vec![0]));
        let eight: Vec<usize> = (0..8).collect();
        assert_eq!(
            split(&eight, 2, None, None),
            (vec![0, 1], (2..8).collect(), none.clone())
        );
        assert_eq!(
            split(&eight, 4, None, None),
            (vec![0, 1, 2, 3], vec![4, 5, 6, 7], none.clone())
        );
        // More loops than CPUs: every CPU serves, the loops go round robin over them.
        assert_eq!(
            split(&[0, 1], 4, None, None),
            (vec![0, 1], vec![1], vec![1])
        );
        // Given CPUs win: the server's list is cut to the loops, the client's kept whole.
        assert_eq!(
            split(&eight, 2, Some(&[4, 5, 6]), None),
            (vec![4, 5], vec![0, 1, 2, 3, 6, 7], none.clone())
        );
        assert_eq!(
            split(&eight, 1, None, Some(&[0, 7])),
            (vec![0], vec![0, 7], vec![0])
        );
        // Online CPUs need not start at 0 or be contiguous.
        assert_eq!(
            split(&[2, 5], 1, None, None),
            (vec![2], vec![5], none.clone())
        );
        // Issue 29 §4: on a 16-core machine every `--server-threads` cell gives each loop a
        // CPU of its own and the load the CPUs left, one thread each: nothing shared, so no
        // row says it measured sharing.
        let sixteen: Vec<usize> = (0..16).collect();
        for loops in [1, 2, 4, 8] {
            assert_eq!(
                split(&sixteen, loops, None, None),
                ((0..loops).collect(), (loops..16).collect(), none.clone()),
                "{loops} loops"
            );
        }
    }
}
