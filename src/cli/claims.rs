//! `ringside claims list|show|run`: the ledger of published claims (`claims/*.toml`, inside
//! the binary) and a user's own (`--claims-dir`), each claim's experiment checked here, before
//! anything runs, as this very command line would parse it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use super::load_hosts::LoadHostArgs;
use crate::engines::{self, Workload};
use crate::model::claim::{Claim, ClaimTest, Expect};
use crate::model::study::{is_contender, CONTENDER_PREFIX};
use crate::run::claims::{run_claims, unmet_needs, ClaimsPlan};

#[derive(Args, Debug, Clone)]
pub struct ClaimsArgs {
    #[command(subcommand)]
    pub command: ClaimsCommand,
    /// Also read the claims in this directory (one TOML file per claim, as in the ledger's
    /// `claims/`; see docs/claims.md): they join the shipped ones.
    #[arg(long, global = true, value_name = "DIR")]
    pub claims_dir: Option<PathBuf>,
    /// The network experiments' load on other hosts (`claims run`), and the address the
    /// servers listen on for them: a NIC on its route opens the claims that need one (`claims
    /// list --listen-on ADDR` says which).
    #[command(flatten)]
    pub load_hosts: LoadHostArgs,
}

#[derive(Subcommand, Debug, Clone)]
pub enum ClaimsCommand {
    /// Every claim: id, title, source, and whether it can run here (why not, if not).
    List,
    /// One claim as published: its source, how sure the figure is, the source's set-up, the
    /// experiment that tests it and what each test claims.
    Show {
        /// A claim's id (`ringside claims list`).
        id: String,
    },
    /// Run claims' experiments and judge each claim: the published figure, the one measured
    /// here with its interval and rounds, the verdict (reproduced, not reproduced, reversed,
    /// inconclusive, cannot test here) and the kernel-counted cause.
    Run(ClaimsRunArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ClaimsRunArgs {
    /// The claims to run, by id.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub ids: Vec<String>,
    /// Every claim.
    #[arg(long)]
    pub all: bool,
    /// A first look: each experiment's short form (smaller files, shorter windows, 8 rounds),
    /// about 11 s a claim on a 2-vCPU VM where a full experiment takes about 51 s.
    #[arg(long)]
    pub quick: bool,
    /// Results directory (default: results/claims-<UTC timestamp>): every row, report.md,
    /// claims.md and claims.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Directory for the file experiments' scratch files (default: the results directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// text for people, or json: the verdict rows (claims.json) on stdout.
    #[arg(long, value_enum, default_value_t = ClaimsFormat::Text)]
    pub format: ClaimsFormat,
    #[command(flatten)]
    pub say: super::common::SayArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ClaimsFormat {
    Text,
    Json,
}

impl ClaimsArgs {
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        let claims = load(self.claims_dir.as_deref())?;
        super::load_hosts::route_through(self.load_hosts.listen_on)?;
        match &self.command {
            ClaimsCommand::List => {
                print!("{}", list_text(&claims));
                Ok(ExitCode::SUCCESS)
            }
            ClaimsCommand::Show { id } => {
                print!("{}", show_text(find(&claims, id)?));
                Ok(ExitCode::SUCCESS)
            }
            ClaimsCommand::Run(args) => {
                let chosen = match args.all {
                    true => claims,
                    false => (args.ids.iter())
                        .map(|id| find(&claims, id).cloned())
                        .collect::<anyhow::Result<_>>()?,
                };
                for claim in &chosen {
                    check(claim)?;
                }
                // Checked as a study checks them: hosts and the address go together.
                self.load_hosts.plan(None, Vec::new())?;
                run_claims(&ClaimsPlan {
                    claims: chosen,
                    quick: args.quick,
                    out: args.out.clone(),
                    dir: args.dir.clone(),
                    say: args.say.say(),
                    json: args.format == ClaimsFormat::Json,
                    load_hosts: self.load_hosts.args(),
                })
            }
        }
    }
}

/// The shipped claims, then those in `dir`, each id once.
pub fn load(dir: Option<&Path>) -> anyhow::Result<Vec<Claim>> {
    let mut claims = Claim::embedded()?;
    let Some(dir) = dir else {
        return Ok(claims);
    };
    let entries = std::fs::read_dir(dir)
        .map_err(|error| anyhow::anyhow!("cannot read --claims-dir {}: {error}", dir.display()))?;
    let mut files: Vec<PathBuf> = (entries.filter_map(Result::ok))
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    anyhow::ensure!(
        !files.is_empty(),
        "--claims-dir {} holds no claim (*.toml)",
        dir.display()
    );
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|error| anyhow::anyhow!("cannot read {}: {error}", path.display()))?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let claim = Claim::parse(&name, &text)
            .map_err(|error| anyhow::anyhow!("{} is not a claim: {error:#}", path.display()))?;
        anyhow::ensure!(
            !claims.iter().any(|known| known.id == claim.id),
            "{} is called '{}', as a shipped claim is: give it another name",
            path.display(),
            claim.id
        );
        claims.push(claim);
    }
    Ok(claims)
}

fn find<'c>(claims: &'c [Claim], id: &str) -> anyhow::Result<&'c Claim> {
    claims.iter().find(|claim| claim.id == id).ok_or_else(|| {
        anyhow::anyhow!(
            "no claim is called '{id}' (`ringside claims list` lists them: {})",
            claims
                .iter()
                .map(|claim| claim.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// Checks that the claim's experiment is a study this ringside runs: its command line parses
/// (full and quick) as typed, its tests' engines are engines of that workload named in
/// `--engine`, or contenders it lists.
pub fn check(claim: &Claim) -> anyhow::Result<()> {
    let experiment = &claim.experiment;
    let workload = (Workload::ALL.into_iter())
        .find(|workload| workload.name() == experiment.workload())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "claim {}: '{}' is not a study (fs write, fs cycle, fs read, echo, http)",
                claim.id,
                experiment.command
            )
        })?;
    for quick in [false, true] {
        let mut words = vec!["ringside".to_string()];
        words.extend(experiment.command_words().iter().map(|w| w.to_string()));
        words.extend(experiment.args(quick).iter().cloned());
        super::Cli::try_parse_from(&words).map_err(|error| {
            let what = if quick { "quick" } else { "args" };
            anyhow::anyhow!(
                "claim {}: its experiment's {what} do not parse: {}",
                claim.id,
                error
                    .render()
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
            )
        })?;
        anyhow::ensure!(
            !experiment.args(quick).iter().any(|arg| {
                [
                    "--format",
                    "--output",
                    "-o",
                    "--json",
                    "--dir",
                    "--contender",
                ]
                .contains(&arg.as_str())
            }),
            "claim {}: its experiment's arguments name where results go; `claims run` does",
            claim.id
        );
        let named = engine_list(experiment.args(quick));
        for test in &claim.tests {
            check_engines(claim, test, workload, &named)?;
        }
    }
    Ok(())
}

/// The engines `--engine` (or `-e`) names, empty when it is not given.
fn engine_list(args: &[String]) -> Vec<String> {
    let at = args.iter().position(|arg| arg == "--engine" || arg == "-e");
    at.and_then(|at| args.get(at + 1))
        .map(|list| list.split(',').map(str::to_string).collect())
        .unwrap_or_default()
}

fn check_engines(
    claim: &Claim,
    test: &ClaimTest,
    workload: Workload,
    named: &[String],
) -> anyhow::Result<()> {
    for name in [&test.subject, &test.reference] {
        if is_contender(name) {
            let contender = &name[CONTENDER_PREFIX.len()..];
            anyhow::ensure!(
                claim.experiment.contenders.iter().any(|c| c == contender),
                "claim {}: test '{}' reads {name}, which its experiment's contenders do not list",
                claim.id,
                test.name
            );
            continue;
        }
        engines::find(workload, name).map_err(|error| {
            anyhow::anyhow!("claim {}: test '{}': {error}", claim.id, test.name)
        })?;
        anyhow::ensure!(
            named.is_empty() || named.contains(name),
            "claim {}: test '{}' reads {name}, which its experiment's --engine leaves out",
            claim.id,
            test.name
        );
    }
    Ok(())
}

/// Whether the claim can run here, or why not (what `list` and `show` say).
fn here(claim: &Claim) -> Result<(), String> {
    if let Some(reason) = unmet_needs(&claim.needs) {
        return Err(reason);
    }
    let Some(workload) =
        (Workload::ALL.into_iter()).find(|w| w.name() == claim.experiment.workload())
    else {
        return Err(format!("'{}' is not a study", claim.experiment.command));
    };
    let blocked: Vec<String> = (claim.tests.iter())
        .flat_map(|test| [&test.subject, &test.reference])
        .filter(|name| !is_contender(name))
        .filter_map(|name| {
            let reason = engines::find(workload, name).ok()?.availability().err()?;
            Some(format!("{name}: {reason}"))
        })
        .collect();
    match blocked.first() {
        Some(reason) => Err(reason.clone()),
        None => Ok(()),
    }
}

fn list_text(claims: &[Claim]) -> String {
    let mut text = String::new();
    for claim in claims {
        let route = crate::system::network::traffic_route().filter(|route| route.is_nic());
        let runs = match (here(claim), route) {
            (Ok(()), Some(route)) if claim.needs.nic => format!(
                "runs here with its load on other hosts (claims run --load-host HOST \
                 --listen-on ADDR): the route to --listen-on crosses {}, a NIC",
                route.describe()
            ),
            (Ok(()), _) => "runs here".to_string(),
            (Err(reason), _) => format!("cannot test here: {reason}"),
        };
        let seed = (claim.seed.as_deref())
            .map(|seed| format!(", seed {seed}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{}  {}\n    {}{seed}\n    {runs}\n",
            claim.id, claim.title, claim.source
        ));
    }
    text.push_str(&format!(
        "{} claims. `ringside claims show ID` has one in full; `ringside claims run ID…` or \
         `run --all [--quick]` tests them here.\n",
        claims.len()
    ));
    text
}

fn show_text(claim: &Claim) -> String {
    let setup = &claim.setup;
    let mut lines = vec![
        format!("{} — {}", claim.id, claim.title),
        format!("source: {}", claim.source),
        format!("how sure: {}", claim.sure.text()),
        format!("claimed: {}", claim.quote),
        format!("statistic: {}", claim.statistic),
        format!(
            "set-up there: Linux {}; {}; {}; {}",
            setup.kernel, setup.machine, setup.tool, setup.shape
        ),
    ];
    lines.extend(
        claim
            .differences
            .iter()
            .map(|d| format!("differs here: {d}")),
    );
    lines.push(format!(
        "experiment: {}",
        claim.experiment.command_line(false)
    ));
    lines.push(format!("--quick: {}", claim.experiment.command_line(true)));
    for test in &claim.tests {
        let tie = if test.expect == Expect::Tie {
            " (equivalent within the metric's equivalence margin)"
        } else {
            ""
        };
        lines.push(format!(
            "test {}: claimed {}{tie}, from \"{}\"",
            test.label(),
            test.claimed_text(),
            test.figure
        ));
    }
    lines.push(match here(claim) {
        Ok(()) => "here: can run".to_string(),
        Err(reason) => format!("here: cannot test here: {reason}"),
    });
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shipped claim's experiment is a study this ringside runs, full and quick, and its
    /// tests read engines the experiment measures.
    #[test]
    fn every_shipped_claim_is_a_valid_study() {
        let claims = load(None).unwrap();
        for claim in &claims {
            check(claim).unwrap_or_else(|error| panic!("{error:#}"));
        }
        let seeds = claims.iter().filter(|claim| claim.is_seed()).count();
        assert!(seeds >= 5, "{seeds} seed claims");
    }

    #[test]
    fn a_broken_experiment_is_refused_with_the_claim_named() {
        let mut claim = load(None).unwrap().remove(0);
        claim.experiment.args.push("--no-such-flag".into());
        let error = check(&claim).unwrap_err().to_string();
        assert!(
            error.contains(&claim.id) && error.contains("do not parse"),
            "{error}"
        );
        let mut claim = load(None).unwrap().remove(0);
        claim.tests[0].subject = "uring-nope".into();
        assert!(check(&claim).is_err());
    }
}
