//! fs write.
use std::process::ExitCode;

#[derive(clap::Args, Debug, Clone)]
pub struct WriteArgs {
    #[command(flatten)]
    pub common: crate::cli::CommonArgs,
}

pub fn run(_args: &WriteArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not written yet")
}
