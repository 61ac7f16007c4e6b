//! `ringside load echo` and `ringside load http`: the smallest study, one load run against any
//! server (ringside's own or another), measured by `--server-pid` when given, its row printed
//! or written.

use std::io;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::Map;

use crate::load::{http_summary, load_row, LoadPlan, Mode, WindowEdge};
use crate::measure::{Measured, ProcessMeter};
use crate::output::{render_table, Format};
use crate::row::Document;
use crate::studies::Destination;

/// What `load` does besides the run: whom it measures and where the row goes.
#[derive(Clone, Debug)]
pub struct LoadCommand {
    /// Measure this server process over the window.
    pub server_pid: Option<i32>,
    pub destination: Destination,
    /// Stop when standard input ends (`--stop-with-stdin`: a study's load on a load host).
    pub stop_with_stdin: bool,
}

/// Watches standard input on a thread of its own: at its end (the study closed it, or the ssh
/// connection that carried it went away) this process sends itself SIGHUP, which stops the
/// load as Ctrl-C does and exits 129.
fn stop_when_stdin_ends() {
    std::thread::spawn(|| {
        let mut buffer = [0u8; 64];
        let mut stdin = io::stdin().lock();
        while matches!(io::Read::read(&mut stdin, &mut buffer), Ok(1..)) {}
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::HUP);
    });
}

/// One load run against an external server, measured by `--server-pid` when given.
pub fn run(plan: &LoadPlan, args: &LoadCommand) -> anyhow::Result<ExitCode> {
    crate::system::stop::stop_flag();
    if args.stop_with_stdin {
        stop_when_stdin_ends();
    }
    let mut server_meter = args.server_pid.map(ProcessMeter::new);
    let mut meter_error: Option<io::Error> = None;
    let mut server: Option<Measured> = None;
    let report = match crate::load::run(plan, &mut |edge| {
        let Some(meter) = server_meter.as_mut() else {
            return;
        };
        if meter_error.is_some() {
            return; // The server was gone at the window's start: nothing to stop.
        }
        let outcome = match edge {
            WindowEdge::Start => meter.start(),
            WindowEdge::Stop => meter.stop().map(|measured| server = Some(measured)),
        };
        if let Err(error) = outcome {
            meter_error.get_or_insert(error);
        }
    }) {
        Ok(report) => report,
        Err(_) if crate::system::stop::stopped() => {
            eprintln!("ringside: interrupted before the window had run long enough to keep: nothing was measured");
            return Ok(ExitCode::from(crate::system::stop::interrupted_exit_code()));
        }
        Err(error) => return Err(error),
    };
    if let (Some(error), Some(pid)) = (meter_error, args.server_pid) {
        return Err(error).with_context(|| format!("cannot measure server process {pid}"));
    }
    let row = load_row("external", Map::new(), 1, plan, &report, server.as_ref());
    let verified = row.verified;
    let destination = &args.destination;
    let summary = (plan.mode == Mode::Http
        && destination.format == Format::Table
        && !destination.markdown
        && destination.path.is_none())
    .then(|| http_summary(&row));
    let env = crate::probe::environment(std::path::Path::new("."));
    destination.write(&Document::new(env, vec![row]), render_table)?;
    if let Some(summary) = summary {
        print!("{summary}");
    }
    if crate::system::stop::stopped() {
        eprintln!("ringside: interrupted; the row above covers the part of the window that ran");
        return Ok(ExitCode::from(crate::system::stop::interrupted_exit_code()));
    }
    Ok(if verified {
        ExitCode::SUCCESS
    } else {
        eprintln!("ringside: the answers were not verified (see the notes)");
        ExitCode::from(3)
    })
}
