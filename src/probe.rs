//! `ringside probe` and `ringside engines`: what this machine and kernel offer.

use std::process::ExitCode;

use crate::cli::ProbeArgs;

/// The environment block every results document carries.
pub fn environment(_dir: &std::path::Path) -> serde_json::Value {
    serde_json::json!({})
}

pub fn run_probe(_args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("probe is not written yet")
}

pub fn run_engines(_args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("engines is not written yet")
}
