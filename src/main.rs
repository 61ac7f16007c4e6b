//! The `ringside` binary: parse, run, and map the outcome to an exit code. Errors print as one
//! plain sentence chain (`error: ...: ...`), like ripgrep's.

use std::process::ExitCode;

fn main() -> ExitCode {
    match ringside::cli::run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("ringside: error: {error:#}");
            ExitCode::from(1)
        }
    }
}
