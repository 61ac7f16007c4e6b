//! The one analysis of a results document: rows → studies → the questions the plan asks →
//! comparisons decided once, in their families → each cell's regime → equal load → the first
//! screen's answers, features and caveats, as data. Every view (the terminal, report.md,
//! report.html, `report --format json|csv`, the claims) renders an `Analysis` and decides
//! nothing itself, so a figure, a verdict or a sentence is computed once and reads the same
//! wherever it is shown.
//!
//! The first screen's questions are fixed by the study plan before anything is measured: each
//! engine of a study's line against its baseline and each rung against the engine it extends,
//! on the headline, and each engine against epoll at equal load, on server CPU. They are decided
//! together (`Family::Simultaneous`: every interval at 1 − α/m), so the screen states one level.
//! Every other comparison (the tables' other metrics, the engines outside the line, who ties
//! with the fastest) is decided on its own at 1 − α. A comparison is decided once: a section
//! shows the first screen's decision where the screen asked it.

pub mod causes;
pub mod consistency;
pub mod environment;
pub mod export;
pub mod numbers;
pub mod plan;
pub mod screen;

use serde_json::Value;

use crate::model::calibration::SelfCheck;
use crate::model::comparison::{decide, level_text, Comparison, Family, ALPHA};
use crate::model::equal_load::{equal_loads, EqualLoad};
use crate::model::regime::CellRegime;
use crate::model::study::{studies, Study};
use crate::model::summary::Metric;
use crate::row::Document;

pub use screen::{Answer, Screen};

/// A results document analysed: what every view renders.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The machine in one line (the probe's).
    pub machine: String,
    /// The studies, each with every comparison decided (`Study::decided`).
    pub studies: Vec<Study>,
    /// Each study's regime, by index (None for studies without a closed loop).
    pub regimes: Vec<Option<CellRegime>>,
    /// The equal-load comparisons, each with its comparisons decided (`EqualLoad::decided`).
    pub loads: Vec<EqualLoad>,
    /// The first screen: answers, features, caveats, the headline.
    pub screen: Screen,
    /// What the A/A pairs (each study's baseline measured twice a round) say about the machine;
    /// None where no study ran one.
    pub self_check: Option<SelfCheck>,
    /// The first screen's questions, decided: what a study must settle before it stops.
    pub questions: Vec<plan::Question>,
}

/// The A/A pairs in a sentence: how many of their comparisons were called different, and the
/// noise between blocks of rounds on throughput.
fn self_check_text(check: &SelfCheck) -> String {
    let noise = (check.noise.iter())
        .find(|noise| noise.metric == Metric::Throughput)
        .map_or(String::new(), |noise| {
            format!(
                "; on throughput, the variance between blocks of rounds was {:.2}× a round's \
                 own (in ranks), and every interval allows for it",
                noise.between_block_share
            )
        });
    format!(
        "The baseline measured twice in every round (the A/A pair) was called different from \
         itself in {} of {} comparisons ({:.1}%; each interval is at 95% or more, and a \
         difference must clear its margin, so an honest run calls well under 5%){noise}.",
        check.different,
        check.comparisons,
        check.false_difference_rate() * 100.0
    )
}

impl Analysis {
    /// Analyses `document`'s rows.
    pub fn of(document: &Document) -> Analysis {
        let mut studies = studies(&document.results);
        let mut loads = equal_loads(&document.results);
        let regimes: Vec<Option<CellRegime>> = studies.iter().map(Study::regime).collect();
        // The screen's questions, each study's (or equal load's) decided as one family.
        let mut asked = plan::screen_questions(&studies, &regimes, &loads);
        let mut places: Vec<plan::Place> = asked.iter().map(|q| q.place).collect();
        places.dedup();
        for place in places {
            let members: Vec<usize> = (0..asked.len())
                .filter(|&i| asked[i].place == place)
                .collect();
            let mut family: Vec<Comparison> = members
                .iter()
                .map(|&i| asked[i].comparison.clone())
                .collect();
            decide(&mut family, Family::Simultaneous);
            for (&i, decided) in members.iter().zip(family) {
                asked[i].comparison = decided;
            }
        }
        for question in &asked {
            match question.place {
                plan::Place::Study(index) => {
                    studies[index].decided.push(question.comparison.clone())
                }
                plan::Place::Load(index) => loads[index].decided.push(question.comparison.clone()),
            }
        }
        // Everything else each at its own level, never a second decision of a screen question.
        for study in studies.iter_mut() {
            let mut rest = plan::section_questions(study);
            decide(&mut rest, Family::Each);
            study.decided.extend(rest);
        }
        for load in loads.iter_mut() {
            let mut rest: Vec<Comparison> = (load.comparisons().into_iter())
                .filter(|c| load.decided_as(&c.subject, &c.reference).is_none())
                .collect();
            decide(&mut rest, Family::Each);
            load.decided.extend(rest);
        }
        // Who ties with the fastest: each line engine against the fastest, where not yet asked.
        for (study, regime) in studies.iter_mut().zip(&regimes) {
            let mut ties = plan::tie_questions(study, regime.as_ref());
            decide(&mut ties, Family::Each);
            study.decided.extend(ties);
        }
        let machine = document
            .env
            .pointer("/machine")
            .and_then(Value::as_str)
            .map_or_else(|| environment::machine_line(&document.env), String::from);
        let mut screen = Screen::of(document, &studies, &regimes, &loads, &asked);
        // What "different" means on this machine: how often the run told its baseline from itself.
        let self_check = SelfCheck::of(&studies);
        screen
            .caveats
            .extend(self_check.as_ref().map(self_check_text));
        Analysis {
            machine,
            studies,
            regimes,
            loads,
            screen,
            self_check,
            questions: asked,
        }
    }

    /// Analyses bare rows (a study's own terminal output).
    pub fn of_rows(rows: &[crate::row::Row]) -> Analysis {
        Analysis::of(&Document::new(Value::Null, rows.to_vec()))
    }

    /// The regime of the study at `index`.
    pub fn regime(&self, index: usize) -> Option<&CellRegime> {
        self.regimes.get(index).and_then(Option::as_ref)
    }

    /// The levels the page's intervals are at, once: the screen's and the sections'.
    pub fn levels_text(&self) -> String {
        let each = level_text(1.0 - ALPHA);
        let said = match self.screen.questions {
            0 => format!("Intervals are {each} each."),
            size => format!(
                "Each answer's comparisons on the first screen ({size} in all) hold together at \
                 {each}: Bonferroni within its study, so a study with m comparisons shows each \
                 interval at 1 − 5%/m (at 6 comparisons, {}). The sections' other comparisons are \
                 at {each} each; a section shows the screen's wider interval for a comparison the \
                 screen asked, so no comparison has two intervals.",
                level_text(1.0 - ALPHA / 6.0)
            ),
        };
        // A study that looked more than once decides at every look at the level that keeps
        // those errors over all its looks.
        let staged = (self.studies.iter()).find(|study| study.looks.len() > 1);
        let looks_text = |looks: &[u32]| {
            let words: Vec<String> = looks.iter().map(u32::to_string).collect();
            match words.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
                _ => words.concat(),
            }
        };
        // Every paired interval allows for what rounds taken one by one do not show.
        let said = format!(
            "{said} Each interval allows for the noise between blocks of {} consecutive rounds \
             and between consecutive rounds that the document's comparisons showed.",
            crate::row::BLOCK_ROUNDS
        );
        match staged {
            Some(study) => format!(
                "{said} A study measured with --runs auto looked at its comparisons after {} \
                 rounds and decides at the same level at every look, the one that keeps each of \
                 these errors over all its looks: its intervals are at {} where a study of fixed \
                 rounds is at {each}, and at {} where one is at {}.",
                looks_text(&study.looks),
                level_text(1.0 - study.judging.level(1)),
                level_text(1.0 - study.judging.level(6)),
                level_text(1.0 - ALPHA / 6.0)
            ),
            None => said,
        }
    }

    /// Whether every comparison the report states on `metric` in study `index` is decided.
    pub fn decided(&self, index: usize, metric: Metric) -> bool {
        (self.studies[index].decided.iter())
            .filter(|c| c.metric == metric)
            .all(|c| c.outcome.decided())
    }
}
