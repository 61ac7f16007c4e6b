//! `ringside claims merge`: the claims ledger across machines. Each results document (one per
//! machine, from `claims run` or any study) is read through the result gate, analysed once and
//! its claims judged as its own report judges them (`claims::sections`); then one table holds
//! each claim's test × each machine (CPU model and count, kernel, filesystem, root or not) with
//! its verdict and measured ratio, and each test gets a line saying where it was reproduced and
//! where not ("reproduced on 3 of 5 machines, Linux 6.1–6.18; reversed on 1, Linux 5.10"). The
//! same claim at two versions of its file is two rows. A machine whose CPU is QEMU's emulated
//! one is marked so: its verdicts are about its kernel, not its speed.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::analysis::Analysis;
use crate::model::claim::ratio_text;
use crate::report::claims::{claims_of, evidence, table_row, ClaimReport, ClaimRow};
use crate::report::load::{document_path, load_document};
use crate::row::Document;

/// The largest document `claims merge` reads: a full claims run writes about 2 MB, a full
/// `ringside run` a few tens; a bigger file is not one of ringside's, and reading it whole
/// would hold it all in memory.
pub const DOCUMENT_BYTES_MAX: u64 = 256 << 20;

/// One machine of the ledger: what its document's environment says of it.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// The document as given on the command line.
    pub document: String,
    pub cpu: String,
    pub cpus: Option<u64>,
    pub kernel: String,
    pub filesystem: String,
    pub root: Option<bool>,
    /// When its first row was measured (UTC, to the minute).
    pub measured: Option<String>,
    /// Its claims ran their quick form: its verdicts are provisional.
    pub quick: bool,
    /// Its CPU is QEMU's emulated one: its verdicts are about its kernel, not its speed.
    pub emulated: bool,
}

impl Machine {
    fn of(name: &str, document: &Document) -> Machine {
        let env = &document.env;
        let text = |pointer: &str| match env.pointer(pointer) {
            Some(Value::String(text)) => text.clone(),
            Some(other) if !other.is_null() => other.to_string(),
            _ => "unknown".to_string(),
        };
        let cpu = text("/host/cpu_model");
        let start = (document.results.iter())
            .filter_map(|row| row.window_start_unix_s)
            .fold(f64::INFINITY, f64::min);
        let measured = (start.is_finite() && start >= 0.0).then(|| {
            let when = UNIX_EPOCH + Duration::from_secs(start as u64);
            let text = humantime::format_rfc3339_seconds(when).to_string();
            text.chars().take(16).collect::<String>().replace('T', " ")
        });
        let quick = (document.results.iter()).any(|row| {
            row.params.get(crate::row::params::CLAIM_FORM_PARAM) == Some(&Value::from("quick"))
        });
        Machine {
            document: name.to_string(),
            emulated: cpu.contains("QEMU"),
            cpu,
            cpus: env.pointer("/host/cpus_online").and_then(Value::as_u64),
            kernel: text("/host/kernel_release"),
            filesystem: text("/target/fs_type"),
            root: env
                .pointer("/limits/running_as_root")
                .and_then(Value::as_bool),
            measured,
            quick,
        }
    }

    /// "AMD EPYC ×2, Linux 6.18.44, ext4, root, 2026-11-29 09:36 UTC".
    fn text(&self) -> String {
        let cpus = self.cpus.map(|n| format!(" ×{n}")).unwrap_or_default();
        let root = match self.root {
            Some(true) => ", root",
            Some(false) => ", not root",
            None => "",
        };
        let mut text = format!(
            "{}{cpus}, Linux {}, {}{root}",
            self.cpu, self.kernel, self.filesystem
        );
        if let Some(when) = &self.measured {
            text += &format!(", {when} UTC");
        }
        if self.quick {
            text += ", quick forms (provisional)";
        }
        if self.emulated {
            text += ", emulated CPU: its verdicts are about its kernel, not its speed";
        }
        text
    }
}

/// One test's verdict on one machine.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub machine: usize,
    #[serde(flatten)]
    pub row: ClaimRow,
}

/// The ledger: the machines, and every verdict on each.
#[derive(Clone, Debug, Serialize)]
pub struct Ledger {
    pub machines: Vec<Machine>,
    pub entries: Vec<Entry>,
}

/// Reads one machine's document: no bigger than `DOCUMENT_BYTES_MAX`, through the result gate
/// (`load_document`), every latency histogram decoding within its bounds, and every claim
/// file it keeps parsing. Each refusal names the document.
pub fn read(path: &Path) -> anyhow::Result<Document> {
    let file = document_path(path);
    let named = |error: anyhow::Error| anyhow::anyhow!("{} is refused: {error:#}", file.display());
    let size = std::fs::metadata(&file)
        .map_err(|error| named(anyhow::anyhow!("cannot read it ({error})")))?
        .len();
    if size > DOCUMENT_BYTES_MAX {
        return Err(named(anyhow::anyhow!(
            "it is {} MiB, and no results document of ringside's is larger than {} MiB",
            size >> 20,
            DOCUMENT_BYTES_MAX >> 20
        )));
    }
    let document = load_document(&file).map_err(named)?;
    for (index, row) in document.results.iter().enumerate() {
        let histograms = [
            &row.latency_ns_histogram,
            &row.latency_uncorrected_ns_histogram,
        ];
        for text in histograms.into_iter().flatten() {
            crate::stats::histogram::decode(text).map_err(|error| {
                named(anyhow::anyhow!(
                    "row {} ({} {} run {}): {error:#}",
                    index + 1,
                    row.workload,
                    row.engine,
                    row.run
                ))
            })?;
        }
    }
    claims_of(&document).map_err(named)?;
    Ok(document)
}

/// The ledger of `documents` (each named as given): every claim each document measured,
/// judged on its machine.
pub fn ledger(documents: &[(String, Document)]) -> anyhow::Result<Ledger> {
    let mut machines = Vec::new();
    let mut entries = Vec::new();
    for (index, (name, document)) in documents.iter().enumerate() {
        let analysis = Analysis::of(document);
        let claims = claims_of(document)?;
        let evidence = evidence(document, &analysis);
        let machine = Machine::of(name, document);
        for claim in &claims {
            let mut report = ClaimReport::of(claim, evidence, None);
            if !report.measured() {
                continue;
            }
            if machine.quick {
                report = report.provisional();
            }
            let rows = report.rows().into_iter();
            entries.extend(rows.map(|row| Entry {
                machine: index,
                row,
            }));
        }
        machines.push(machine);
    }
    Ok(Ledger { machines, entries })
}

/// A test as the ledger keys it: the claim at its file's version, and the test's name.
type Key = (String, String, String);

fn key(row: &ClaimRow) -> Key {
    (
        row.claim.clone(),
        row.claim_version.clone(),
        row.test.clone(),
    )
}

impl Ledger {
    /// The tests in the order first met, each once.
    fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = Vec::new();
        for entry in &self.entries {
            let key = key(&entry.row);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys
    }

    /// The entry of `key` on machine `index`.
    fn at(&self, key: &Key, index: usize) -> Option<&ClaimRow> {
        (self.entries.iter())
            .find(|entry| entry.machine == index && self::key(&entry.row) == *key)
            .map(|entry| &entry.row)
    }

    /// Whether two versions of one claim are in the ledger (then each row names its version).
    fn versions_differ(&self, claim: &str) -> bool {
        let mut versions = (self.entries.iter())
            .filter(|entry| entry.row.claim == claim)
            .map(|entry| entry.row.claim_version.as_str());
        let first = versions.next();
        versions.any(|version| Some(version) != first)
    }

    /// The ledger as Markdown: the machines, the table of verdicts, and a line per test.
    pub fn markdown(&self) -> String {
        let mut text = String::from("# The claims ledger across machines\n\n");
        for (index, machine) in self.machines.iter().enumerate() {
            text += &format!(
                "- **M{}** ({}): {}\n",
                index + 1,
                machine.document,
                machine.text()
            );
        }
        text.push('\n');
        let keys = self.keys();
        if keys.is_empty() {
            text += "No document measured a claim.\n";
            return text;
        }
        let mut header = vec![
            "claim".to_string(),
            "test".to_string(),
            "claimed".to_string(),
        ];
        header.extend((1..=self.machines.len()).map(|n| format!("M{n}")));
        text += &table_row(&header);
        text += &format!("|{}\n", "---|".repeat(header.len()));
        for key in &keys {
            let first = (0..self.machines.len()).find_map(|index| self.at(key, index));
            let claimed = first.map(|row| row.claimed.clone()).unwrap_or_default();
            let claim = match self.versions_differ(&key.0) {
                true => format!("{} (version {})", key.0, key.1),
                false => key.0.clone(),
            };
            let mut cells = vec![claim, key.2.clone(), claimed];
            for index in 0..self.machines.len() {
                cells.push(self.at(key, index).map_or("—".to_string(), cell));
            }
            text += &table_row(&cells);
        }
        text += "\nPer test, where it was reproduced and where not:\n\n";
        for key in &keys {
            text += &format!("- {} / {}: {}\n", key.0, key.2, self.summary(key));
        }
        text
    }

    /// "reproduced on 3 of 5 machines (Linux 6.1–6.18); reversed on 1 (Linux 5.10)".
    fn summary(&self, key: &Key) -> String {
        let total = self.machines.len();
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for index in 0..total {
            let Some(row) = self.at(key, index) else {
                continue;
            };
            let word = row.verdict_key.replace('-', " ");
            match groups.iter_mut().find(|(w, _)| *w == word) {
                Some((_, members)) => members.push(index),
                None => groups.push((word, vec![index])),
            }
        }
        let parts: Vec<String> = (groups.iter())
            .map(|(word, members)| {
                let kernels = kernel_range(members.iter().map(|&i| &self.machines[i].kernel));
                let count = match groups.first().is_some_and(|(w, _)| w == word) {
                    true => format!("{} of {total} machine{}", members.len(), plural(total)),
                    false => members.len().to_string(),
                };
                format!("{word} on {count} (Linux {kernels})")
            })
            .collect();
        parts.join("; ")
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}

/// "reproduced, 1.21×", "cannot test", "reversed, 0.82× (provisional)": one machine's verdict.
fn cell(row: &ClaimRow) -> String {
    let mut text = row.verdict_key.replace('-', " ");
    if let Some(ratio) = row.ratio {
        text += &format!(", {}×", ratio_text(ratio));
    }
    if row.provisional {
        text += " (provisional)";
    }
    text
}

/// "6.1–6.18", "5.10": the kernels' major.minor versions, lowest to highest.
fn kernel_range<'a>(kernels: impl Iterator<Item = &'a String>) -> String {
    let version = |kernel: &str| -> Option<(u32, u32)> {
        let mut parts = kernel.split(|c: char| !c.is_ascii_digit());
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    };
    let mut known: Vec<(u32, u32)> = kernels.filter_map(|k| version(k)).collect();
    known.sort_unstable();
    let text = |(major, minor): (u32, u32)| format!("{major}.{minor}");
    match (known.first(), known.last()) {
        (Some(&low), Some(&high)) if low == high => text(low),
        (Some(&low), Some(&high)) => format!("{}–{}", text(low), text(high)),
        _ => "unknown".to_string(),
    }
}

/// `ringside claims merge`: the documents read (each refused by name if it fails the gate),
/// the ledger printed as Markdown or JSON, or written to `out`.
pub fn run(inputs: &[PathBuf], json: bool, out: Option<&Path>) -> anyhow::Result<()> {
    let documents: Vec<(String, Document)> = (inputs.iter())
        .map(|path| Ok((path.display().to_string(), read(path)?)))
        .collect::<anyhow::Result<_>>()?;
    let ledger = ledger(&documents)?;
    let text = match json {
        true => serde_json::to_string_pretty(&ledger)? + "\n",
        false => ledger.markdown(),
    };
    match out {
        Some(path) => std::fs::write(path, text)
            .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::paired_rows;
    use crate::row::params::{Param, Params};
    use serde_json::json;

    /// A document of buffered 4 KiB writes (the ring at `ring` × blocking) on a machine with
    /// `kernel`.
    fn machine(kernel: &str, ring: f64) -> Document {
        let mut rows = paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-single", 160.0, 1000),
                ("uring-ring", 1000.0 * ring, 10),
            ],
            12,
        );
        for row in &mut rows {
            row.params.put(Param::BlockSize, Value::from("4k"));
            row.params.put(Param::Direct, Value::from(false));
        }
        let env = json!({"host": {"kernel_release": kernel, "cpu_model": "AMD EPYC",
                                  "cpus_online": 2}, "target": {"fs_type": "ext4"}});
        Document::new(env, rows)
    }

    /// Goal: one table of each test × each machine, and a line per test saying where it was
    /// reproduced. Method: seed 003's claim on two machines, the ring 1.2× blocking on one
    /// (reproduced) and 0.6× on the other (reversed).
    #[test]
    fn each_test_on_each_machine_and_a_line_per_test() {
        let documents = vec![
            ("a.json".to_string(), machine("6.18.44", 1.2)),
            ("b.json".to_string(), machine("5.10.0", 0.6)),
        ];
        let ledger = ledger(&documents).unwrap();
        let text = ledger.markdown();
        assert!(
            text.contains("- **M1** (a.json): AMD EPYC ×2, Linux 6.18.44, ext4"),
            "{text}"
        );
        assert!(
            text.contains("| claim | test | claimed | M1 | M2 |"),
            "{text}"
        );
        assert!(
            text.contains("- seed003-write-4k / a ring of 128: reproduced on 1 of 2 machines (Linux 6.18); reversed on 1 (Linux 5.10)"),
            "{text}"
        );
        assert!(
            text.contains("- seed003-write-4k / one entry at a time: reproduced on 2 of 2 machines (Linux 5.10–6.18)"),
            "{text}"
        );
    }

    /// Goal: a document that fails the gate is refused by name, before anything is judged.
    #[test]
    fn a_crafted_document_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crafted.json");
        let mut document = serde_json::to_value(machine("6.1.0", 1.2)).unwrap();
        document["results"][0]["latency_ns_histogram"] = Value::from("HISTFAAAAB3");
        std::fs::write(&path, document.to_string()).unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{} is refused: row 1", path.display())),
            "{error}"
        );
        document["schema_version"] = Value::from(0);
        std::fs::write(&path, document.to_string()).unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(
            error.contains("crafted.json is refused") && error.contains("schema_version 0"),
            "{error}"
        );
        std::fs::write(
            &path,
            r#"{"schema_version": 1, "results": [{"seconds": NaN}]}"#,
        )
        .unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(
            error.contains("crafted.json is refused") && error.contains("not JSON"),
            "{error}"
        );
    }
}
