//! The first screen's features that helped and hurt: each rung of the ladder (an engine over
//! the engine it extends) outside noise, grouped across the studies with spread, with the cause
//! measured where it mattered most. Rungs where the load generator set the pace are left out
//! in the direction that limit could have made.

use crate::report::causes::{first_cause, Direction, Subject};
use crate::report::ladder::{ladder, Rung};
use crate::report::numbers::ratio;
use crate::report::summary::Study;

/// Whether a study's rungs can be told from noise: a single run has no spread to judge by (the
/// caveats say so).
fn judged(study: &&Study) -> bool {
    study.runs() > 1
}

/// The rungs outside noise, grouped by feature (an engine over the engine it extends) across the
/// studies with spread: those that moved more, then those that moved less, each with the cause
/// from the study where it mattered most.
pub fn features(studies: &[Study]) -> (Vec<String>, Vec<String>) {
    let mut helped = Vec::new();
    let mut hurt = Vec::new();
    let mut seen: Vec<(String, String, bool)> = Vec::new();
    for study in studies.iter().filter(judged) {
        for rung in ladder(study).iter().filter(|rung| !rung.within_noise()) {
            let gained = rung.ratio > 1.0;
            if !ranks_the_servers(study, rung, gained) {
                continue;
            }
            let key = (rung.engine.clone(), rung.parent.clone(), gained);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let line = feature_line(studies, rung, gained);
            if gained {
                helped.push(line);
            } else {
                hurt.push(line);
            }
        }
    }
    (helped, hurt)
}

/// Whether a rung's direction is the servers' and not the load generator's: not where the client
/// set the pace for both engines, and where it did for one, only the way that limit cannot
/// reverse (a saturated engine that gained on a free parent gained at least that much; a free
/// engine that fell below a saturated parent fell at least that far).
fn ranks_the_servers(study: &Study, rung: &Rung, gained: bool) -> bool {
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

/// "uring-defer over uring-fixed: 1.75× in fs-write, 1.10× in fs-cycle; it ran its
/// completions …" for one feature, in every study where it moved the same way outside noise.
fn feature_line(studies: &[Study], first: &Rung, gained: bool) -> String {
    let mut places = Vec::new();
    let mut strongest: Option<(f64, &Study)> = None;
    for study in studies.iter().filter(judged) {
        let same = ladder(study).into_iter().find(|rung| {
            rung.engine == first.engine
                && rung.parent == first.parent
                && !rung.within_noise()
                && (rung.ratio > 1.0) == gained
                && ranks_the_servers(study, rung, gained)
        });
        if let Some(rung) = same {
            places.push(format!("{} in {}", ratio(rung.ratio), study.title));
            let effect = rung.ratio.ln().abs();
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
        first.parent,
        places.join(", "),
        cause.unwrap_or_default()
    )
}
