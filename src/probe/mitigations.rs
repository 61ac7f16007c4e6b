//! CPU vulnerability mitigations as the kernel reports them. They set the price of every
//! syscall and context switch (≈ 174 ns for an empty syscall on this VM, 2-3x bare metal), so
//! two machines with different mitigations cannot be compared on syscall-heavy engines.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use super::read_trimmed;

pub const VULNERABILITIES_DIR: &str = "/sys/devices/system/cpu/vulnerabilities";

#[derive(Clone, Debug, Serialize)]
pub struct Mitigations {
    pub note: &'static str,
    /// File name in the vulnerabilities directory -> its content, sorted by name.
    pub vulnerabilities: Map<String, Value>,
}

impl Mitigations {
    /// Reads every file of `dir`; an unreadable directory gives an empty map.
    pub fn read(dir: &Path) -> Mitigations {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let vulnerabilities = names
            .into_iter()
            .filter_map(|name| {
                let text = read_trimmed(dir.join(&name))?;
                Some((name, Value::from(text)))
            })
            .collect();
        Mitigations {
            note: "mitigations set the price of a syscall and a context switch",
            vulnerabilities,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_file_sorted_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spectre_v2"), "Mitigation: Retpolines\n").unwrap();
        std::fs::write(dir.path().join("meltdown"), "Not affected\n").unwrap();
        let read = Mitigations::read(dir.path());
        let names: Vec<&String> = read.vulnerabilities.keys().collect();
        assert_eq!(names, ["meltdown", "spectre_v2"]);
        assert_eq!(read.vulnerabilities["spectre_v2"], "Mitigation: Retpolines");
    }

    #[test]
    fn a_missing_directory_gives_no_entries() {
        let read = Mitigations::read(Path::new("/nonexistent/vulnerabilities"));
        assert!(read.vulnerabilities.is_empty());
    }
}
