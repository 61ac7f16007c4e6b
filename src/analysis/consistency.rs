//! What a page may never say twice: over an analysis, every comparison has one decision (one
//! interval, one outcome) wherever it is stated, every cell one regime, and a study names a
//! winner only where that engine was decided better than every other engine of its answer. The
//! tests run it over a real results document, and over any named in `RINGSIDE_CHECK_DOCUMENTS`
//! (paths separated by `:`; a default run's documents are too large to keep in the tree).

use crate::analysis::Analysis;
use crate::model::comparison::Comparison;
use crate::model::regime::CellClass;

/// The same comparison either way round: the pair of engines (in order) and the metric.
fn key(c: &Comparison) -> (String, String, String) {
    let (a, b) = match c.subject <= c.reference {
        true => (&c.subject, &c.reference),
        false => (&c.reference, &c.subject),
    };
    (a.clone(), b.clone(), format!("{:?}", c.metric))
}

/// Whether two statements of one comparison say the same: the same interval and outcome.
fn same(a: &Comparison, b: &Comparison) -> bool {
    let bounds = |c: &Comparison| match c.subject <= c.reference {
        true => (c.low, c.high),
        false => (c.high.map(f64::recip), c.low.map(f64::recip)),
    };
    let close = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        (x, y) => x.is_none() && y.is_none(),
    };
    let ((al, ah), (bl, bh)) = (bounds(a), bounds(b));
    a.outcome == b.outcome && a.rounds == b.rounds && close(al, bl) && close(ah, bh)
}

/// Every statement of `analysis` that contradicts another, in words; empty when none does.
pub fn contradictions(analysis: &Analysis) -> Vec<String> {
    let mut found = Vec::new();
    // One decision per comparison in each place (a study or an equal-load point).
    let places = (analysis
        .studies
        .iter()
        .map(|s| (s.title.clone(), &s.decided)))
    .chain((analysis.loads.iter()).map(|l| (format!("{} at equal load", l.title()), &l.decided)));
    for (title, decided) in places {
        for (i, a) in decided.iter().enumerate() {
            if let Some(b) = decided[i + 1..].iter().find(|b| key(a) == key(b)) {
                found.push(format!(
                    "{title}: {} against {} ({:?}) decided twice ({} and {})",
                    a.subject,
                    a.reference,
                    a.metric,
                    a.word(),
                    b.word()
                ));
            }
        }
    }
    // Each answer and feature states the decision its place holds. An answer may rest on its
    // study or on its equal-load point, which both compare the same engines on CPU: the
    // statement must be one of them, the same.
    let decision = |study: Option<usize>, load: Option<usize>, c: &Comparison| {
        let in_study = study
            .and_then(|i| analysis.studies.get(i))
            .map(|s| &s.decided);
        let in_load = load.and_then(|i| analysis.loads.get(i)).map(|l| &l.decided);
        let candidates: Vec<&Comparison> = (in_load.into_iter().chain(in_study))
            .flatten()
            .filter(|d| key(d) == key(c))
            .collect();
        let found = candidates
            .iter()
            .find(|d| same(d, c))
            .or(candidates.first());
        found.map(|d| (*d).clone())
    };
    let screen = &analysis.screen;
    for answer in screen.answers.iter().chain(&screen.integrity) {
        for c in &answer.comparisons {
            match decision(answer.study, answer.load, c) {
                Some(d) if same(&d, c) => {}
                Some(d) => found.push(format!(
                    "{}: {} against {} stated as {} [{:?}–{:?}], decided {} [{:?}–{:?}]",
                    answer.words,
                    c.subject,
                    c.reference,
                    c.word(),
                    c.low,
                    c.high,
                    d.word(),
                    d.low,
                    d.high
                )),
                None => found.push(format!(
                    "{}: {} against {} stated but never decided",
                    answer.words, c.subject, c.reference
                )),
            }
        }
        if let (Some(winner), Some(study)) = (&answer.winner, answer.study) {
            found.extend(unearned_win(analysis, study, winner, &answer.comparisons));
        }
        // The cell's regime, said once: the answer names no other.
        if let Some(regime) = answer.study.and_then(|i| analysis.regime(i)) {
            for (phrase, classes) in REGIME_PHRASES {
                if answer.text.contains(phrase) && !classes.contains(&regime.class) {
                    found.push(format!(
                        "{}: the answer says '{phrase}' of a {} cell",
                        answer.words,
                        regime.name()
                    ));
                }
            }
        }
    }
    for feature in screen.helped.iter().chain(&screen.hurt) {
        for c in &feature.comparisons {
            let held = (analysis.studies.iter().map(|s| &s.decided))
                .chain(analysis.loads.iter().map(|l| &l.decided))
                .flatten()
                .any(|d| key(d) == key(c) && same(d, c));
            if !held || !c.is_different() {
                found.push(format!(
                    "feature {} over {}: {} against {} is not a decided difference of its study",
                    feature.engine, feature.parent, c.subject, c.reference
                ));
            }
        }
    }
    found
}

/// How a regime is said, and the cells it may be said of.
const REGIME_PHRASES: [(&str, &[CellClass]); 3] = [
    ("server-bound", &[CellClass::ServerBound]),
    ("neither side saturated", &[CellClass::Neither]),
    (
        "the load generator was saturated",
        &[CellClass::ClientBound, CellClass::Mixed],
    ),
];

/// A winner must have been decided better than every other engine its answer compares.
fn unearned_win(
    analysis: &Analysis,
    study: usize,
    winner: &str,
    comparisons: &[Comparison],
) -> Option<String> {
    let decided = &analysis.studies.get(study)?.decided;
    let metric = comparisons.first()?.metric;
    let mut others: Vec<&str> = (comparisons.iter())
        .flat_map(|c| [c.subject.as_str(), c.reference.as_str()])
        .filter(|engine| *engine != winner)
        .collect();
    others.sort_unstable();
    others.dedup();
    let beaten = |other: &str| {
        decided.iter().any(|d| {
            d.metric == metric
                && d.is_different()
                && ((d.subject == winner && d.reference == other && d.better())
                    || (d.subject == other && d.reference == winner && !d.better()))
        })
    };
    let not_beaten: Vec<&str> = others.into_iter().filter(|o| !beaten(o)).collect();
    (!not_beaten.is_empty()).then(|| {
        format!(
            "{}: {winner} named the winner but not decided better than {}",
            analysis.studies[study].title,
            not_beaten.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Document;

    /// A real document: `ringside run --quick` on a 2-vCPU VM (tests/fixtures).
    const RUN_QUICK: &str = include_str!("../../tests/fixtures/run-quick.json");

    fn analysis_of(text: &str) -> Analysis {
        let document: Document = serde_json::from_str(text).unwrap();
        Analysis::of(&document)
    }

    #[test]
    fn a_real_document_says_each_thing_once() {
        let analysis = analysis_of(RUN_QUICK);
        assert!(!analysis.screen.answers.is_empty());
        assert_eq!(contradictions(&analysis), Vec::<String>::new());
    }

    #[test]
    fn the_named_documents_say_each_thing_once() {
        let names = std::env::var("RINGSIDE_CHECK_DOCUMENTS").unwrap_or_default();
        for path in names.split(':').filter(|p| !p.is_empty()) {
            let text = std::fs::read_to_string(path).unwrap();
            let found = contradictions(&analysis_of(&text));
            assert_eq!(found, Vec::<String>::new(), "{path}");
        }
    }

    /// Goal: the checker can fail. Method: one answer's interval widened (or given one), as a
    /// second decision of the same comparison would print it.
    #[test]
    fn a_second_interval_is_found() {
        let mut analysis = analysis_of(RUN_QUICK);
        let answer = (analysis.screen.answers.iter_mut())
            .find(|a| !a.comparisons.is_empty())
            .expect("an answer with a comparison");
        let c = &mut answer.comparisons[0];
        c.low = Some(c.low.unwrap_or(c.ratio) * 0.9);
        let found = contradictions(&analysis);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("stated as"), "{found:?}");
    }
}
