//! "Published claims, on this machine": each claim of the ledger judged against a document's
//! studies (`model::claim_verdict`), written as the claim as published, the set-up differences
//! that matter, the figure measured here with its interval and rounds, the verdict, and the
//! kernel-counted cause (`causes`, and the counts behind them). `ringside claims` prints the same
//! blocks, and `report.md` carries the section for every claim its document measured.

use serde::Serialize;
use serde_json::Value;

use crate::analysis::causes::{causes, client_saturation, Subject};
use crate::analysis::environment::machine_line;
use crate::analysis::numbers::per_op;
use crate::model::claim::{metric_name, ratio_text, Claim};
use crate::model::claim_verdict::{judge, Judged, Verdict};
use crate::model::comparison::LOOKS;
use crate::model::figures::Figures;
use crate::model::study::{op_noun, Study};

/// One claim judged: its tests' verdicts.
pub struct ClaimReport<'a> {
    pub claim: &'a Claim,
    pub judged: Vec<Judged<'a>>,
}

impl<'a> ClaimReport<'a> {
    /// `claim` judged against `studies`; `unmet` is why this machine cannot run it at all.
    pub fn of(claim: &'a Claim, studies: &'a [Study], unmet: Option<&str>) -> ClaimReport<'a> {
        ClaimReport {
            claim,
            judged: judge(claim, studies, unmet),
        }
    }

    /// Whether any test read a study (what a report of a document shows).
    pub fn measured(&self) -> bool {
        self.judged.iter().any(|one| one.comparison.is_some())
    }

    /// The verdict rows scripts read (`claims.json`).
    pub fn rows(&self) -> Vec<ClaimRow> {
        self.judged
            .iter()
            .map(|one| ClaimRow::of(self.claim, one))
            .collect()
    }
}

/// One test's verdict as data: what `ringside claims run --format json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimRow {
    pub claim: String,
    pub test: String,
    pub source: String,
    pub sure: String,
    pub figure: String,
    pub subject: String,
    pub reference: String,
    pub metric: String,
    pub claimed: String,
    pub ratio: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub rounds: Option<usize>,
    pub outcome: Option<String>,
    pub verdict: String,
    pub verdict_key: String,
    pub reason: Option<String>,
    pub cause: Option<String>,
    pub study: Option<String>,
}

impl ClaimRow {
    fn of(claim: &Claim, one: &Judged) -> ClaimRow {
        let comparison = one.comparison.as_ref();
        ClaimRow {
            claim: claim.id.clone(),
            test: one.test.name.clone(),
            source: claim.source.clone(),
            sure: serde_json::to_value(claim.sure)
                .ok()
                .and_then(|value| value.as_str().map(String::from))
                .unwrap_or_default(),
            figure: one.test.figure.clone(),
            subject: one.test.subject.clone(),
            reference: one.test.reference.clone(),
            metric: metric_name(one.test.metric).to_string(),
            claimed: one.test.claimed_text(),
            ratio: comparison.map(|c| c.ratio),
            low: comparison.and_then(|c| c.low),
            high: comparison.and_then(|c| c.high),
            rounds: comparison.map(|c| c.rounds),
            outcome: comparison.map(|c| c.outcome.word().to_string()),
            verdict: verdict_text(one),
            verdict_key: one.verdict.key().to_string(),
            reason: one.verdict.reason().map(String::from),
            cause: cause(one),
            study: one.study.map(|study| study.title.clone()),
        }
    }
}

/// "0.98× [0.95–1.01], 12 rounds (equivalent)", or why nothing was measured.
pub fn measured_text(one: &Judged) -> String {
    match (&one.comparison, one.verdict.reason()) {
        (Some(comparison), _) => format!(
            "{}× {} ({})",
            ratio_text(comparison.ratio),
            interval_text(comparison.low, comparison.high, comparison.rounds),
            comparison.outcome.word()
        ),
        (None, Some(reason)) => reason.to_string(),
        (None, None) => "nothing measured".to_string(),
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

/// The verdict with what it rests on: "reproduced, smaller here", "inconclusive after 24
/// rounds", "cannot test here: no poll queues".
pub fn verdict_text(one: &Judged) -> String {
    match (&one.verdict, &one.comparison) {
        (Verdict::Inconclusive, Some(comparison)) => {
            let budget = *LOOKS.last().expect("looks") as usize;
            let why = match one.study.is_some_and(|study| !study.looks.is_empty()) {
                true if comparison.rounds < budget && comparison.futile(budget) => {
                    "its interval straddles the margin, and rounds up to the budget were \
                     unlikely to decide it"
                }
                _ => "its interval straddles the margin",
            };
            format!("inconclusive after {} rounds ({why})", comparison.rounds)
        }
        (Verdict::CannotTest(reason), _) => format!("cannot test here: {reason}"),
        (Verdict::NotMeasured(reason), _) => format!("not measured: {reason}"),
        (verdict, _) => verdict.text(),
    }
}

/// What the kernel counted behind the comparison: the causes that fired, whether the client set
/// the pace, and each side's counts per operation.
pub fn cause(one: &Judged) -> Option<String> {
    let (subject, reference) = one.engines()?;
    let workload = one.study?.workload.as_str();
    let mut parts: Vec<String> = causes(&Subject::new(subject, reference, workload))
        .into_iter()
        .map(|cause| format!("{}: {}", subject.engine, cause.text))
        .collect();
    let pace = [
        (subject.engine.as_str(), &subject.figures),
        (reference.engine.as_str(), &reference.figures),
    ];
    parts.extend(client_saturation(&pace));
    let noun = op_noun(workload);
    let counts: Vec<String> = [subject, reference]
        .iter()
        .filter_map(|engine| counted(&engine.engine, &engine.figures, noun))
        .collect();
    if !counts.is_empty() {
        parts.push(format!("counted {}", counts.join("; ")));
    }
    (!parts.is_empty()).then(|| parts.join(". "))
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
        format!("source: {} ({})", claim.source, claim.sure.text()),
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
        text.push_str(&format!(
            "{bullet}{}: claimed {} (published: {}); measured {}: {verdict}{rerun}\n",
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
                "{}× {}",
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
        let escaped: Vec<String> = cells.iter().map(|cell| cell.replace('|', "\\|")).collect();
        text.push_str(&format!("| {} |\n", escaped.join(" | ")));
    }
    text
}

/// The section's heading and what it holds.
const SECTION_TITLE: &str = "Published claims, on this machine";
const SECTION_ABOUT: &str = "Each claim below is a published figure that this document's \
    studies can test (`ringside claims show ID` has its source and `ringside claims run ID` its \
    own experiment); each test is decided with the claim's other tests as one family, paired \
    round by round.";
/// What the blocks say they ran.
const SECTION_COMMAND: &str = "this document's studies (see the tables)";

/// Every shipped claim that `studies` measured, judged.
fn measured_claims<'a>(claims: &'a [Claim], studies: &'a [Study]) -> Vec<ClaimReport<'a>> {
    (claims.iter())
        .map(|claim| ClaimReport::of(claim, studies, None))
        .filter(ClaimReport::measured)
        .collect()
}

/// The report's section in Markdown: every shipped claim that `studies` measured, with its
/// verdicts; empty when none was.
pub fn section(env: &Value, studies: &[Study]) -> String {
    let claims = Claim::embedded().unwrap_or_default();
    let reports = measured_claims(&claims, studies);
    if reports.is_empty() {
        return String::new();
    }
    let mut text = format!("## {SECTION_TITLE}\n\n{SECTION_ABOUT}\n\n");
    let rows: Vec<ClaimRow> = reports.iter().flat_map(ClaimReport::rows).collect();
    text.push_str(&summary_markdown(&rows));
    text.push('\n');
    for report in &reports {
        text.push_str(&claim_block(report, env, SECTION_COMMAND, true));
    }
    text
}

/// The same section in report.html: the verdict table, then each claim's block as text.
pub fn html_section(env: &Value, studies: &[Study]) -> String {
    let claims = Claim::embedded().unwrap_or_default();
    let reports = measured_claims(&claims, studies);
    if reports.is_empty() {
        return String::new();
    }
    let escape = crate::report::html::escape;
    let mut page = format!(
        "<section>\n<h2>{SECTION_TITLE}</h2>\n<p>{}</p>\n<table>\n<tr><th>claim</th><th>test</th>\
         <th>claimed</th><th>measured here</th><th>verdict</th></tr>\n",
        escape(SECTION_ABOUT)
    );
    let rows: Vec<ClaimRow> = reports.iter().flat_map(ClaimReport::rows).collect();
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
    page.push_str("</section>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::study::{studies, tests::paired_rows};
    use crate::row::params::{Param, Params};

    /// Goal: a document whose studies hold a claim's engines at its parameters gets the claim in
    /// its report, with the published figure, the measured one and the verdict; one that does
    /// not, no section. Method: 12 paired rounds of buffered 4 KiB writes where the ring runs
    /// 1.2× blocking and one SQE at a time 0.16×, judged against seed 003's claim.
    #[test]
    fn the_report_judges_the_claims_its_studies_measured() {
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
        let measured = studies(&rows);
        let text = section(&Value::Null, &measured);
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
        let claims = Claim::embedded().unwrap();
        let claim = claims.iter().find(|c| c.id == "seed003-write-4k").unwrap();
        let rows = ClaimReport::of(claim, &measured, None).rows();
        assert_eq!(rows[1].verdict_key, "reproduced");
        assert!(
            rows[1].cause.as_deref().unwrap().contains("syscalls"),
            "{:?}",
            rows[1]
        );
        let html = html_section(&Value::Null, &measured);
        assert!(html.contains("<td>seed003-write-4k</td>"), "{html}");
        assert!(section(&Value::Null, &studies(&[])).is_empty());
    }
}
