//! Sentences computed from the probe's facts: what will skew a result or limit what can be
//! measured here. They are part of the JSON too, so a results file says what was wrong with
//! the machine it came from.

use super::Probe;

/// Below this a non-root process cannot register a few MiB of buffers.
const MEMLOCK_BYTES_LOW: u64 = 64 << 20;

/// The oldest kernel ringside is checked on (Debian 11's 5.10, booted by the kernel lab).
const OLDEST_KERNEL: (u32, u32) = (5, 10);

pub fn of(probe: &Probe) -> Vec<String> {
    let mut warnings: Vec<String> = too_old(&probe.host.kernel_release).into_iter().collect();
    warnings.extend(uring(probe));
    warnings.extend(target(probe));
    if let Some(error) = &probe.syscall_counting.error {
        warnings.push(format!(
            "syscall counting refused: rows will carry the engines' own counts ({error})"
        ));
    }
    warnings.extend(cpu(probe));
    warnings
}

/// A kernel before `OLDEST_KERNEL`, said plainly: what runs there is unchecked.
fn too_old(release: &str) -> Option<String> {
    let version = crate::system::kernel::kernel_version(release)?;
    let (major, minor) = OLDEST_KERNEL;
    (version < OLDEST_KERNEL).then(|| {
        format!(
            "Linux {}.{} is older than {major}.{minor}, the oldest kernel ringside is checked on: \
             engines may be refused or fail here (each failure is a row that says why); \
             Linux {major}.{minor} or later gives the whole answer",
            version.0, version.1
        )
    })
}

fn uring(probe: &Probe) -> Vec<String> {
    let io_uring = &probe.io_uring;
    if let Some(reason) = &io_uring.reason {
        return vec![format!("io_uring unavailable: {reason}")];
    }
    let mut warnings: Vec<String> = io_uring
        .setup_flags
        .iter()
        .filter(|(_, outcome)| outcome["accepted"] == false)
        .map(|(flag, outcome)| {
            let error = outcome["error"].as_str().unwrap_or("refused");
            format!("io_uring setup flag {flag} refused: {error}")
        })
        .collect();
    let limits = &probe.limits;
    if !limits.running_as_root
        && limits
            .memlock_bytes_soft
            .is_some_and(|b| b < MEMLOCK_BYTES_LOW)
    {
        warnings.push(format!(
            "RLIMIT_MEMLOCK is {} bytes: registered buffers beyond it will be refused (ulimit -l)",
            limits.memlock_bytes_soft.unwrap_or(0)
        ));
    }
    warnings
}

fn target(probe: &Probe) -> Vec<String> {
    let target = &probe.target;
    if let Some(error) = &target.error {
        return vec![format!("target dir not probed: {error}")];
    }
    let mut warnings = Vec::new();
    if !target.real_disk {
        warnings.push(format!(
            "target dir is {}: file results will not touch a disk",
            target.fs_type
        ));
    }
    if target.discard {
        warnings.push(
            "mount has discard: deleting big files slows the next run (reuse files or trim)"
                .to_string(),
        );
    }
    if let Some(error) = &target.o_direct_error {
        warnings.push(format!("O_DIRECT does not work in the target dir: {error}"));
    }
    warnings
}

fn cpu(probe: &Probe) -> Vec<String> {
    let cpu = &probe.cpu;
    let mut warnings = Vec::new();
    let halting: Vec<&str> = cpu
        .idle_states
        .iter()
        .filter(|state| !state.disabled && state.name != "POLL")
        .map(|state| state.name.as_str())
        .collect();
    if !halting.is_empty() {
        warnings.push(format!(
            "idle vCPUs may halt ({}): few-connection latency includes the wake-up path; the \
             network studies' --idle poll keeps them from it (it changed such latency 3-7x on \
             a 2-vCPU VM)",
            halting.join(", ")
        ));
    }
    if !matches!(cpu.sched_policy.as_str(), "SCHED_FIFO" | "SCHED_RR") {
        warnings.push(format!(
            "running under {}: other work on the machine can lower results 2-9x; the \
             network studies' --sched fifo runs server and load real-time",
            cpu.sched_policy
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_that_bite_become_sentences() {
        let dir = tempfile::tempdir().unwrap();
        let mut probe = Probe::gather(dir.path());
        probe.io_uring.reason = Some("disabled by sysctl".to_string());
        probe.target.fs_type = "tmpfs".to_string();
        probe.target.real_disk = false;
        probe.target.discard = true;
        probe.syscall_counting.error = Some("EACCES".to_string());
        probe.host.kernel_release = "5.4.0-150-generic".to_string();
        let text = of(&probe).join("\n");
        for expected in [
            "Linux 5.4 is older than 5.10, the oldest kernel ringside is checked on",
            "io_uring unavailable: disabled by sysctl",
            "target dir is tmpfs: file results will not touch a disk",
            "mount has discard",
            "syscall counting refused: rows will carry the engines' own counts",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
    }
}
