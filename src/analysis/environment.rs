//! The probe's environment as the report shows it: the few facts that decide the numbers
//! (kernel, CPU, target filesystem, whether syscalls were counted, scheduling and idle policy)
//! and the probe's warnings. Facts are looked up by path in the `env` block, so a document from
//! a probe that lacks one simply shows fewer lines.

use serde_json::Value;

/// Label and JSON pointer of each fact, in the order the report lists them.
const FACTS: [(&str, &str); 14] = [
    ("kernel", "/host/kernel_release"),
    ("CPU", "/host/cpu_model"),
    ("CPUs online", "/host/cpus_online"),
    ("memory bytes", "/host/memory_bytes_total"),
    ("syscall layer", "/host/syscall_layer"),
    ("io_uring usable", "/io_uring/usable"),
    ("syscalls counted by the kernel", "/syscall_counting/works"),
    ("target directory", "/target/path"),
    ("target filesystem", "/target/fs_type"),
    ("target device", "/target/mount_source"),
    ("discard", "/target/discard"),
    ("scheduling policy", "/cpu/sched_policy"),
    ("idle driver", "/cpu/cpuidle_driver"),
    ("CPU frequency governor", "/cpu/cpufreq_governor"),
];

/// The facts present in `env`, as (label, value) text pairs.
pub fn facts(env: &Value) -> Vec<(&'static str, String)> {
    FACTS
        .iter()
        .filter_map(|(label, pointer)| {
            let value = env.pointer(pointer)?;
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Bool(true) => "yes".to_string(),
                Value::Bool(false) => "no".to_string(),
                other => other.to_string(),
            };
            Some((*label, text))
        })
        .collect()
}

/// The probe's warnings: conditions on this machine that move the numbers.
pub fn warnings(env: &Value) -> Vec<String> {
    env.pointer("/warnings")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// One line naming the machine, for the top of the report.
pub fn machine_line(env: &Value) -> String {
    let text = |pointer: &str| {
        env.pointer(pointer)
            .map(|value| {
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), String::from)
            })
            .unwrap_or_else(|| "unknown".to_string())
    };
    format!(
        "Linux {} on {} ({} CPUs); files on {} ({})",
        text("/host/kernel_release"),
        text("/host/cpu_model"),
        text("/host/cpus_online"),
        text("/target/fs_type"),
        text("/target/path"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn present_facts_are_listed_and_missing_ones_skipped() {
        let env = json!({"host": {"kernel_release": "6.18.0", "cpus_online": 2},
                         "target": {"discard": true}, "warnings": ["discard is on"]});
        let facts = facts(&env);
        assert_eq!(facts[0], ("kernel", "6.18.0".to_string()));
        assert!(facts.contains(&("discard", "yes".to_string())));
        assert_eq!(facts.len(), 3);
        assert_eq!(warnings(&env), ["discard is on"]);
        assert!(machine_line(&env).starts_with("Linux 6.18.0 on unknown (2 CPUs)"));
    }
}
