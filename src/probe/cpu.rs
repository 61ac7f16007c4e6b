//! The CPU state that moves latency numbers 3-9x on a VM: how idle vCPUs wait (cpuidle driver,
//! states, haltpoll's polling window), the frequency governor, this process's scheduling policy
//! (FINDINGS: echo results were 2-9x lower without SCHED_FIFO), transparent hugepages, and the
//! perf policy that decides whether syscalls can be counted.

use serde::Serialize;

use super::read_trimmed;

const CPUIDLE_DIR: &str = "/sys/devices/system/cpu/cpuidle";
const CPU0_DIR: &str = "/sys/devices/system/cpu/cpu0";

#[derive(Clone, Debug, Serialize)]
pub struct CpuState {
    pub cpuidle_driver: Option<String>,
    pub cpuidle_governor: Option<String>,
    /// cpu0's idle states; a disabled deep state keeps wake-ups fast.
    pub idle_states: Vec<IdleState>,
    /// How long an idle vCPU polls before halting (the haltpoll driver), when present.
    pub guest_halt_poll_ns: Option<u64>,
    /// The cpufreq governor, or "none (VM)" when the guest cannot set the frequency.
    pub cpufreq_governor: String,
    pub sched_policy: String,
    pub sched_priority: i32,
    pub transparent_hugepages: Option<String>,
    pub perf_event_paranoid: Option<i32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct IdleState {
    pub name: String,
    pub disabled: bool,
}

impl CpuState {
    pub fn read() -> CpuState {
        let (sched_policy, sched_priority) = sched_policy();
        CpuState {
            cpuidle_driver: read_trimmed(format!("{CPUIDLE_DIR}/current_driver")),
            cpuidle_governor: read_trimmed(format!("{CPUIDLE_DIR}/current_governor"))
                .or_else(|| read_trimmed(format!("{CPUIDLE_DIR}/current_governor_ro"))),
            idle_states: idle_states(),
            guest_halt_poll_ns: read_trimmed("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
                .and_then(|text| text.parse().ok()),
            cpufreq_governor: read_trimmed(format!("{CPU0_DIR}/cpufreq/scaling_governor"))
                .unwrap_or_else(|| "none (VM)".to_string()),
            sched_policy,
            sched_priority,
            transparent_hugepages: read_trimmed("/sys/kernel/mm/transparent_hugepage/enabled")
                .map(|text| selected_choice(&text)),
            perf_event_paranoid: read_trimmed("/proc/sys/kernel/perf_event_paranoid")
                .and_then(|text| text.parse().ok()),
        }
    }
}

fn idle_states() -> Vec<IdleState> {
    (0..)
        .map_while(|index| {
            let dir = format!("{CPU0_DIR}/cpuidle/state{index}");
            let name = read_trimmed(format!("{dir}/name"))?;
            let disabled = read_trimmed(format!("{dir}/disable")).is_some_and(|text| text == "1");
            Some(IdleState { name, disabled })
        })
        .collect()
}

fn sched_policy() -> (String, i32) {
    // SAFETY: both calls only read this process's scheduling attributes.
    let (policy, param) = unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        libc::sched_getparam(0, &mut param);
        (libc::sched_getscheduler(0), param)
    };
    let name = match policy {
        libc::SCHED_OTHER => "SCHED_OTHER".to_string(),
        libc::SCHED_FIFO => "SCHED_FIFO".to_string(),
        libc::SCHED_RR => "SCHED_RR".to_string(),
        libc::SCHED_BATCH => "SCHED_BATCH".to_string(),
        libc::SCHED_IDLE => "SCHED_IDLE".to_string(),
        6 => "SCHED_DEADLINE".to_string(),
        other => format!("unknown ({other})"),
    };
    (name, param.sched_priority)
}

/// The bracketed choice of a sysfs multiple-choice file: "always [madvise] never" -> "madvise".
fn selected_choice(text: &str) -> String {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(text)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_choice_is_the_bracketed_word() {
        assert_eq!(selected_choice("always [madvise] never"), "madvise");
        assert_eq!(selected_choice("plain"), "plain");
    }

    #[test]
    fn this_process_has_a_named_policy() {
        let (name, _) = sched_policy();
        assert!(name.starts_with("SCHED_"), "{name}");
    }
}
