//! fs cycle.
use std::process::ExitCode;

#[derive(clap::Args, Debug, Clone)]
pub struct CycleArgs {
    #[command(flatten)]
    pub common: crate::cli::CommonArgs,
}

pub fn run(_args: &CycleArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not written yet")
}
