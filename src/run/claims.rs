//! `ringside claims run`: each chosen claim's experiment as a child process of this binary
//! (`--format json`, as `run`'s steps), its rows tagged with the claim's id (`claim` in
//! params, so two claims' studies of the same shape stay apart), judged as soon as it ends and
//! printed: the claim as published, the set-up differences, the figure measured here with its
//! interval and rounds, the verdict and the kernel-counted cause. A claim whose needs this
//! machine lacks (poll queues, a NIC, cores, root), whose engines cannot run here, or whose
//! contender cannot be built is not run: it says "cannot test here" and why. The results
//! directory gets every row (`results.json`, `results.csv`, `report.md`, `report.html`) and the
//! verdicts (`claims.md`, `claims.json`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::contenders::{self, Choice};
use super::{spawn_step, step_limit, wait_bounded, write_results};
use crate::engines::{self, Workload};
use crate::model::claim::{Claim, MachineNeeds};
use crate::model::claim_verdict::{CLAIM_PARAM, UNAVAILABLE};
use crate::model::study::studies;
use crate::output::progress::{time_text, took_line, Progress, Say};
use crate::report::claims::{claim_block, summary_markdown, ClaimReport, ClaimRow};
use crate::report::load::load_document;
use crate::row::{Document, Row};
use crate::studies::ENGINE_FAILED_EXIT;
use crate::system::stop::{interrupted_exit_code, is_interrupted_exit, stop_flag, stopped};

/// `claims run`, as its flags asked for it.
pub struct ClaimsPlan {
    /// The claims to run, their experiments checked.
    pub claims: Vec<Claim>,
    /// Each experiment's `quick` arguments.
    pub quick: bool,
    /// Results directory (default: results/claims-<UTC timestamp>).
    pub out: Option<PathBuf>,
    /// Directory for the file experiments' scratch files (default: the results directory).
    pub dir: Option<PathBuf>,
    /// What it says on stderr: its experiments say nothing but failures, a line per run with
    /// `-v`.
    pub say: Say,
    /// The verdicts as JSON on stdout instead of text.
    pub json: bool,
    /// The network experiments' load hosts, as flags (`--load-host ... --listen-on ADDR`).
    pub load_hosts: Vec<String>,
}

/// How long an experiment is expected to take, for its time limit (ten times this): a quick
/// one runs in well under a minute on a 2-vCPU VM, a full one in a few.
const QUICK_ESTIMATE: Duration = Duration::from_secs(60);
const FULL_ESTIMATE: Duration = Duration::from_secs(240);

/// What a claim's experiment takes on average, for the plan: on a 2-vCPU VM all 18 claims
/// took 187 and 197 s in their quick forms, 15 min 19 s in their full forms beside other work
/// (bench/claims.md).
const QUICK_PER_CLAIM: Duration = Duration::from_secs(11);
const FULL_PER_CLAIM: Duration = Duration::from_secs(51);

pub fn run_claims(plan: &ClaimsPlan) -> anyhow::Result<ExitCode> {
    let out = (plan.out.clone()).unwrap_or_else(|| {
        Path::new("results").join(format!("claims-{}", super::timestamp::now_utc()))
    });
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create the results directory {}", out.display()))?;
    let scratch = plan.dir.clone().unwrap_or_else(|| out.clone());
    let exe = std::env::current_exe().context("cannot find this ringside binary to run claims")?;
    stop_flag();
    let env = crate::probe::environment(&scratch);
    let per_claim = match plan.quick {
        true => QUICK_PER_CLAIM,
        false => FULL_PER_CLAIM,
    };
    let count = plan.claims.len();
    let planned = per_claim * u32::try_from(count).unwrap_or(u32::MAX);
    let progress = Progress::timed(planned.as_secs(), plan.say);
    progress.line(format!(
        "ringside claims: {count} claims, each its experiment's {} form as a study of its own; \
         planned {} ({} a claim on average, as measured on a 2-vCPU VM)",
        if plan.quick { "quick" } else { "full" },
        time_text(planned),
        time_text(per_claim)
    ));
    let mut rows: Vec<Row> = Vec::new();
    let mut verdicts: Vec<ClaimRow> = Vec::new();
    let mut text = String::new();
    let (mut failed, mut engines_failed) = (0, 0);
    for (index, claim) in plan.claims.iter().enumerate() {
        if stopped() {
            break;
        }
        progress.step(claim.id.clone());
        let claim_started = Instant::now();
        let mut unmet = unmet_needs(&claim.needs).or_else(|| engines_unavailable(claim));
        let mut flags = Vec::new();
        if unmet.is_none() {
            match contender_flags(claim, &exe, plan.say.quiet) {
                Ok(found) => flags = found,
                Err(reason) => unmet = Some(reason),
            }
        }
        let mut own: Vec<Row> = Vec::new();
        if unmet.is_none() {
            let context = Experiment {
                exe: &exe,
                out: &out,
                scratch: &scratch,
                quick: plan.quick,
                say: plan.say,
                progress: &progress,
                load_hosts: &plan.load_hosts,
            };
            let (status, measured) = context.run(claim, &flags);
            match status {
                Status::Finished => {}
                Status::EnginesFailed => engines_failed += 1,
                Status::Failed(why) => {
                    failed += 1;
                    progress.alert(format!("ringside claims: {}: {why}", claim.id));
                }
            }
            own = measured;
        }
        let studies = studies(&own);
        let report = ClaimReport::of(claim, &studies, unmet.as_deref());
        let command = match &unmet {
            Some(_) => format!(
                "nothing (`{}` here)",
                claim.experiment.command_line(plan.quick)
            ),
            None => claim.experiment.command_line(plan.quick),
        };
        let block = claim_block(&report, &env, &command, false);
        if !plan.json {
            // Printed as each claim ends: a full ledger takes a while.
            print!("{block}");
        }
        text.push_str(&claim_block(&report, &env, &command, true));
        verdicts.extend(report.rows());
        rows.extend(own);
        progress.set_seconds((per_claim * (index as u32 + 1)).as_secs());
        let what = format!("ringside claims: {}/{count} {}", index + 1, claim.id);
        progress.log_line(took_line(&what, claim_started, Some(per_claim)));
    }
    progress.finish();
    let summary = summary_markdown(&verdicts);
    let mut document = Document::new(env, rows);
    document.notes.push(format!(
        "ringside claims run{}: {}",
        if plan.quick { " --quick" } else { "" },
        (plan.claims.iter())
            .map(|claim| claim.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    write_results(&document, &out)?;
    let markdown = format!("# Published claims, on this machine\n\n{summary}\n{text}");
    std::fs::write(out.join("claims.md"), markdown)
        .with_context(|| format!("cannot write claims.md in {}", out.display()))?;
    let json = serde_json::to_string_pretty(&verdicts)? + "\n";
    std::fs::write(out.join("claims.json"), &json)
        .with_context(|| format!("cannot write claims.json in {}", out.display()))?;
    if plan.json {
        print!("{json}");
    } else {
        println!("{summary}");
        println!("{}", out.display());
    }
    Ok(if stopped() {
        eprintln!("ringside claims: interrupted; the claims above are those that finished");
        ExitCode::from(interrupted_exit_code())
    } else if failed > 0 {
        eprintln!("ringside claims: {failed} experiment(s) failed; their claims say why");
        ExitCode::from(1)
    } else if engines_failed > 0 {
        ExitCode::from(ENGINE_FAILED_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// Why this machine lacks what the claim needs beyond its engines, if it does.
pub fn unmet_needs(needs: &MachineNeeds) -> Option<String> {
    if needs.poll_queues {
        if let Err(reason) = engines::uring::trial::polled_block_device() {
            return Some(reason);
        }
    }
    if needs.nic && !crate::system::network::traffic_route().is_some_and(|r| r.is_nic()) {
        return Some(engines::uring::trial::nic_traffic_reason());
    }
    let online = crate::system::pin::cpus_online().len();
    if let Some(cores) = needs.cores.filter(|&cores| online < cores) {
        return Some(format!(
            "it needs {cores} CPUs and this machine has {online}"
        ));
    }
    if needs.root && !rustix::process::geteuid().is_root() {
        return Some("it needs root".to_string());
    }
    None
}

/// Why none of the tests can run: every engine a test names, of the workload, cannot run here.
fn engines_unavailable(claim: &Claim) -> Option<String> {
    let name = claim.experiment.workload();
    let workload = Workload::ALL.into_iter().find(|w| w.name() == name)?;
    let mut reasons = Vec::new();
    for test in &claim.tests {
        let blocked = [&test.subject, &test.reference]
            .into_iter()
            .find_map(|name| {
                let engine = engines::find(workload, name).ok()?;
                let reason = engine.availability().err()?;
                Some(format!("{name}: {reason}"))
            });
        reasons.push(blocked?);
    }
    reasons.dedup();
    Some(reasons.join("; "))
}

/// The `--contender` flags of the claim's contenders, built first where they are not; why not
/// when one cannot run here.
fn contender_flags(claim: &Claim, exe: &Path, quiet: bool) -> Result<Vec<String>, String> {
    let names = &claim.experiment.contenders;
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let dir = contenders::directory(exe)?;
    let choice = Choice::Named(names.clone());
    let say = |line: String| {
        if !quiet {
            eprintln!("ringside claims: {line}");
        }
    };
    let built = contenders::build(&choice, &dir, say);
    let (chosen, _) = contenders::choose(&choice, Ok(&dir)).map_err(|error| match &built {
        Some(note) => format!("{error:#} ({note})"),
        None => format!("{error:#}"),
    })?;
    let protocol = claim.experiment.command_words()[0];
    Ok(chosen
        .iter()
        .map(|reference| reference.flag(&dir, protocol))
        .collect())
}

/// How an experiment's child ended.
enum Status {
    Finished,
    /// Some engine failed (its rows say why) or could not run here.
    EnginesFailed,
    Failed(String),
}

/// What every claim's experiment shares.
struct Experiment<'a> {
    exe: &'a Path,
    out: &'a Path,
    scratch: &'a Path,
    quick: bool,
    say: Say,
    progress: &'a Progress,
    load_hosts: &'a [String],
}

impl Experiment<'_> {
    /// Runs the claim's study as a child process and returns its rows, tagged with the claim.
    fn run(&self, claim: &Claim, contenders: &[String]) -> (Status, Vec<Row>) {
        let experiment = &claim.experiment;
        let file = self.out.join(".claim.json");
        let mut command = Command::new(self.exe);
        command
            .args(experiment.command_words())
            .args(experiment.args(self.quick))
            .args(["--format", "json", "--output"])
            .arg(&file);
        if experiment.command.starts_with("fs") {
            command.arg("--dir").arg(self.scratch);
        } else {
            command.args(self.load_hosts);
        }
        for flag in contenders {
            command.arg("--contender").arg(flag);
        }
        command.arg(if self.say.verbose { "-v" } else { "--quiet" });
        self.progress.run_line(format!(
            "ringside claims: {}: {}",
            claim.id,
            experiment.command_line(self.quick)
        ));
        let estimate = if self.quick {
            QUICK_ESTIMATE
        } else {
            FULL_ESTIMATE
        };
        let limit = step_limit(estimate);
        let status =
            spawn_step(command, self.progress).and_then(|child| wait_bounded(child, limit, |_| {}));
        let mut rows = load_document(&file)
            .map(|document| document.results)
            .unwrap_or_default();
        let _ = std::fs::remove_file(&file);
        for row in &mut rows {
            let id = serde_json::Value::from(claim.id.as_str());
            row.params.insert(CLAIM_PARAM.into(), id);
        }
        let status = match status {
            Ok(Some(status)) if status.success() => Status::Finished,
            // An engine that cannot run here is the claim's "cannot test here", not a failure.
            Ok(Some(status)) if status.code() == Some(ENGINE_FAILED_EXIT.into()) => {
                let unavailable = |row: &Row| {
                    (row.failure.as_deref()).is_none_or(|why| why.starts_with(UNAVAILABLE))
                };
                match rows.iter().all(unavailable) {
                    true => Status::Finished,
                    false => Status::EnginesFailed,
                }
            }
            Ok(Some(status)) if status.code().is_some_and(is_interrupted_exit) => Status::Finished,
            Ok(Some(status)) => Status::Failed(format!(
                "`{}` exited with {status}",
                experiment.command_line(self.quick)
            )),
            Ok(None) => Status::Failed(format!(
                "stopped after {} s without finishing",
                limit.as_secs()
            )),
            Err(error) => Status::Failed(format!("could not start ({error})")),
        };
        (status, rows)
    }
}
