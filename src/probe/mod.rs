//! `ringside probe` and `ringside engines`: what this machine and kernel offer, gathered into one
//! `Probe` that every results document embeds as `env`.
//!
//! A benchmark number is only as good as the record of what produced it. On this kind of VM the
//! idle path, the mitigations and the target filesystem's `discard` move results 3-9x, so they
//! are recorded next to the io_uring facts, and `warnings` turns the facts that bite into
//! sentences. Gathering stays well under 100 ms: no measurement happens here.

mod cpu;
mod engines;
mod host;
mod mitigations;
mod mountinfo;
mod render;
mod target;
mod uring;
mod warnings;

use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

pub use engines::run_engines;

/// Everything `ringside probe` reports, in the order a reader checks it.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    pub host: host::Host,
    pub io_uring: uring::UringProbe,
    pub limits: host::Limits,
    pub cpu: cpu::CpuState,
    pub mitigations: mitigations::Mitigations,
    pub target: target::Target,
    pub syscall_counting: SyscallCounting,
    /// Sentences computed from the facts above: what will skew or limit a result.
    pub warnings: Vec<String>,
    /// The facts a results table needs beside it, in one line (bench/*.md quote it).
    pub machine: String,
}

/// Whether the kernel counts syscalls for ringside (a perf tracepoint counter).
#[derive(Clone, Debug, Serialize)]
pub struct SyscallCounting {
    pub works: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Probe {
    /// Gathers every fact; a fact that cannot be read is recorded as such, never fatal.
    pub fn gather(dir: &Path) -> Probe {
        let counter = crate::measure::SyscallCounter::open();
        let mut probe = Probe {
            host: host::Host::read(),
            io_uring: uring::UringProbe::read(),
            limits: host::Limits::read(),
            cpu: cpu::CpuState::read(),
            mitigations: mitigations::Mitigations::read(Path::new(
                mitigations::VULNERABILITIES_DIR,
            )),
            target: target::Target::read(dir),
            syscall_counting: SyscallCounting {
                works: counter.is_ok(),
                error: counter.err(),
            },
            warnings: Vec::new(),
            machine: String::new(),
        };
        probe.warnings = warnings::of(&probe);
        probe.machine = render::machine_line(&probe);
        probe
    }
}

/// The environment block every results document carries.
pub fn environment(dir: &Path) -> serde_json::Value {
    serde_json::to_value(Probe::gather(dir)).expect("the probe serialises")
}

/// The forms of `probe`'s answer: one machine is no table of rows, so there is no CSV.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProbeFormat {
    // For people (`--format`'s help says so).
    Table,
    // For scripts.
    Json,
}

pub fn run_probe(dir: &Path, format: ProbeFormat) -> anyhow::Result<ExitCode> {
    target::check_dir(dir)?;
    let probe = Probe::gather(dir);
    let text = match format {
        ProbeFormat::Json => serde_json::to_string_pretty(&probe)? + "\n",
        ProbeFormat::Table => render::human(&probe),
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn print_text(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The trimmed text of a small kernel file (procfs, sysfs), if it can be read.
fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_string())
}
