//! Looking engines up in the table: by workload, by name, the defaults, the opcodes used.

use std::sync::OnceLock;

use super::needs::Opcode;
use super::{EngineDef, Workload, ENGINES};

/// The engines that serve `workload`, in table order.
pub fn engines_of(workload: Workload) -> impl Iterator<Item = &'static EngineDef> {
    ENGINES.iter().filter(move |engine| engine.serves(workload))
}

/// The engine of `workload` called `name`.
pub fn find(workload: Workload, name: &str) -> anyhow::Result<&'static EngineDef> {
    engines_of(workload)
        .find(|engine| engine.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = engines_of(workload).map(|engine| engine.name).collect();
            let what = if workload.is_network() {
                "a network engine".to_string()
            } else {
                format!("an engine of {}", workload.name())
            };
            anyhow::anyhow!("'{name}' is not {what}: choose from {}", known.join(", "))
        })
}

/// Resolves `--engine` names for `workload`; none named means the workload's default set.
pub fn select(workload: Workload, names: &[String]) -> anyhow::Result<Vec<&'static EngineDef>> {
    if names.is_empty() {
        return Ok(engines_of(workload)
            .filter(|engine| engine.default_for.contains(&workload))
            .collect());
    }
    names.iter().map(|name| find(workload, name)).collect()
}

/// The default engines of `workload` as one comma-separated list (a flag's default).
pub fn default_list(workload: Workload) -> &'static str {
    static LISTS: OnceLock<Vec<String>> = OnceLock::new();
    let lists = LISTS.get_or_init(|| {
        Workload::ALL
            .iter()
            .map(|&workload| {
                let names: Vec<&str> = select(workload, &[])
                    .expect("defaults resolve")
                    .iter()
                    .map(|engine| engine.name)
                    .collect();
                names.join(",")
            })
            .collect()
    });
    let index = Workload::ALL.iter().position(|&w| w == workload);
    &lists[index.expect("every workload is in ALL")]
}

/// Every opcode some engine submits, in table order, each once: what the probe reports.
pub fn opcodes_used() -> Vec<Opcode> {
    let mut opcodes: Vec<Opcode> = Vec::new();
    for opcode in ENGINES.iter().flat_map(|engine| engine.needs.opcodes) {
        if !opcodes.contains(opcode) {
            opcodes.push(*opcode);
        }
    }
    opcodes
}
