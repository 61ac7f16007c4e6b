//! Looking engines up in the table: by workload, by name, the defaults, the opcodes used, and the
//! engine a rung is compared with.

use std::sync::OnceLock;

use super::needs::Opcode;
use super::{parent_name, EngineDef, Workload, ENGINES};

/// The engines that serve `workload`, in table order.
pub fn engines_of(workload: Workload) -> impl Iterator<Item = &'static EngineDef> {
    ENGINES.iter().filter(move |engine| engine.serves(workload))
}

/// The engine of `workload` called `name`; `name#k` (k ≥ 2) is that engine again under its own
/// label, so a study can measure one engine twice and check that ringside calls no difference
/// between the two (an A/A check).
pub fn find(workload: Workload, name: &str) -> anyhow::Result<&'static EngineDef> {
    let (base, copy) = match name.split_once('#') {
        Some((base, copy)) => (base, Some(copy)),
        None => (name, None),
    };
    let engine = engines_of(workload)
        .find(|engine| engine.name == base)
        .ok_or_else(|| {
            let known: Vec<&str> = engines_of(workload).map(|engine| engine.name).collect();
            let what = if workload.is_network() {
                "a network engine".to_string()
            } else {
                format!("an engine of {}", workload.name())
            };
            anyhow::anyhow!("'{name}' is not {what}: choose from {}", known.join(", "))
        })?;
    match copy {
        None => Ok(engine),
        Some(copy) if copy.parse::<u32>().is_ok_and(|k| k >= 2) => Ok(labelled(engine, name)),
        Some(_) => anyhow::bail!(
            "'{name}': a copy of an engine is named NAME#2, NAME#3, ... (or give the name twice)"
        ),
    }
}

/// `engine` under another label. Leaked: a study names each copy once, and a row of the table
/// lives as long as the process.
fn labelled(engine: &'static EngineDef, label: &str) -> &'static EngineDef {
    let name: &'static str = Box::leak(label.to_string().into_boxed_str());
    Box::leak(Box::new(EngineDef { name, ..*engine }))
}

/// Resolves `--engine` names for `workload`; none named means the workload's default set. A
/// name given again is that engine once more, labelled `#2`, `#3`, ….
pub fn select(workload: Workload, names: &[String]) -> anyhow::Result<Vec<&'static EngineDef>> {
    if names.is_empty() {
        return Ok(engines_of(workload)
            .filter(|engine| engine.default_for.contains(&workload))
            .collect());
    }
    let mut labels: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let copies = labels
            .iter()
            .filter(|label| label.split('#').next() == Some(name.as_str()))
            .count();
        labels.push(match copies {
            0 => name.clone(),
            n => format!("{name}#{}", n + 1),
        });
    }
    labels.iter().map(|label| find(workload, label)).collect()
}

/// The engine a study of `workload` measures io_uring against: blocking calls for files, epoll
/// (the readiness API io_uring replaces) for servers.
pub fn baseline(workload: Workload) -> &'static str {
    if workload.is_network() {
        "epoll"
    } else {
        "blocking"
    }
}

/// `engines` with the A/A pair: the workload's baseline once more (`blocking#2`, `epoll#2`),
/// an ordinary cell of every round, so a study measures how often it tells an engine from
/// itself. Nothing is added where the baseline is not among `engines`, or already twice.
pub fn with_aa_pair(
    workload: Workload,
    mut engines: Vec<&'static EngineDef>,
) -> Vec<&'static EngineDef> {
    let base = baseline(workload);
    let copies = (engines.iter())
        .filter(|engine| engine.name.split('#').next() == Some(base))
        .count();
    if copies == 1 {
        engines.push(find(workload, &format!("{base}#2")).expect("the baseline serves workload"));
    }
    engines
}

/// Every engine of `workload` a study can run (`--full`): all of them but those that need a
/// NIC's queue, which a study's network never has (they stay available by name, and their
/// rows say why they cannot run).
pub fn full_list(workload: Workload) -> Vec<&'static EngineDef> {
    engines_of(workload)
        .filter(|engine| !engine.needs.features.iter().any(|f| f.needs_a_nic()))
        .collect()
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

/// The engine `engine` is compared with among those that `ran`: its parent, or where the parent
/// did not run the nearest ancestor that did, with the engines skipped between; None when no
/// ancestor ran (or it has none).
pub fn nearest_ran(
    workload: &str,
    engine: &str,
    ran: &dyn Fn(&str) -> bool,
) -> Option<(String, Vec<String>)> {
    let mut skipped = Vec::new();
    let mut ancestor = parent_of(workload, engine)?;
    while !ran(&ancestor) {
        // The table's tree has no cycles (a test checks every parent is an earlier row).
        debug_assert!(skipped.len() < 64, "a cycle in the ladder above {engine}");
        let next = parent_of(workload, &ancestor)?;
        skipped.push(std::mem::replace(&mut ancestor, next));
    }
    Some((ancestor, skipped))
}

/// The engine `engine` is compared with as its parent: the engine table's parent, or, for a
/// second copy of an engine (`epoll#2`, an A/A check), the engine itself.
pub fn parent_of(workload: &str, engine: &str) -> Option<String> {
    match engine.split_once('#') {
        Some((name, _)) => Some(name.to_string()),
        None => parent_name(workload, engine).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(engines: &[&EngineDef]) -> Vec<String> {
        engines
            .iter()
            .map(|engine| engine.name.to_string())
            .collect()
    }

    /// Goal: the default engines get their baseline's copy once; a list without the baseline,
    /// or with its copy already, is left as it is.
    #[test]
    fn the_aa_pair_is_the_baseline_once_more() {
        let defaults = with_aa_pair(Workload::FsWrite, select(Workload::FsWrite, &[]).unwrap());
        let names_of = names(&defaults);
        assert_eq!(names_of.iter().filter(|n| *n == "blocking#2").count(), 1);
        let echo = with_aa_pair(Workload::Echo, select(Workload::Echo, &[]).unwrap());
        assert!(names(&echo).contains(&"epoll#2".to_string()));
        let twice = ["epoll".to_string(), "epoll".to_string()];
        let named = with_aa_pair(Workload::Http, select(Workload::Http, &twice).unwrap());
        assert_eq!(names(&named), ["epoll", "epoll#2"]);
        let without = ["uring".to_string()];
        let named = with_aa_pair(Workload::Http, select(Workload::Http, &without).unwrap());
        assert_eq!(names(&named), ["uring"]);
    }
}
