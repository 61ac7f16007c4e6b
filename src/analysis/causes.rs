//! Why a study came out as it did, from what the kernel counted: each cause is a small rule over
//! one engine's figures (and those of the engine it is compared with) with a threshold, so the
//! report names a measured reason only when one stands out, and says it in the same words
//! whatever the workload. The verdicts and the report's first screen read these.

use crate::analysis::numbers::per_op;
use crate::model::figures::Figures;
use crate::model::study::op_noun;
use crate::model::summary::EngineSummary;
use crate::units::format_count;

/// Whether a cause explains why an engine moved more (`Helps`) or less (`Hurts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Helps,
    Hurts,
}

/// A measured reason, as a clause that follows the engine's name and a colon.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    pub direction: Direction,
    pub text: String,
}

/// An engine's figures beside those of the engine it is compared with.
pub struct Subject<'a> {
    pub figures: &'a Figures,
    pub reference: &'a str,
    pub reference_figures: &'a Figures,
    /// One operation of the workload ("write", "page", "message"); "page" means one fsync each.
    pub noun: &'static str,
}

impl<'a> Subject<'a> {
    /// `engine` of a study of `workload`, beside `reference`.
    pub fn new(
        engine: &'a EngineSummary,
        reference: &'a EngineSummary,
        workload: &str,
    ) -> Subject<'a> {
        Subject {
            figures: &engine.figures,
            reference: &reference.engine,
            reference_figures: &reference.figures,
            noun: op_noun(workload),
        }
    }
}

type Rule = fn(&Subject) -> Option<Cause>;

/// Every rule over what the kernel counted besides syscalls, the most telling first.
const KERNEL_RULES: [Rule; 9] = [
    shared_flushes,
    punted_to_iowq,
    sqpoll_took_a_core,
    local_work_batches,
    task_work_interruptions,
    polls_armed,
    context_switches,
    cqe_overflows,
    short_writes,
];

/// The causes that fire for `subject`: the kernel's, in `KERNEL_RULES` order, then fewer
/// syscalls.
pub fn causes(subject: &Subject) -> Vec<Cause> {
    let mut found = kernel_causes(subject);
    found.extend(fewer_syscalls(subject));
    found
}

/// The causes besides the syscall count (which a verdict's own sentence already gives).
pub fn kernel_causes(subject: &Subject) -> Vec<Cause> {
    KERNEL_RULES
        .iter()
        .filter_map(|rule| rule(subject))
        .collect()
}

/// The first cause in `direction`, if one fires.
pub fn first_cause(subject: &Subject, direction: Direction) -> Option<String> {
    causes(subject)
        .into_iter()
        .find(|cause| cause.direction == direction)
        .map(|cause| cause.text)
}

fn cause(direction: Direction, text: String) -> Option<Cause> {
    Some(Cause { direction, text })
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// Share of requests handed to io-wq workers above which the punts explain the figures: FINDINGS
/// saw buffered 4 KiB writes on ext4 punted all but never, at 16x fewer MB/s.
const PUNTED_SHARE: f64 = 0.5;

/// The share of an engine's requests punted to io-wq (None without requests counted).
fn punted_share(figures: &Figures) -> Option<f64> {
    let (punts, sqes) = (figures.iowq_punts?, figures.sqes_submitted?);
    (sqes > 0.0).then(|| punts / sqes)
}

fn punted_to_iowq(subject: &Subject) -> Option<Cause> {
    let figures = subject.figures;
    let (punts, share) = (figures.iowq_punts?, punted_share(figures)?);
    // Punted as much as the engine it is compared with, the punts explain no difference.
    let theirs = punted_share(subject.reference_figures).unwrap_or(0.0);
    if share < PUNTED_SHARE || theirs >= PUNTED_SHARE {
        return None;
    }
    let mut text = format!(
        "{} of its requests were punted to io-wq workers ({})",
        percent(share.min(1.0)),
        format_count(punts)
    );
    if let (Some(workers), Some(cpu_s)) = (figures.iowq_workers, figures.iowq_cpu_s) {
        let plural = if workers == 1.0 { "" } else { "s" };
        text += &format!(", which ran on {workers:.0} worker{plural} for {cpu_s:.2} s of CPU");
        if let Some(switches) = figures.iowq_ctx_switches {
            text += &format!(" and {} context switches", format_count(switches));
        }
    }
    cause(Direction::Hurts, text)
}

/// Device flushes per fsync at or below which concurrent fsyncs visibly shared flushes (one
/// fsync at a time costs one flush each here: FINDINGS).
const SHARED_FLUSHES_PER_FSYNC: f64 = 0.7;
/// How many times more flushes per fsync the compared engine must have sent for the sharing to
/// explain the difference.
const FEWER_FLUSHES: f64 = 1.5;

fn shared_flushes(subject: &Subject) -> Option<Cause> {
    if subject.noun != "page" {
        return None;
    }
    let per_fsync = subject.figures.per_op(subject.figures.device_flushes)?;
    let theirs = subject
        .reference_figures
        .per_op(subject.reference_figures.device_flushes);
    if per_fsync > SHARED_FLUSHES_PER_FSYNC
        || theirs.is_some_and(|theirs| theirs < FEWER_FLUSHES * per_fsync)
    {
        return None;
    }
    let reference = theirs.map_or(String::new(), |theirs| {
        format!(" vs {} for {}", per_op(theirs), subject.reference)
    });
    cause(
        Direction::Helps,
        format!(
            "fsyncs shared device flushes, {} flushes per fsync{reference}",
            per_op(per_fsync)
        ),
    )
}

/// Share of the window an SQPOLL thread spent on a CPU above which it took a core for itself.
const SQPOLL_BUSY_SHARE: f64 = 0.5;

fn sqpoll_took_a_core(subject: &Subject) -> Option<Cause> {
    let figures = subject.figures;
    let share = figures.sqpoll_cpu_s? / figures.seconds;
    (share >= SQPOLL_BUSY_SHARE).then_some(())?;
    cause(
        Direction::Hurts,
        format!(
            "its SQPOLL thread was on a CPU for {} of the window, a core the rest of the work \
             could not use",
            percent(share)
        ),
    )
}

/// CQEs per DEFER_TASKRUN local-work run at or above which completions visibly ran in batches.
const LOCAL_WORK_BATCH: f64 = 4.0;

fn local_work_batches(subject: &Subject) -> Option<Cause> {
    let figures = subject.figures;
    let (runs, cqes) = (figures.local_work_runs?, figures.cqes_posted?);
    if runs == 0.0 || cqes / runs < LOCAL_WORK_BATCH {
        return None;
    }
    cause(
        Direction::Helps,
        format!(
            "it ran its completions when it asked for them, in {} batches of DEFER_TASKRUN local \
             work ({:.0} CQEs each)",
            format_count(runs),
            cqes / runs
        ),
    )
}

/// Task-work runs per operation at or above which completions interrupted the task often.
const TASK_WORK_PER_OP: f64 = 0.5;

fn task_work_interruptions(subject: &Subject) -> Option<Cause> {
    let figures = subject.figures;
    let per = figures.per_op(figures.task_work_runs)?;
    (per >= TASK_WORK_PER_OP).then_some(())?;
    cause(
        Direction::Hurts,
        format!(
            "its completions ran as task work {} times ({} per {}), each an interruption of \
             its task",
            format_count(figures.task_work_runs?),
            per_op(per),
            subject.noun
        ),
    )
}

/// Polls armed per operation at or above which most requests found their socket not ready.
const POLLS_PER_OP: f64 = 0.5;

fn polls_armed(subject: &Subject) -> Option<Cause> {
    let figures = subject.figures;
    let per = figures.per_op(figures.polls_armed)?;
    (per >= POLLS_PER_OP).then_some(())?;
    cause(
        Direction::Hurts,
        format!(
            "{} polls armed per {}: requests that found no data waited on a poll and were \
             issued again",
            per_op(per),
            subject.noun
        ),
    )
}

/// How many times fewer syscalls per operation than the reference make the difference worth
/// naming.
const FEWER_SYSCALLS: f64 = 4.0;

fn fewer_syscalls(subject: &Subject) -> Option<Cause> {
    let ours = subject.figures.per_op(subject.figures.syscalls)?;
    let theirs = subject
        .reference_figures
        .per_op(subject.reference_figures.syscalls)?;
    (ours * FEWER_SYSCALLS <= theirs).then_some(())?;
    cause(
        Direction::Helps,
        format!(
            "{} syscalls per {} vs {} for {}",
            per_op(ours),
            subject.noun,
            per_op(theirs),
            subject.reference
        ),
    )
}

/// How many times more context switches per operation one side made than the other (and at
/// least how many per operation) make them worth naming: a cost for the engine that made them,
/// a saving for the one that avoided them (epoll's one thread against a thread per connection).
const MORE_SWITCHES: f64 = 2.0;
const SWITCHES_PER_OP: f64 = 0.2;

fn context_switches(subject: &Subject) -> Option<Cause> {
    let (ours, theirs) = (subject.figures, subject.reference_figures);
    let mine = ours.per_op(Some(ours.ctx_switches))?;
    let other = theirs.per_op(Some(theirs.ctx_switches))?;
    let direction = if mine >= SWITCHES_PER_OP && mine >= MORE_SWITCHES * other {
        Direction::Hurts
    } else if other >= SWITCHES_PER_OP && other >= MORE_SWITCHES * mine {
        Direction::Helps
    } else {
        return None;
    };
    cause(
        direction,
        format!(
            "{} context switches per {} vs {} for {}",
            per_op(mine),
            subject.noun,
            per_op(other),
            subject.reference
        ),
    )
}

fn cqe_overflows(subject: &Subject) -> Option<Cause> {
    let overflows = subject.figures.cqe_overflows?;
    (overflows > 0.0).then_some(())?;
    cause(
        Direction::Hurts,
        format!(
            "{} CQEs overflowed the completion queue",
            format_count(overflows)
        ),
    )
}

/// Share of SQEs that were short writes above which the retries are worth naming.
const SHORT_WRITE_SHARE: f64 = 0.01;

fn short_writes(subject: &Subject) -> Option<Cause> {
    let figures = subject.figures;
    let (writes, sqes) = (figures.short_writes?, figures.sqes_submitted?);
    (sqes > 0.0 && writes / sqes >= SHORT_WRITE_SHARE).then_some(())?;
    cause(
        Direction::Hurts,
        format!(
            "{} writes were short and retried in a worker",
            format_count(writes)
        ),
    )
}

/// "The client was saturated (95–97% CPU) for uring, epoll: ...": the load generator, not the
/// server, set the pace for these engines (a load thread was on CPU for most of the window in
/// some run; the share is each engine's median run's).
pub fn client_saturation(engines: &[(&str, &Figures)]) -> Option<String> {
    let saturated: Vec<&(&str, &Figures)> = engines
        .iter()
        .filter(|(_, figures)| figures.client_saturated)
        .collect();
    if saturated.is_empty() {
        return None;
    }
    let shares: Vec<f64> = saturated
        .iter()
        .filter_map(|(_, figures)| figures.client_cpu_share)
        .collect();
    let cpu = match shares.iter().copied().reduce(f64::min) {
        Some(low) => {
            let high = shares.iter().copied().fold(low, f64::max);
            if percent(low) == percent(high) {
                format!(" ({} CPU)", percent(low))
            } else {
                format!(" ({}–{} CPU)", percent(low), percent(high))
            }
        }
        None => String::new(),
    };
    let whom = if saturated.len() == engines.len() {
        "in every engine's runs".to_string()
    } else {
        let names: Vec<&str> = saturated.iter().map(|(name, _)| *name).collect();
        format!("for {}", names.join(", "))
    };
    Some(format!(
        "The client was saturated{cpu} {whom}: those figures are the client's limit, not the \
         server's."
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::study::tests::row;
    use crate::row::Row;

    /// Figures of one hand-made row.
    fn figures(row: &Row) -> Figures {
        Figures::of(&[row])
    }

    fn subject<'a>(ours: &'a Figures, theirs: &'a Figures, noun: &'static str) -> Subject<'a> {
        Subject {
            figures: ours,
            reference: "blocking",
            reference_figures: theirs,
            noun,
        }
    }

    /// An io_uring fs-write row whose 1000 writes were (mostly) punted to io-wq workers.
    pub(crate) fn punted(engine: &str, run: u32, mb_per_sec: f64, punts: u64) -> Row {
        Row {
            sqes_submitted: Some(1000),
            cqes_posted: Some(1000),
            iowq_punts: Some(punts),
            iowq_workers: Some(2),
            iowq_cpu_s: Some(0.9),
            iowq_ctx_switches: Some(2000),
            ..row(engine, run, mb_per_sec, 10)
        }
    }

    #[test]
    fn punts_to_io_wq_are_named_above_half_the_requests() {
        let blocking = figures(&row("blocking", 1, 1000.0, 1000));
        let most = figures(&punted("uring-ring", 1, 100.0, 990));
        let text = first_cause(&subject(&most, &blocking, "write"), Direction::Hurts).unwrap();
        assert_eq!(
            text,
            "99% of its requests were punted to io-wq workers (990), which ran on 2 workers for \
             0.90 s of CPU and 2000 context switches"
        );
        let few = figures(&punted("uring-ring", 1, 100.0, 400));
        assert_eq!(
            first_cause(&subject(&few, &blocking, "write"), Direction::Hurts),
            None
        );
        // Against another engine that punted as much, the punts explain nothing.
        assert_eq!(
            first_cause(&subject(&most, &most, "write"), Direction::Hurts),
            None
        );
    }

    #[test]
    fn fsyncs_sharing_flushes_are_named_for_the_page_cycle_only() {
        let mut blocking = row("blocking", 1, 1.0, 3000);
        blocking.device_flushes = Some(1000);
        let mut link = row("uring-link", 1, 4.0, 20);
        link.device_flushes = Some(200);
        let (theirs, ours) = (figures(&blocking), figures(&link));
        let text = first_cause(&subject(&ours, &theirs, "page"), Direction::Helps).unwrap();
        assert_eq!(
            text,
            "fsyncs shared device flushes, 0.20 flushes per fsync vs 1.0 for blocking"
        );
        assert_eq!(figures(&link).per_op(Some(700.0)), Some(0.7));
        let write = first_cause(&subject(&ours, &theirs, "write"), Direction::Helps).unwrap();
        assert!(write.starts_with("0.020 syscalls per write"), "{write}");
        let mut fixed = row("uring-fixed", 1, 4.5, 20);
        fixed.device_flushes = Some(180);
        let text = first_cause(&subject(&figures(&fixed), &ours, "page"), Direction::Helps);
        assert_eq!(text, None, "as shared as its reference's");
        link.device_flushes = Some(900);
        let one_each = figures(&link);
        let text = first_cause(&subject(&one_each, &theirs, "page"), Direction::Helps).unwrap();
        assert!(!text.contains("flushes"), "{text}");
    }

    #[test]
    fn completion_paths_are_told_apart() {
        let epoll = figures(&row("epoll", 1, 1.0, 2000));
        let mut plain = row("uring", 1, 1.0, 100);
        plain.polls_armed = Some(800);
        plain.task_work_runs = Some(600);
        let causes: Vec<String> = causes(&subject(&figures(&plain), &epoll, "message"))
            .into_iter()
            .map(|cause| cause.text)
            .collect();
        assert_eq!(
            causes,
            [
                "its completions ran as task work 600 times (0.60 per message), each an \
                 interruption of its task",
                "0.80 polls armed per message: requests that found no data waited on a poll and \
                 were issued again",
                "0.10 syscalls per message vs 2.0 for blocking",
            ]
        );
        let mut defer = row("uring-defer", 1, 1.0, 100);
        defer.cqes_posted = Some(2000);
        defer.local_work_runs = Some(100);
        let text = first_cause(
            &subject(&figures(&defer), &epoll, "message"),
            Direction::Helps,
        );
        assert_eq!(
            text.unwrap(),
            "it ran its completions when it asked for them, in 100 batches of DEFER_TASKRUN \
             local work (20 CQEs each)"
        );
        defer.local_work_runs = Some(1000);
        let text = first_cause(
            &subject(&figures(&defer), &epoll, "message"),
            Direction::Helps,
        );
        assert!(!text.unwrap().contains("batches"));
    }

    #[test]
    fn a_busy_poller_overflows_short_writes_and_switches_hurt() {
        let blocking = figures(&row("blocking", 1, 1.0, 1000));
        let mut sqpoll = row("uring-sqpoll", 1, 1.0, 5);
        sqpoll.seconds = 2.0;
        sqpoll.sqpoll_cpu_s = Some(1.9);
        sqpoll.cqe_overflows = Some(3);
        sqpoll.sqes_submitted = Some(1000);
        sqpoll.short_writes = Some(20);
        sqpoll.ctx_switches_voluntary = 500;
        let texts: Vec<String> = causes(&subject(&figures(&sqpoll), &blocking, "write"))
            .into_iter()
            .filter(|cause| cause.direction == Direction::Hurts)
            .map(|cause| cause.text)
            .collect();
        assert_eq!(
            texts,
            [
                "its SQPOLL thread was on a CPU for 95% of the window, a core the rest of the \
                 work could not use",
                "0.50 context switches per write vs 0.0 for blocking",
                "3 CQEs overflowed the completion queue",
                "20 writes were short and retried in a worker",
            ]
        );
        sqpoll.sqpoll_cpu_s = Some(0.5);
        sqpoll.cqe_overflows = Some(0);
        sqpoll.short_writes = Some(1);
        sqpoll.ctx_switches_voluntary = 100;
        let none = causes(&subject(&figures(&sqpoll), &blocking, "write"));
        assert!(
            none.iter().all(|cause| cause.direction == Direction::Helps),
            "{none:?}"
        );
    }

    #[test]
    fn context_switches_avoided_are_named_as_a_help() {
        // A thread per connection switches once per message; one epoll thread almost never.
        let mut blocking = row("blocking", 1, 1.0, 2000);
        blocking.ctx_switches_voluntary = 1000;
        let mut epoll = row("epoll", 1, 6.0, 2000);
        epoll.ctx_switches_voluntary = 5;
        let (theirs, ours) = (figures(&blocking), figures(&epoll));
        assert_eq!(
            first_cause(&subject(&ours, &theirs, "message"), Direction::Helps).unwrap(),
            "0.0050 context switches per message vs 1.0 for blocking"
        );
        blocking.ctx_switches_voluntary = 100;
        let few = figures(&blocking);
        assert_eq!(
            first_cause(&subject(&ours, &few, "message"), Direction::Helps),
            None
        );
    }

    #[test]
    fn a_saturated_client_is_named_with_its_cpu_share() {
        let mut rows = Vec::new();
        for (engine, share, saturated) in [("epoll", 0.97, true), ("uring", 0.5, false)] {
            rows.push(Row {
                seconds: 2.0,
                client_cpu_user_s: Some(share * 2.0 - 0.1),
                client_cpu_sys_s: Some(0.1),
                client_saturated: Some(saturated),
                ..row(engine, 1, 1.0, 1)
            });
        }
        let named: Vec<(&str, Figures)> = rows
            .iter()
            .map(|row| (row.engine.as_str(), figures(row)))
            .collect();
        let refs: Vec<(&str, &Figures)> = named.iter().map(|(n, f)| (*n, f)).collect();
        assert_eq!(
            client_saturation(&refs).unwrap(),
            "The client was saturated (97% CPU) for epoll: those figures are the client's \
             limit, not the server's."
        );
        assert!(client_saturation(&refs[1..]).is_none());
        assert!(client_saturation(&refs[..1])
            .unwrap()
            .contains("in every engine's runs"));
    }

    #[test]
    fn absent_counters_fire_no_rule() {
        // Rows from before the counters existed, or where the kernel refused them.
        let old = figures(&row("uring-ring", 1, 1.0, 1000));
        let blocking = figures(&row("blocking", 1, 1.0, 1000));
        assert!(causes(&subject(&old, &blocking, "page")).is_empty());
    }
}
