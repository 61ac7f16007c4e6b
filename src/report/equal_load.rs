//! The network answer at equal offered load (`echo --sweep`, `http --sweep`, or `--rate`), in
//! sentences: where the sweep put its points and why (its two ceilings), and the verdict at the
//! rate measured in rounds: every engine's server CPU per operation against epoll as the
//! analysis decided it, each engine's figures there, then each engine's highest rate held. A closed loop whose client was saturated measured the
//! client; these rows compare the servers.

pub use crate::model::equal_load::{equal_loads, matching, EqualLoad, LeftOut, Point};

use crate::analysis::screen::zones;
use crate::model::comparison::Comparison;
use crate::model::equal_load::BASELINE;
use crate::model::study::op_noun;
use crate::units::format_count;

/// The verdict of the equal-load section, from the comparisons the analysis decided at its rate
/// (the first screen's, where the screen asked them): "at 48.0k messages/s (8 rounds; the highest
/// point every engine held when screened), server CPU per message against epoll: uring-defer
/// cheaper (0.90× [0.86–0.94], 8 rounds); … Per engine there: …", then each engine's highest
/// rate held. No engine is called the cheapest unless its comparisons decide it.
pub fn verdict(load: &EqualLoad) -> String {
    let noun = op_noun(&load.workload);
    let decided: Vec<Comparison> = (load.comparisons().into_iter())
        .filter_map(|c| load.decided_as(&c.subject, &c.reference).cloned())
        .collect();
    let (Some((rate, left_out)), Some(first)) = (load.verdict_rate(), decided.first()) else {
        let why = match load.verdict_rate() {
            Some((rate, _)) => format!(
                "at {} {noun}s/s only one engine held the rate",
                format_count(rate)
            ),
            None => format!(
                "no offered rate was held by {} and most engines",
                load.baseline().unwrap_or(BASELINE)
            ),
        };
        return format!("{why} (each one's highest: {}).", highest_rates(load));
    };
    let baseline = &first.reference;
    let rounds = load.rounds_at(rate);
    let left = match left_out.as_slice() {
        [] => String::new(),
        out => {
            let named: Vec<String> = (out.iter())
                .map(|(name, why)| match why {
                    LeftOut::HeldNone => format!("{name}, which held none"),
                    LeftOut::Knee(knee) => format!(
                        "{name}, which did not hold it (its knee: {}/s)",
                        format_count(*knee)
                    ),
                })
                .collect();
            format!(" but {}", named.join("; "))
        }
    };
    // Every engine that held a rate held this one, or the baseline and most of them.
    let who = match left_out.iter().any(|(_, why)| *why != LeftOut::HeldNone) {
        true => format!("{baseline} and most engines"),
        false => "every engine".to_string(),
    };
    let measured = match rounds {
        1 => "one round".to_string(),
        n => format!("{n} rounds"),
    };
    let chosen = match load.is_rounds_point(rate) {
        true => format!("the highest point {who} held when screened"),
        false => format!("the highest rate {who} held"),
    };
    let held: Vec<Comparison> = (decided.iter())
        .filter(|c| !left_out.iter().any(|(name, _)| *name == c.subject))
        .cloned()
        .collect();
    let mut text = format!(
        "at {} {noun}s/s ({measured}; {chosen}{left}), server CPU per {noun} against {baseline}: \
         {}.",
        format_count(rate),
        zones(&held)
    );
    let figures: Vec<String> = (load.engines.iter())
        .filter_map(|(name, _)| {
            let point = load.at(name, rate)?;
            Some(format!(
                "{name} {:.2} µs, p99 {:.0} µs, p50 {:.0} µs",
                point.cpu_us_per_op.median, point.p99_us, point.p50_us
            ))
        })
        .collect();
    if !figures.is_empty() {
        text.push_str(&format!(
            " Per engine there (medians): {}. ",
            figures.join("; ")
        ));
    }
    let missed: Vec<String> = (load.engines.iter())
        .map(|(name, _)| (name, load.held_runs(name, rate)))
        .filter(|(_, (held, runs))| held < runs)
        .map(|(name, (held, runs))| format!("{name} {held} of {runs}"))
        .collect();
    if load.is_rounds_point(rate) && !missed.is_empty() {
        text.push_str(&format!(
            "There, runs that held the rate (schedule and p99 bound): {}; server CPU is \
             compared over the runs that achieved it. ",
            missed.join(", ")
        ));
    }
    text + &load_highest_sentence(load)
}

fn load_highest_sentence(load: &EqualLoad) -> String {
    let bound = load
        .p99_bound_us
        .map_or(String::new(), |us| format!(" with p99 ≤ {us:.0} µs"));
    format!(
        "Highest rate held{bound}, client on schedule: {}.",
        highest_rates(load)
    )
}

/// Where the sweep put its points, and why: "points at fractions of 64.0k messages/s, the lower
/// of two ceilings: the slowest engine that serves connections at once, uring, reached 165.0k
/// closed loop; the load's own open loop held 64.0k against epoll (behind at 80.0k)". None
/// without a sweep.
pub fn scale_text(load: &EqualLoad) -> Option<String> {
    let scale = load.scale.as_ref()?;
    let noun = op_noun(&load.workload);
    let mut text = match (&scale.slowest, scale.lower()) {
        (Some((slowest, probe)), Some(lower)) => {
            let client = match (&scale.fastest, scale.client_ceiling, scale.client_missed) {
                (Some((fastest, _)), Some(held), Some(missed)) => format!(
                    "the load's own open loop held {} against the fastest, {fastest} (behind \
                     its schedule or the p99 bound at {})",
                    format_count(held),
                    format_count(missed)
                ),
                (Some((fastest, _)), Some(held), None) => format!(
                    "the load's own open loop held every rate up to {} against the fastest, \
                     {fastest}",
                    format_count(held)
                ),
                _ => "the load's own ceiling was not measured".to_string(),
            };
            format!(
                "Points at fractions of {} {noun}s/s, the lower of two ceilings: the slowest \
                 engine that serves connections at once, {slowest}, reached {} closed loop; \
                 {client}.",
                format_count(lower),
                format_count(*probe)
            )
        }
        (Some(_), None) => format!(
            "No points: the load's own open loop held none of the rates it was offered against \
             the fastest server (it fell behind at {} {noun}s/s).",
            scale.client_missed.map_or("?".to_string(), format_count)
        ),
        (None, _) => "No points: no probe of an engine that serves connections at once \
                      verified."
            .to_string(),
    };
    let probe = |engine: &String| {
        (scale.probes.iter())
            .find(|(name, _)| name == engine)
            .map_or(String::new(), |(_, rate)| {
                format!(" ({}/s)", format_count(*rate))
            })
    };
    for engine in &scale.one_at_a_time {
        text.push_str(&format!(
            " {engine} serves one connection at a time: probed{}, not offered {} connections' \
             load (its closed-loop table has it).",
            probe(engine),
            load.connections
        ));
    }
    for engine in &scale.outliers {
        text.push_str(&format!(
            " {engine}'s probe{} was under a tenth of the others': offered the points, never \
             the scale.",
            probe(engine)
        ));
    }
    Some(text)
}

/// "epoll 50.0k/s, uring 40.0k/s, uring-defer none".
fn highest_rates(load: &EqualLoad) -> String {
    (load.engines.iter())
        .map(|(name, _)| match load.highest_held(name) {
            Some(rate) => format!("{name} {}/s", format_count(rate)),
            None => format!("{name} none"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
pub mod tests {
    pub use crate::model::equal_load::tests::{
        ceiling_row, point_row, probe_row, rounds_at, screened,
    };

    use super::*;

    /// The equal-load comparisons of `rows` as the analysis decided them.
    fn analysed_loads(rows: &[crate::row::Row]) -> Vec<EqualLoad> {
        crate::analysis::Analysis::of_rows(rows).loads
    }

    #[test]
    fn the_verdict_is_decided_at_the_rate_measured_in_rounds() {
        let mut rows = rounds_at(&[("epoll", 10.0), ("uring-defer", 8.0)], 10_000.0, 1);
        rows.extend(rounds_at(
            &[("epoll", 6.0), ("uring-defer", 4.8)],
            20_000.0,
            8,
        ));
        // Over the 1 ms bound: uring-defer did not hold 40k.
        rows.push(point_row("epoll", 40_000.0, 5.0, 400));
        rows.push(point_row("uring-defer", 40_000.0, 4.0, 3000));
        let loads = analysed_loads(&rows);
        assert_eq!(loads.len(), 1);
        let verdict = verdict(&loads[0]);
        assert!(
            verdict.starts_with(
                "at 20.0k messages/s (8 rounds; the highest point every engine held when \
                 screened), server CPU per message against epoll: uring-defer cheaper (0.80× ["
            ),
            "{verdict}"
        );
        assert!(
            verdict.contains("], 8 rounds). Per engine there (medians): epoll 6."),
            "{verdict}"
        );
        assert!(
            verdict.contains("client on schedule: epoll 40.0k/s, uring-defer 20.0k/s"),
            "{verdict}"
        );
    }

    /// An engine that held none of its rates (an SQPOLL poller starved) is named beside the
    /// verdict instead of leaving the others without one; with one round there is no interval.
    #[test]
    fn an_engine_that_held_nothing_does_not_take_the_verdict_from_the_others() {
        let rows = vec![
            point_row("epoll", 10_000.0, 10.0, 100),
            point_row("uring-sqpoll", 10_000.0, 40.0, 2900),
            point_row("uring-defer", 10_000.0, 8.0, 90),
            point_row("epoll", 20_000.0, 6.0, 200),
            point_row("uring-defer", 20_000.0, 4.8, 150),
        ];
        let load = &analysed_loads(&rows)[0];
        assert_eq!(load.held_none(), ["uring-sqpoll"]);
        let text = verdict(load);
        assert!(
            text.starts_with(
                "at 20.0k messages/s (one round; the highest rate every engine held but \
                 uring-sqpoll, which held none), server CPU per message against epoll: \
                 uring-defer undecided (0.80× no interval, 1 round)"
            ),
            "{text}"
        );
        assert!(text.contains("uring-sqpoll none"), "{text}");
        // When most engines held nothing, the machine held them back: no rate is common.
        let mut rows = rows;
        rows.push(point_row("uring", 10_000.0, 12.0, 2500));
        rows.push(point_row("uring-multishot", 10_000.0, 12.0, 2500));
        let load = &analysed_loads(&rows)[0];
        assert!(load.verdict_rate().is_none());
        assert!(verdict(load).starts_with("no offered rate was held by epoll and most engines"));
    }

    /// A point run twice (a single run not held is run once more) is held when one of the two
    /// held it, as the sweep decided.
    #[test]
    fn a_point_held_in_one_of_two_runs_is_held() {
        let mut missed = point_row("uring", 10_000.0, 10.0, 3000);
        missed.client_late_share = Some(0.02);
        let mut again = point_row("uring", 10_000.0, 10.0, 300);
        again.run = 2;
        let load = &analysed_loads(&[missed, again])[0];
        assert_eq!(load.highest_held("uring"), Some(10_000.0));
        assert_eq!(load.engines[0].1[0].runs, 2);
    }

    /// The sweep's section says where its points are and why: both ceilings, the engine that
    /// serves one connection at a time left out of the load, the starved probe left out of
    /// the scale.
    #[test]
    fn the_scale_names_both_ceilings_and_who_set_neither() {
        let mut rows = vec![
            probe_row("blocking", 20_000.0),
            probe_row("epoll", 150_000.0),
            probe_row("uring", 120_000.0),
            probe_row("uring-sqpoll", 500.0),
            ceiling_row("epoll", 16_000.0, true),
            ceiling_row("epoll", 40_000.0, true),
            ceiling_row("epoll", 50_000.0, false),
        ];
        rows.extend(rounds_at(&[("epoll", 6.0), ("uring", 7.0)], 30_000.0, 1));
        let load = &analysed_loads(&rows)[0];
        assert_eq!(load.engines.len(), 2, "the ceiling rows are not points");
        let text = scale_text(load).unwrap();
        assert!(
            text.starts_with(
                "Points at fractions of 40.0k messages/s, the lower of two ceilings: the \
                 slowest engine that serves connections at once, uring, reached 120.0k closed \
                 loop; the load's own open loop held 40.0k against the fastest, epoll (behind \
                 its schedule or the p99 bound at 50.0k)."
            ),
            "{text}"
        );
        assert!(
            text.contains("blocking serves one connection at a time: probed (20.0k/s)"),
            "{text}"
        );
        assert!(
            text.contains("uring-sqpoll's probe (500/s) was under a tenth"),
            "{text}"
        );
    }

    /// An engine that did not hold the rounds point is named with its knee, not as "not
    /// measured there", and the rate is said to be held by epoll and most engines.
    #[test]
    fn an_engine_that_did_not_hold_the_rounds_point_is_named_with_its_knee() {
        let points = [20_000.0, 40_000.0];
        let mut rows = screened(
            &[
                ("epoll", 40_000.0),
                ("uring", 20_000.0),
                ("uring-defer", 40_000.0),
            ],
            &points,
        );
        let mut rounds = rounds_at(&[("epoll", 6.0), ("uring-defer", 4.8)], 40_000.0, 8);
        rounds.retain(|row| row.run > 2);
        rows.extend(rounds);
        let text = verdict(&analysed_loads(&rows)[0]);
        assert!(
            text.starts_with(
                "at 40.0k messages/s (7 rounds; the highest point epoll and most engines held \
                 when screened but uring, which did not hold it (its knee: 20.0k/s)), server \
                 CPU per message against epoll: uring-defer "
            ),
            "{text}"
        );
    }
}
