//! The first screen's features that helped and hurt: each rung of the ladder (an engine over
//! the engine it extends) whose comparison the first screen's family decided *different*,
//! grouped across the studies with its interval and rounds, with the cause measured where it
//! mattered most. Rungs where the load generator set the pace are left out in the direction
//! that limit could have made.

use crate::model::ladder::Rung;
use crate::model::study::Study;
use crate::report::answer::Verdicts;
use crate::report::causes::{first_cause, Direction, Subject};

/// The decided rungs, grouped by feature (an engine over the engine it extends) across the
/// studies: those that moved more, then those that moved less, each with the cause from the
/// study where it mattered most.
pub fn features(studies: &[Study], verdicts: &Verdicts) -> (Vec<String>, Vec<String>) {
    let mut helped = Vec::new();
    let mut hurt = Vec::new();
    let mut seen: Vec<(&str, &str, bool)> = Vec::new();
    for rung in verdicts
        .rungs
        .iter()
        .flatten()
        .filter(|rung| rung.decided())
    {
        let gained = rung.ratio() > 1.0;
        let key = (rung.engine.as_str(), rung.parent.as_str(), gained);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let line = feature_line(studies, verdicts, rung, gained);
        if gained {
            helped.push(line);
        } else {
            hurt.push(line);
        }
    }
    (helped, hurt)
}

/// Whether a rung's direction is the servers' and not the load generator's: not where the client
/// set the pace for both engines, and where it did for one, only the way that limit cannot
/// reverse (a saturated engine that gained on a free parent gained at least that much; a free
/// engine that fell below a saturated parent fell at least that far).
pub fn ranks_the_servers(study: &Study, rung: &Rung) -> bool {
    let gained = rung.ratio() > 1.0;
    let saturated = |name: &str| {
        (study.engines.iter())
            .any(|engine| engine.engine == name && engine.figures.client_saturated)
    };
    match (saturated(&rung.engine), saturated(&rung.parent)) {
        (true, true) => false,
        (true, false) => gained,
        (false, true) => !gained,
        (false, false) => true,
    }
}

/// "uring-defer over uring-fixed: 1.75× [1.70–1.80], 12 rounds in fs-write; 1.10× [...] in
/// fs-cycle; in fs-write, it ran its completions …" for one feature, in every study where it
/// was decided the same way.
fn feature_line(studies: &[Study], verdicts: &Verdicts, first: &Rung, gained: bool) -> String {
    let mut places = Vec::new();
    let mut strongest: Option<(f64, &Study)> = None;
    for (study, rungs) in studies.iter().zip(&verdicts.rungs) {
        let same = rungs.iter().find(|rung| {
            rung.engine == first.engine
                && rung.parent == first.parent
                && rung.decided()
                && (rung.ratio() > 1.0) == gained
        });
        if let Some(rung) = same {
            places.push(format!(
                "{} in {}",
                rung.comparison.ratio_text(),
                study.title
            ));
            let effect = rung.ratio().ln().abs();
            if strongest.is_none_or(|(known, _)| effect > known) {
                strongest = Some((effect, study));
            }
        }
    }
    let cause = strongest.and_then(|(_, study)| {
        let engine = study.engines.iter().find(|e| e.engine == first.engine)?;
        let parent = study.engines.iter().find(|e| e.engine == first.parent)?;
        let direction = if gained {
            Direction::Helps
        } else {
            Direction::Hurts
        };
        let subject = Subject::new(engine, parent, &study.workload);
        first_cause(&subject, direction).map(|cause| format!("; in {}, {cause}", study.title))
    });
    format!(
        "{} over {}: {}{}.",
        first.engine,
        first.parent_label(),
        places.join("; "),
        cause.unwrap_or_default()
    )
}
