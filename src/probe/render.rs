//! The human form of the probe: short sections of aligned `key: value` lines, then the
//! warnings. Facts that are fine are kept to one line each; what is missing is spelled out.

use serde_json::{Map, Value};

use super::Probe;

/// Renders every section, then the warnings.
pub fn human(probe: &Probe) -> String {
    let sections = [
        ("host", host(probe)),
        ("io_uring", uring(probe)),
        ("limits", limits(probe)),
        ("cpu", cpu(probe)),
        ("mitigations", mitigations(probe)),
        ("target dir", target(probe)),
        ("syscall counting", counting(probe)),
    ];
    let width = sections
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(|(key, _)| key.len() + 1))
        .max()
        .unwrap_or(0);
    let mut text = format!("machine: {}\n", probe.machine);
    for (title, lines) in sections {
        text.push_str(&format!("{title}\n"));
        for (key, value) in lines {
            let key = format!("{key}:");
            text.push_str(&format!("  {key:<width$} {value}\n"));
        }
    }
    text.push_str(&format!("warnings ({})\n", probe.warnings.len()));
    for warning in &probe.warnings {
        text.push_str(&format!("  - {warning}\n"));
    }
    text
}

/// One line: CPU, memory, kernel, idle and scheduling state, the target filesystem, io_uring
/// and syscall counting, e.g. `2 x AMD EPYC, 23.5 GiB, Linux 6.18.44, idle haltpoll, ...`.
pub fn machine_line(probe: &Probe) -> String {
    let host = &probe.host;
    let target = &probe.target;
    let idle = probe.cpu.cpuidle_driver.as_deref().unwrap_or("unknown");
    let uring = if probe.io_uring.usable {
        "io_uring usable"
    } else {
        "io_uring UNAVAILABLE"
    };
    let counting = if probe.syscall_counting.works {
        "syscalls counted by kernel"
    } else {
        "syscalls self-counted"
    };
    format!(
        "{} x {}, {}, Linux {}, cpuidle {idle}, {}, {} at {}{}, {uring}, {counting}",
        host.cpus_online,
        host.cpu_model,
        gib(host.memory_bytes_total),
        host.kernel_release,
        probe.cpu.sched_policy,
        target.fs_type,
        target.path,
        if target.discard { " (discard)" } else { "" },
    )
}

type Lines = Vec<(String, String)>;

fn line(key: &str, value: String) -> (String, String) {
    (key.to_string(), value)
}

fn host(probe: &Probe) -> Lines {
    let host = &probe.host;
    vec![
        line("hostname", host.hostname.clone()),
        line("kernel", host.kernel_release.clone()),
        line("cpu model", host.cpu_model.clone()),
        line("cpus online", host.cpus_online.to_string()),
        line("memory", gib(host.memory_bytes_total)),
        line("ringside", host.ringside_version.to_string()),
        line("syscall layer", host.syscall_layer.to_string()),
        line("epoll wait", host.epoll_wait.clone()),
    ]
}

fn uring(probe: &Probe) -> Lines {
    let io_uring = &probe.io_uring;
    let sysctl = match io_uring.io_uring_disabled_sysctl {
        Some(0) => "0 (allowed)".to_string(),
        Some(1) => "1 (only kernel.io_uring_group)".to_string(),
        Some(2) => "2 (disabled)".to_string(),
        Some(other) => other.to_string(),
        None => "absent (kernel before 6.6)".to_string(),
    };
    let mut lines = vec![
        line("usable", usable_text(io_uring.reason.as_deref())),
        line("io_uring_disabled", sysctl),
    ];
    if io_uring.reason.is_some() {
        return lines;
    }
    lines.extend([
        line("features", names_where(&io_uring.features, true)),
        line("features missing", names_where(&io_uring.features, false)),
        line(
            "opcodes",
            format!(
                "{} of {} supported by this kernel",
                io_uring.opcodes_supported_count, io_uring.opcodes_kernel_count
            ),
        ),
        line("ringside's opcodes", names_where(&io_uring.opcodes, true)),
        line("opcodes missing", names_where(&io_uring.opcodes, false)),
        line("multishot", io_uring.opcodes_note.to_string()),
    ]);
    for (flag, outcome) in &io_uring.setup_flags {
        let text = match outcome["error"].as_str() {
            Some(error) => format!("refused: {error}"),
            None => "accepted".to_string(),
        };
        lines.push(line(setup_flag_key(flag), text));
    }
    let buf_ring = match &io_uring.buf_ring.error {
        Some(error) => format!("refused: {error}"),
        None => "registers".to_string(),
    };
    lines.push(line("provided buffer ring", buf_ring));
    lines
}

fn usable_text(reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("no: {reason}"),
        None => "yes".to_string(),
    }
}

/// The keys of `map` whose value is `wanted`, space separated ("none" when there are none).
fn names_where(map: &Map<String, Value>, wanted: bool) -> String {
    let names: Vec<&str> = map
        .iter()
        .filter(|(_, value)| value.as_bool() == Some(wanted))
        .map(|(name, _)| name.as_str())
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(" ")
    }
}

fn setup_flag_key(flag: &str) -> &'static str {
    match flag {
        "sqpoll" => "setup SQPOLL",
        "single_issuer" => "setup SINGLE_ISSUER",
        "defer_taskrun" => "setup DEFER_TASKRUN",
        "coop_taskrun" => "setup COOP_TASKRUN",
        "no_sqarray" => "setup NO_SQARRAY",
        _ => "setup flag",
    }
}

fn limits(probe: &Probe) -> Lines {
    let limit =
        |bytes: Option<u64>| bytes.map_or("unlimited".to_string(), |b| format!("{b} bytes"));
    let files = |count: Option<u64>| count.map_or("unlimited".to_string(), |n| format!("{n} fds"));
    vec![
        line("memlock soft", limit(probe.limits.memlock_bytes_soft)),
        line("memlock hard", limit(probe.limits.memlock_bytes_hard)),
        line("root", yes_no(probe.limits.running_as_root)),
        line("open files soft", files(probe.limits.open_files_soft)),
        line("open files hard", files(probe.limits.open_files_hard)),
    ]
}

fn cpu(probe: &Probe) -> Lines {
    let cpu = &probe.cpu;
    let unknown = |value: &Option<String>| value.clone().unwrap_or_else(|| "unknown".to_string());
    let states: Vec<String> = cpu
        .idle_states
        .iter()
        .map(|state| {
            format!(
                "{} ({})",
                state.name,
                if state.disabled { "off" } else { "on" }
            )
        })
        .collect();
    vec![
        line("cpuidle driver", unknown(&cpu.cpuidle_driver)),
        line("cpuidle governor", unknown(&cpu.cpuidle_governor)),
        line("idle states (cpu0)", states.join(", ")),
        line(
            "guest_halt_poll_ns",
            cpu.guest_halt_poll_ns
                .map_or("absent".to_string(), |ns| ns.to_string()),
        ),
        line("cpufreq governor", cpu.cpufreq_governor.clone()),
        line(
            "scheduling",
            format!("{} priority {}", cpu.sched_policy, cpu.sched_priority),
        ),
        line("transparent hugepages", unknown(&cpu.transparent_hugepages)),
        line(
            "perf_event_paranoid",
            cpu.perf_event_paranoid
                .map_or("unknown".to_string(), |v| v.to_string()),
        ),
    ]
}

/// Lists the vulnerabilities that are mitigated or open; the unaffected ones only as a count.
fn mitigations(probe: &Probe) -> Lines {
    let all = &probe.mitigations.vulnerabilities;
    let unaffected = all.values().filter(|text| *text == "Not affected").count();
    let mut lines: Lines = vec![
        line("note", probe.mitigations.note.to_string()),
        line("not affected", format!("{unaffected} of {}", all.len())),
    ];
    for (name, text) in all.iter().filter(|(_, text)| *text != "Not affected") {
        lines.push(line(name, text.as_str().unwrap_or("").to_string()));
    }
    lines
}

fn target(probe: &Probe) -> Lines {
    let target = &probe.target;
    if let Some(error) = &target.error {
        return vec![
            line("path", target.path.clone()),
            line("error", error.clone()),
        ];
    }
    let mut filesystem = target.fs_type.clone();
    if let Some(note) = target.fs_note {
        filesystem.push_str(&format!(" ({note})"));
    }
    let o_direct = match &target.o_direct_error {
        Some(error) => format!("fails: {error}"),
        None => "works (one 4 KiB write)".to_string(),
    };
    vec![
        line("path", target.path.clone()),
        line("filesystem", filesystem),
        line(
            "mount",
            format!("{} on {}", target.mount_source, target.mount_point),
        ),
        line("mount options", target.mount_options.clone()),
        line("fs options", target.fs_options.clone()),
        line("discard", yes_no(target.discard)),
        line(
            "free",
            format!("{} of {}", gib(target.bytes_free), gib(target.bytes_total)),
        ),
        line("O_DIRECT", o_direct),
    ]
}

fn counting(probe: &Probe) -> Lines {
    let text = match &probe.syscall_counting.error {
        Some(error) => format!("refused: {error}"),
        None => "yes (perf tracepoint raw_syscalls:sys_enter)".to_string(),
    };
    vec![line("kernel counts", text)]
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_string()
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}
