//! "Published claims, on this machine": each claim of the ledger judged against a document's
//! analysis (`model::claim_verdict`), written as the claim as published, the set-up differences
//! that matter, the figure measured here with the interval the analysis decided and its rounds,
//! the verdict, and what explains it: the figure that moved the way the verdict says (server
//! CPU per operation, CPUs used in parallel, device flushes per fsync, io-wq punts, …), as the
//! analysis's causes and decided comparisons name it, and what went the other way.
//! `ringside claims` prints the same blocks, and `report.md` carries the section for every claim
//! its document measured: the shipped ones, and those `claims run` read from `--claims-dir`
//! (the document keeps their files).

use serde::Serialize;
use serde_json::Value;

use crate::analysis::causes::{causes, client_saturation, Direction, Subject};
use crate::analysis::environment::machine_line;
use crate::analysis::numbers::per_op;
use crate::analysis::Analysis;
use crate::model::claim::{metric_name, percent, ratio_text, Claim};
use crate::model::claim_verdict::{judge, Evidence, Judged, Verdict};
use crate::model::comparison::{level_text, Comparison, LOOKS};
use crate::model::figures::Figures;
use crate::model::study::{is_network, op_noun};
use crate::model::summary::Metric;
use crate::row::Document;
use crate::stats::rank::Outcome;

/// One claim judged: its tests' verdicts.
pub struct ClaimReport<'a> {
    pub claim: &'a Claim,
    pub judged: Vec<Judged<'a>>,
}

impl<'a> ClaimReport<'a> {
    /// `claim` judged against one document's analysis; `unmet` is why this machine cannot run
    /// it at all.
    pub fn of(claim: &'a Claim, evidence: Evidence<'a>, unmet: Option<&str>) -> ClaimReport<'a> {
        ClaimReport {
            claim,
            judged: judge(claim, evidence, unmet),
        }
    }

    /// Whether any test read a study (what a report of a document shows).
    pub fn measured(&self) -> bool {
        self.judged.iter().any(|one| one.comparison.is_some())
    }

    /// Marks every verdict provisional: the claim's quick form ran.
    pub fn provisional(mut self) -> Self {
        for one in &mut self.judged {
            one.provisional = true;
        }
        self
    }

    /// The verdict rows scripts read (`claims.json`).
    pub fn rows(&self) -> Vec<ClaimRow> {
        self.judged
            .iter()
            .map(|one| ClaimRow::of(self.claim, one))
            .collect()
    }
}

/// The evidence of a document's analysis: its decided studies, their regimes, its rows and its
/// machine's CPUs.
pub fn evidence<'a>(document: &'a Document, analysis: &'a Analysis) -> Evidence<'a> {
    Evidence {
        studies: &analysis.studies,
        regimes: &analysis.regimes,
        rows: &document.results,
        cpus: Evidence::cpus_of(&document.env),
        loads: &analysis.loads,
    }
}

/// The claims a document is judged against: the files it keeps (what `claims run` read, a
/// user's own among them), then every shipped claim it does not keep. A kept file that no
/// longer parses is why, by name.
pub fn claims_of(document: &Document) -> anyhow::Result<Vec<Claim>> {
    let mut claims: Vec<Claim> = (document.claims.iter())
        .map(|file| {
            Claim::parse(&file.file, &file.text).map_err(|error| {
                anyhow::anyhow!(
                    "it keeps the claim file {}, which does not parse: {error:#}",
                    file.file
                )
            })
        })
        .collect::<anyhow::Result<_>>()?;
    for shipped in Claim::embedded()? {
        if !claims.iter().any(|claim| claim.id == shipped.id) {
            claims.push(shipped);
        }
    }
    Ok(claims)
}

/// One test's verdict as data: what `ringside claims run --format json` prints. Fields are
/// added, never renamed.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct ClaimRow {
    pub claim: String,
    /// The claim file's version (`Claim::version`): two versions of one claim are two claims.
    #[serde(default)]
    pub claim_version: String,
    pub test: String,
    pub source: String,
    /// How sure the test's figure is: its own sureness, or its claim's.
    pub sure: String,
    pub figure: String,
    pub subject: String,
    pub reference: String,
    pub metric: String,
    /// What `ratio` measured where it is not `metric`: a throughput test judged at equal load
    /// reads the servers' CPU per operation at one offered rate ("CPU per operation at equal
    /// load"), its ratio the CPU's; absent where the ratio is of `metric`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_metric: Option<String>,
    pub claimed: String,
    /// What the claim expects on this machine where its size grows with the CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_here: Option<String>,
    pub ratio: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The interval's level (0.95; higher where the analysis decided it with others).
    #[serde(default)]
    pub confidence: Option<f64>,
    /// How many comparisons the analysis decided together with this one.
    #[serde(default)]
    pub family_size: Option<usize>,
    /// Who asked the comparison: "analysis" (one of its questions) or "claim".
    #[serde(default)]
    pub asked_by: Option<String>,
    pub rounds: Option<usize>,
    pub outcome: Option<String>,
    /// The smallest difference the run could have decided (0.08: 8%).
    #[serde(default)]
    pub detectable: Option<f64>,
    /// The regime of the cell a network test read (server-bound, neither, client-bound, mixed).
    #[serde(default)]
    pub regime: Option<String>,
    pub verdict: String,
    pub verdict_key: String,
    /// Measured in the experiment's quick form or in fewer rounds than a full one's first look.
    #[serde(default)]
    pub provisional: bool,
    pub reason: Option<String>,
    pub cause: Option<String>,
    pub study: Option<String>,
}

impl ClaimRow {
    fn of(claim: &Claim, one: &Judged) -> ClaimRow {
        let comparison = one.comparison.as_ref();
        ClaimRow {
            claim: claim.id.clone(),
            claim_version: claim.version(),
            test: one.test.name.clone(),
            source: claim.source.clone(),
            sure: one.test.sureness(claim).key().to_string(),
            figure: one.test.figure.clone(),
            subject: one.test.subject.clone(),
            reference: one.test.reference.clone(),
            metric: metric_name(one.test.metric).to_string(),
            measured_metric: (comparison.map(|c| c.metric))
                .filter(|&metric| metric != one.test.metric)
                .map(|metric| format!("{} at equal load", metric_name(metric))),
            claimed: one.test.claimed_text(),
            expected_here: expected_here(one),
            ratio: comparison.map(|c| c.ratio),
            low: comparison.and_then(|c| c.low),
            high: comparison.and_then(|c| c.high),
            confidence: comparison.map(|c| c.confidence),
            family_size: comparison.map(|c| c.family_size),
            asked_by: comparison.map(|_| asked_by(one).to_string()),
            rounds: comparison.map(|c| c.rounds),
            outcome: comparison.map(|c| c.outcome.word().to_string()),
            detectable: comparison.and_then(|c| c.detectable),
            regime: one.regime.as_ref().map(|r| r.name().to_string()),
            verdict: verdict_text(one),
            verdict_key: one.verdict.key().to_string(),
            provisional: one.provisional && comparison.is_some(),
            reason: one.verdict.reason().map(String::from),
            cause: cause(one),
            study: one.study.map(|study| study.title.clone()),
        }
    }
}

fn asked_by(one: &Judged) -> &'static str {
    match one.own_question {
        true => "claim",
        false => "analysis",
    }
}

/// "1.03× as far as 2 CPUs allow": the claimed size on this machine, where it scales.
fn expected_here(one: &Judged) -> Option<String> {
    let expected = one.expected.filter(|e| e.scaled != 1.0)?;
    let size = match expected.size {
        Some((low, high)) if low == high => format!("{}×", ratio_text(low)),
        Some((low, high)) => format!("{}–{}×", ratio_text(low), ratio_text(high)),
        None => String::new(),
    };
    let bounds = [
        ("at least", expected.at_least),
        ("at most", expected.at_most),
    ]
    .into_iter()
    .filter_map(|(word, bound)| Some(format!("{word} {}×", ratio_text(bound?))));
    let said: Vec<String> = std::iter::once(size)
        .filter(|s| !s.is_empty())
        .chain(bounds)
        .collect();
    Some(format!(
        "{} as far as this machine's CPUs allow ({} of the claim's)",
        said.join(", "),
        percent(expected.scaled)
    ))
}

/// "1.38× faster [1.05–1.75], 12 rounds (95% interval)": the comparison as the analysis decided
/// it, its words and its interval at its level; or why nothing was measured.
pub fn measured_text(one: &Judged) -> String {
    match (&one.comparison, one.verdict.reason()) {
        (Some(comparison), _) => {
            let level = level_text(comparison.confidence);
            let how = match (comparison.family_size, one.own_question) {
                (_, true) => format!("{level} interval, asked by the claim"),
                (1, false) => format!("{level} interval"),
                (size, false) => {
                    format!("{level} interval, simultaneous over {size} comparisons of its study")
                }
            };
            let said = format!("{} ({how})", comparison_text(comparison));
            match comparison.metric == one.test.metric {
                true => said,
                false => format!(
                    "at equal load, server {} {said}",
                    metric_name(comparison.metric)
                ),
            }
        }
        (None, Some(reason)) => reason.to_string(),
        (None, None) => "nothing measured".to_string(),
    }
}

/// "1.38× faster [1.05–1.75], 12 rounds", "0.98×, no difference beyond 3% [0.95–1.01], 12
/// rounds": the analysis's words, the ratio with as many digits as it needs.
fn comparison_text(comparison: &Comparison) -> String {
    let ratio = format!("{}×", ratio_text(comparison.ratio));
    let interval = interval_text(comparison.low, comparison.high, comparison.rounds);
    match comparison.outcome {
        Outcome::Different => format!("{ratio} {} {interval}", comparison.word()),
        _ => format!("{ratio}, {} {interval}", comparison.word()),
    }
}

/// "[0.95–1.01], 12 rounds", with as many digits as the ratios need.
fn interval_text(low: Option<f64>, high: Option<f64>, rounds: usize) -> String {
    match (low, high) {
        (Some(low), Some(high)) => {
            format!(
                "[{}–{}], {rounds} rounds",
                ratio_text(low),
                ratio_text(high)
            )
        }
        _ => format!("no interval, {rounds} rounds"),
    }
}

/// The verdict with what it rests on: "reproduced, smaller here", "not reproduced: no
/// difference beyond 3%", "inconclusive after 24 rounds (…)", "cannot test here: the load
/// generator was the limit: …"; "provisional (8 rounds): " before a first look's.
pub fn verdict_text(one: &Judged) -> String {
    let said = match (&one.verdict, &one.comparison) {
        (Verdict::Inconclusive(reason), Some(comparison)) => {
            let budget = *LOOKS.last().expect("looks") as usize;
            let futile = one.study.is_some_and(|study| !study.looks.is_empty())
                && comparison.rounds < budget
                && comparison.futile(budget);
            let futile = match futile {
                true => "; rounds up to the budget were unlikely to decide it",
                false => "",
            };
            format!(
                "inconclusive after {} rounds ({reason}{futile})",
                comparison.rounds
            )
        }
        (Verdict::CannotTest(reason), _) => format!("cannot test here: {reason}"),
        (Verdict::NotMeasured(reason), _) => format!("not measured: {reason}"),
        (verdict, _) => match verdict.reason() {
            Some(reason) => format!("{}: {reason}", verdict.text()),
            None => verdict.text(),
        },
    };
    match (one.provisional, &one.comparison) {
        (true, Some(comparison)) => {
            format!("provisional ({} rounds): {said}", comparison.rounds)
        }
        _ => said,
    }
}

/// CPUs kept busy, one side over the other, beyond which the parallelism is named as a cause of
/// a throughput difference (threads that each keep a CPU busy against one ring).
const PARALLEL_RATIO: f64 = 1.25;

/// One figure that bears on a verdict: what it says, and whether it explains the subject's
/// direction (else it goes against it).
struct Reason {
    text: String,
    explains: bool,
}

/// What explains the verdict, from what was counted: the analysis's causes that fire for
/// either side, its decided comparison of the costs (CPU per operation, where the test is on
/// another metric), and the CPUs each side kept busy where they differ (throughput only). Each
/// is placed by the direction it predicts: the figures that explain the subject's direction
/// first, then those that went the other way. A comparison without a direction (a tie, no
/// difference, undecided) is explained by nothing: its counts are given as counted. Where the
/// load generator was the limit, that is the cause.
pub fn cause(one: &Judged) -> Option<String> {
    let (subject, reference) = one.sides.as_ref()?;
    let study = one.study?;
    let noun = op_noun(&study.workload);
    if matches!(one.verdict, Verdict::CannotTest(_)) {
        let pace = [
            (subject.engine.engine.as_str(), &subject.figures),
            (reference.engine.engine.as_str(), &reference.figures),
        ];
        return client_saturation(&pace);
    }
    let comparison = one.comparison.as_ref()?;
    if comparison.outcome != Outcome::Different {
        let counts: Vec<String> = [subject, reference]
            .iter()
            .filter_map(|side| counted(&side.engine.engine, &side.figures, noun))
            .collect();
        return (!counts.is_empty()).then(|| format!("counted {}", counts.join("; ")));
    }
    let better = comparison.better();
    let mut reasons: Vec<Reason> = Vec::new();
    let sides = [(subject, reference, true), (reference, subject, false)];
    let mut seen: Vec<String> = Vec::new();
    for (ours, theirs, is_subject) in sides {
        let about = Subject {
            figures: &ours.figures,
            reference: &theirs.engine.engine,
            reference_figures: &theirs.figures,
            noun,
        };
        for found in causes(&about) {
            // A rule that weighs both sides (context switches) fires for each: said once.
            let names = [ours.engine.engine.as_str(), theirs.engine.engine.as_str()];
            let skeleton = skeleton(&found.text, &names);
            if seen.contains(&skeleton) {
                continue;
            }
            seen.push(skeleton);
            // A help for the subject, or a hurt for the reference, explains the subject doing
            // better.
            let helps_subject = (found.direction == Direction::Helps) == is_subject;
            reasons.push(Reason {
                text: format!("{}: {}", ours.engine.engine, found.text),
                explains: helps_subject == better,
            });
        }
    }
    if one.test.metric != Metric::CpuPerOp {
        let cost = (one.reference_study)
            .filter(|reference_study| std::ptr::eq(*reference_study, study))
            .and_then(|_| {
                study.decided(
                    &subject.engine.engine,
                    &reference.engine.engine,
                    Metric::CpuPerOp,
                )
            })
            .filter(|cost| cost.outcome == Outcome::Different);
        if let Some(cost) = cost {
            let whose = if is_network(&study.workload) {
                "server CPU"
            } else {
                "CPU"
            };
            reasons.push(Reason {
                text: format!(
                    "{} {whose} per {noun} {} µs against {} µs: {}",
                    subject.engine.engine,
                    per_op(subject.engine.cpu_us_per_op.median),
                    per_op(reference.engine.cpu_us_per_op.median),
                    comparison_text(&cost)
                ),
                // Cheaper per operation explains doing better; a throughput or latency claim
                // reads cost the other way round.
                explains: cost.better() == better,
            });
        }
    }
    if one.test.metric == Metric::Throughput {
        if let (Some(ours), Some(theirs)) = (subject.cpus_used, reference.cpus_used) {
            let ratio = ours / theirs;
            if theirs > 0.0 && (ratio >= PARALLEL_RATIO || ratio <= 1.0 / PARALLEL_RATIO) {
                reasons.push(Reason {
                    text: format!(
                        "{} kept {ours:.2} CPUs busy against {theirs:.2} for {}",
                        subject.engine.engine, reference.engine.engine
                    ),
                    explains: (ratio > 1.0) == better,
                });
            }
        }
    }
    let (explains, against): (Vec<Reason>, Vec<Reason>) =
        reasons.into_iter().partition(|reason| reason.explains);
    let list = |reasons: &[Reason]| {
        (reasons.iter().map(|r| r.text.as_str()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut parts = Vec::new();
    // A syscall test's figure is itself a count: the counts below say it, nothing else need.
    let counted_itself = one.test.metric == Metric::SyscallsPerOp;
    match (explains.is_empty(), counted_itself) {
        (true, false) => parts.push("nothing counted explains it".to_string()),
        (true, true) => {}
        (false, _) => parts.push(list(&explains)),
    }
    if !against.is_empty() {
        parts.push(format!("went the other way: {}", list(&against)));
    }
    if explains.is_empty() {
        let counts: Vec<String> = [subject, reference]
            .iter()
            .filter_map(|side| counted(&side.engine.engine, &side.figures, noun))
            .collect();
        if !counts.is_empty() {
            parts.push(format!("counted {}", counts.join("; ")));
        }
    }
    Some(parts.join(". "))
}

/// A cause's words without its figures and the engines' names: equal for the same rule said
/// from either side.
fn skeleton(text: &str, names: &[&str]) -> String {
    let mut text = text.to_string();
    for name in names {
        text = text.replace(name, "");
    }
    text.chars()
        .filter(|c| !c.is_ascii_digit() && *c != '.')
        .collect()
}

/// "uring-link 0.01 syscalls, 0.26 device flushes, 1.9 context switches per page, io-wq 8
/// workers 0.41 s CPU": what was counted for one engine, per operation.
fn counted(engine: &str, figures: &Figures, noun: &str) -> Option<String> {
    let mut per: Vec<String> = Vec::new();
    let mut add = |count: Option<f64>, what: &str| {
        if let Some(value) = figures.per_op(count) {
            per.push(format!("{} {what}", per_op(value)));
        }
    };
    add(figures.syscalls, "syscalls");
    add(Some(figures.ctx_switches), "context switches");
    add(figures.iowq_punts, "io-wq punts");
    add(figures.polls_armed, "polls armed");
    if figures.device_flushes.is_some_and(|flushes| flushes > 0.0) {
        add(figures.device_flushes, "device flushes");
    }
    let mut text = format!("{engine} {} per {noun}", per.join(", "));
    if let (Some(workers), Some(cpu)) = (figures.iowq_workers, figures.iowq_cpu_s) {
        if workers > 0.0 {
            text += &format!(", io-wq {workers:.0} workers {cpu:.2} s CPU");
        }
    }
    if let Some(cpu) = figures.sqpoll_cpu_s.filter(|cpu| *cpu > 0.0) {
        text += &format!(", SQPOLL thread {cpu:.2} s CPU");
    }
    (!per.is_empty()).then_some(text)
}

/// The claim as published and as run here, in Markdown (`heading` levels deep) or plain text
/// for the terminal: source, how sure, the quote, the set-ups and their differences, the
/// command, then each test's claimed and measured figures, verdict and cause.
pub fn claim_block(report: &ClaimReport, env: &Value, command: &str, markdown: bool) -> String {
    let claim = report.claim;
    let mut text = String::new();
    let bullet = if markdown { "- " } else { "  " };
    match markdown {
        true => text.push_str(&format!("### {} — {}\n\n", claim.id, claim.title)),
        false => text.push_str(&format!("{} — {}\n", claim.id, claim.title)),
    }
    let setup = &claim.setup;
    let mut lines = vec![
        format!(
            "source: {} ({}; claim file version {})",
            claim.source,
            claim.sure.text(),
            claim.version()
        ),
        format!("claimed: {} [{}]", claim.quote, claim.statistic),
        format!(
            "there: Linux {}; {}; {}; {}",
            setup.kernel, setup.machine, setup.tool, setup.shape
        ),
        format!(
            "here: {}; ringside's own client and servers",
            machine_line(env)
        ),
    ];
    lines.extend(claim.differences.iter().map(|d| format!("differs: {d}")));
    lines.push(format!("ran: {command}"));
    for line in lines {
        text.push_str(&format!("{bullet}{line}\n"));
    }
    if markdown {
        text.push('\n');
    }
    for one in &report.judged {
        let test = one.test;
        let verdict = verdict_text(one);
        let verdict = match markdown {
            true => format!("**{verdict}**"),
            false => format!("=> {verdict}"),
        };
        let rerun = match one.verdict {
            Verdict::NotMeasured(_) => format!(" (`ringside claims run {}` measures it)", claim.id),
            _ => String::new(),
        };
        let sure = match test.sure.filter(|sure| *sure != claim.sure) {
            Some(sure) => format!("; {}", sure.text()),
            None => String::new(),
        };
        let here = expected_here(one)
            .map(|here| format!("; here {here}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{bullet}{}: claimed {} (published: {}{sure}){here}; measured {}: {verdict}{rerun}\n",
            test.label(),
            test.claimed_text(),
            test.figure,
            measured_text(one),
        ));
        if let Some(cause) = cause(one) {
            let indent = if markdown { "  - " } else { "      " };
            text.push_str(&format!("{indent}cause: {cause}\n"));
        }
    }
    text.push('\n');
    text
}

/// The verdict rows as a Markdown table: claim, test, claimed, measured, verdict.
pub fn summary_markdown(rows: &[ClaimRow]) -> String {
    let mut text = String::from(
        "| claim | test | claimed | measured here | verdict |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        let measured = match (row.ratio, row.rounds) {
            (Some(ratio), Some(rounds)) => format!(
                "{}{}× {}",
                // The figure says what it measured where that is not the test's metric.
                (row.measured_metric.as_ref()).map_or(String::new(), |what| format!("{what}: ")),
                ratio_text(ratio),
                interval_text(row.low, row.high, rounds)
            ),
            _ => "—".to_string(),
        };
        let cells = [
            row.claim.clone(),
            format!(
                "{}: {} over {}, {}",
                row.test, row.subject, row.reference, row.metric
            ),
            row.claimed.clone(),
            measured,
            row.verdict.clone(),
        ];
        text.push_str(&table_row(&cells));
    }
    text
}

/// "| a | b |\n", each cell's bars escaped.
pub fn table_row(cells: &[String]) -> String {
    let escaped: Vec<String> = cells.iter().map(|cell| cell.replace('|', "\\|")).collect();
    format!("| {} |\n", escaped.join(" | "))
}

/// The section's heading and what it holds.
const SECTION_TITLE: &str = "Published claims, on this machine";
const SECTION_ABOUT: &str = "Each claim below is a published figure that this document's \
    studies can test (`ringside claims show ID` has its source and `ringside claims run ID` its \
    own experiment). Each test reads its comparison as the analysis decided it, with the \
    interval the tables show; a test on a cell whose load generator set the pace cannot test \
    the servers (their figures per operation hold whatever rate it reached). A verdict from a \
    quick experiment or from fewer rounds than a full \
    one's first look is provisional.";
/// What the blocks say they ran.
const SECTION_COMMAND: &str = "this document's studies (see the tables)";

/// Every claim the document is judged against (`claims_of`) that its studies measured, judged.
fn measured_claims<'a>(claims: &'a [Claim], evidence: Evidence<'a>) -> Vec<ClaimReport<'a>> {
    (claims.iter())
        .map(|claim| ClaimReport::of(claim, evidence, None))
        .filter(ClaimReport::measured)
        .collect()
}

/// The section's heading in report.html, with the link back to the answer every section's has
/// (the page's outline draws the `<section>` around it).
fn html_heading() -> String {
    format!("<h2>{SECTION_TITLE} <a href=\"#answer\" title=\"back to the answer\">↑</a></h2>\n")
}

/// The report's section in Markdown and in report.html: every claim the document measured, with
/// its verdicts; empty when none was. A claim file the document keeps that does not parse
/// here is said in place of the section.
pub fn sections(document: &Document, analysis: &Analysis) -> (String, String) {
    let claims = match claims_of(document) {
        Ok(claims) => claims,
        Err(error) => {
            let text = format!("The document's claims cannot be judged: {error:#}.");
            let escape = crate::output::html::escape;
            return (
                format!("## {SECTION_TITLE}\n\n{text}\n\n"),
                format!("{}<p>{}</p>\n", html_heading(), escape(&text)),
            );
        }
    };
    let reports = measured_claims(&claims, evidence(document, analysis));
    if reports.is_empty() {
        return (String::new(), String::new());
    }
    let env = &document.env;
    let rows: Vec<ClaimRow> = reports.iter().flat_map(ClaimReport::rows).collect();
    let mut text = format!("## {SECTION_TITLE}\n\n{SECTION_ABOUT}\n\n");
    text.push_str(&summary_markdown(&rows));
    text.push('\n');
    for report in &reports {
        text.push_str(&claim_block(report, env, SECTION_COMMAND, true));
    }
    let escape = crate::output::html::escape;
    let mut page = format!(
        "{}<p>{}</p>\n<table>\n<tr><th>claim</th><th>test</th><th>claimed</th>\
         <th>measured here</th><th>verdict</th></tr>\n",
        html_heading(),
        escape(SECTION_ABOUT)
    );
    for line in summary_markdown(&rows).lines().skip(2) {
        let cells: Vec<String> = (line.trim_matches('|').split(" | "))
            .map(|cell| format!("<td>{}</td>", escape(cell.trim())))
            .collect();
        page.push_str(&format!("<tr>{}</tr>\n", cells.concat()));
    }
    page.push_str("</table>\n");
    for report in &reports {
        let block = claim_block(report, env, SECTION_COMMAND, false);
        page.push_str(&format!("<pre>{}</pre>\n", escape(&block)));
    }
    (text, page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::tests::paired_rows;
    use crate::row::params::{Param, Params};
    use crate::row::{ClaimFile, Row};

    /// 12 paired rounds of buffered 4 KiB writes where the ring runs 1.2× blocking and one SQE
    /// at a time 0.16×.
    fn writes() -> Vec<Row> {
        let mut rows = paired_rows(
            &[
                ("blocking", 1000.0, 1000),
                ("uring-single", 160.0, 1000),
                ("uring-ring", 1200.0, 10),
            ],
            12,
        );
        for row in &mut rows {
            row.params.put(Param::BlockSize, Value::from("4k"));
            row.params.put(Param::Direct, Value::from(false));
        }
        rows
    }

    fn section_of(document: &Document) -> (String, String) {
        sections(document, &Analysis::of(document))
    }

    /// Goal: a document whose studies hold a claim's engines at its parameters gets the claim in
    /// its report, with the published figure, the measured one as the analysis decided it and
    /// the verdict; one that does not, no section. Method: `writes`, judged against seed 003's
    /// claim.
    #[test]
    fn the_report_judges_the_claims_its_studies_measured() {
        let document = Document::new(Value::Null, writes());
        let (text, html) = section_of(&document);
        assert!(
            text.starts_with("## Published claims, on this machine"),
            "{text}"
        );
        assert!(text.contains("seed003-write-4k"), "{text}");
        assert!(
            text.contains("blocking 1.4 GB/s vs Go io_uring with 1 entry"),
            "{text}"
        );
        assert!(text.contains("**reproduced, in size**"), "{text}");
        assert!(!text.contains("seed000-echo"), "{text}");
        assert!(html.contains("<td>seed003-write-4k</td>"), "{html}");
        let analysis = Analysis::of(&document);
        let claims = Claim::embedded().unwrap();
        let claim = claims.iter().find(|c| c.id == "seed003-write-4k").unwrap();
        let rows = ClaimReport::of(claim, evidence(&document, &analysis), None).rows();
        assert_eq!(rows[1].verdict_key, "reproduced");
        assert_eq!(
            rows[1].asked_by.as_deref(),
            Some("analysis"),
            "{:?}",
            rows[1]
        );
        // The interval is the analysis's, as its tables print it.
        let decided = (analysis.studies[0])
            .decided("uring-single", "blocking", Metric::Throughput)
            .unwrap();
        assert_eq!((rows[1].low, rows[1].high), (decided.low, decided.high));
        let empty = Document::new(Value::Null, Vec::new());
        assert!(section_of(&empty).0.is_empty());
    }

    /// Goal: a claim the document keeps (a user's own, from `--claims-dir`) is judged in its
    /// report like a shipped one, and a kept file that no longer parses is said by name.
    #[test]
    fn a_users_claim_kept_by_the_document_is_in_the_report() {
        let text = Claim::embedded().unwrap()[0].text.clone();
        let shipped = Claim::embedded().unwrap();
        let own = (shipped.iter())
            .find(|c| c.id == "seed003-write-4k")
            .unwrap()
            .text
            .replace("seed003-write-4k", "my-writes")
            .replace("seed = \"003\"", "");
        let mut document = Document::new(Value::Null, writes());
        document.claims.push(ClaimFile {
            file: "my-writes.toml".into(),
            text: own,
        });
        let (markdown, _) = section_of(&document);
        assert!(markdown.contains("### my-writes"), "{markdown}");
        document.claims.push(ClaimFile {
            file: "broken.toml".into(),
            text: text.replace("title", "titel"),
        });
        let (markdown, _) = section_of(&document);
        assert!(
            markdown.contains("claim file broken.toml, which does not parse"),
            "{markdown}"
        );
    }
    /// 12 rounds of closed-loop echo at 50 connections × 64 B: uring at 0.8× epoll's messages/s
    /// with 6.6 µs of server CPU per message against 5.1 and 0.15 syscalls against 2.4, the
    /// load saturated in every run or in none.
    fn echo(saturated: bool) -> Vec<Row> {
        use crate::model::equal_load::tests::point_row;
        use crate::row::SyscallSource;
        let mut rows = Vec::new();
        for run in 1..=12 {
            let machine = 1.0 + 0.2 * (f64::from(run) * 1.7).sin();
            let engines = [
                ("epoll", 100_000.0, 5.1, 2.4),
                ("uring", 80_000.0, 6.6, 0.15),
            ];
            for (index, (engine, rate, cpu_us, syscalls)) in engines.into_iter().enumerate() {
                let own = 1.0 + 0.01 * (f64::from(run) * 2.3 + index as f64).cos();
                let mut row = point_row(engine, rate * machine * own, cpu_us, 300);
                row.run = run;
                (row.offered_rate, row.client_late_share) = (None, None);
                row.params.remove(Param::P99BoundNs.key());
                row.params.put(Param::PayloadBytes, 64);
                row.params.put(Param::ClientThreads, 1);
                row.syscalls = (row.ops as f64 * syscalls) as u64;
                row.syscalls_source = SyscallSource::Kernel;
                row.client_saturated = Some(saturated);
                row.server_cpu_utilisation = Some(if saturated { 0.7 } else { 0.99 });
                let client = if saturated { 0.99 } else { 0.4 };
                (row.client_cpu_user_s, row.client_cpu_sys_s) =
                    (Some(client / 2.0), Some(client / 2.0));
                rows.push(row);
            }
        }
        rows
    }

    /// Goal: a throughput test on a cell whose load generator set the pace cannot test the
    /// servers; on a server-bound cell the verdict stands, and its cause is the figure that
    /// explains it (server CPU per message), with what went the other way (fewer syscalls).
    /// Method: `echo`, judged against seed 000's claim at 50 connections (io_uring 1.17–1.20×).
    #[test]
    fn the_load_generator_gates_throughput_and_the_cause_explains_the_verdict() {
        let claims = Claim::embedded().unwrap();
        let claim = claims.iter().find(|c| c.id == "seed000-echo").unwrap();
        let judged = |rows: Vec<Row>| {
            let document = Document::new(Value::Null, rows);
            let analysis = Analysis::of(&document);
            let rows = ClaimReport::of(claim, evidence(&document, &analysis), None).rows();
            rows.into_iter()
                .find(|row| row.test == "50 connections")
                .unwrap()
        };
        let gated = judged(echo(true));
        assert_eq!(gated.verdict_key, "cannot-test", "{gated:?}");
        assert!(
            gated.verdict.contains("the load generator was the limit"),
            "{gated:?}"
        );
        assert_eq!(gated.regime.as_deref(), Some("client-bound"));
        let served = judged(echo(false));
        assert_eq!(served.verdict_key, "reversed", "{served:?}");
        let cause = served.cause.unwrap();
        assert!(
            cause.starts_with("uring server CPU per message 6.6 µs against 5.1 µs"),
            "{cause}"
        );
        assert!(
            cause.contains("went the other way: uring: 0.15 syscalls per message"),
            "{cause}"
        );
    }

    /// Goal: on a cell whose load generator set the pace, a CPU test cannot test the servers
    /// either (each ran at whatever rate the load reached), and says why; on a server-bound cell
    /// it is judged. Method: seed 000's 50-connection test turned into a CPU-per-message test,
    /// judged on `echo(true)` and `echo(false)`.
    #[test]
    fn the_load_generator_gates_cpu_per_operation_too() {
        let mut claim = (Claim::embedded().unwrap().into_iter())
            .find(|c| c.id == "seed000-echo")
            .unwrap();
        claim.tests.retain(|test| test.name == "50 connections");
        claim.tests[0].metric = crate::model::summary::Metric::CpuPerOp;
        let judged = |rows: Vec<Row>| {
            let document = Document::new(Value::Null, rows);
            let analysis = Analysis::of(&document);
            let report = ClaimReport::of(&claim, evidence(&document, &analysis), None);
            report.rows().remove(0)
        };
        let gated = judged(echo(true));
        assert_eq!(gated.verdict_key, "cannot-test", "{gated:?}");
        assert!(
            gated
                .verdict
                .contains("CPU per operation was measured at whatever rate"),
            "{}",
            gated.verdict
        );
        let served = judged(echo(false));
        assert_ne!(served.verdict_key, "cannot-test", "{served:?}");
    }

    /// Goal: a claim that allows it is judged at equal load where the closed loop measured the
    /// load generator, or where only the sweep ran: server CPU per message at one offered
    /// rate, the claimed ratio turned round. Method: 12 rounds at 30k messages/s where uring
    /// spends 4.0 µs per message against epoll's 5.1 (0.78×: the claimed 1.17–1.20× is
    /// 0.83–0.85×), beside `echo(true)`, then alone; and `echo(true)` without them.
    #[test]
    fn a_claim_may_be_judged_at_equal_load_where_the_load_was_the_limit() {
        use crate::model::equal_load::tests::rounds_at;
        let mut claim = (Claim::embedded().unwrap().into_iter())
            .find(|c| c.id == "seed000-echo")
            .unwrap();
        claim.tests.retain(|test| test.name == "50 connections");
        claim.tests[0].at_equal_load = true;
        let mut points = rounds_at(&[("epoll", 5.1), ("uring", 4.0)], 30_000.0, 12);
        for row in &mut points {
            row.params.put(Param::PayloadBytes, 64);
        }
        let judged = |rows: Vec<Row>| {
            let document = Document::new(Value::Null, rows);
            let analysis = Analysis::of(&document);
            let report = ClaimReport::of(&claim, evidence(&document, &analysis), None);
            let measured = measured_text(&report.judged[0]);
            (report.rows().remove(0), measured)
        };
        for rows in [[echo(true), points.clone()].concat(), points] {
            let (row, measured) = judged(rows);
            assert_eq!(row.verdict, "reproduced, larger here", "{measured}");
            assert!(
                measured.starts_with("at equal load, server CPU per operation 0.78× cheaper"),
                "{measured}"
            );
            // The row and the ledger's table say what the ratio measured, not the throughput.
            let what = row.measured_metric.clone();
            assert_eq!(what.as_deref(), Some("CPU per operation at equal load"));
            let table = summary_markdown(&[row]);
            assert!(
                table.contains("| CPU per operation at equal load: 0.78× ["),
                "{table}"
            );
        }
        let (ClaimRow { verdict, .. }, _) = judged(echo(true));
        assert!(
            verdict.ends_with("no equal-load comparison of uring and epoll ran here"),
            "{verdict}"
        );
    }
}
