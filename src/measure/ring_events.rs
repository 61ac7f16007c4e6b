//! What io_uring did inside the kernel over a section, counted on its own tracepoints
//! (`io_uring:*`, include/trace/events/io_uring.h): SQEs submitted, CQEs posted, requests punted
//! to io-wq workers, polls armed, task-work and DEFER_TASKRUN local-work runs, CQ overflows and
//! short writes. These are the "why" behind a row's figures: a buffered write punted to a worker
//! costs a context switch there, a recv that found no data arms a poll and completes later.
//!
//! The counters sit on the ring's task and inherit to the io-wq and SQPOLL threads it starts
//! later, where punted work completes and SQPOLL submits; a server measured from outside gets
//! them on every thread it has.

use super::perf::{tracepoint_ids, PerfCounter};

/// One io_uring tracepoint ringside counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingEvent {
    /// `io_uring_submit_req`: an SQE the kernel took off the submission queue.
    SqeSubmitted,
    /// `io_uring_complete`: a CQE posted (a multishot request posts many).
    CqePosted,
    /// `io_uring_queue_async_work`: a request handed to an io-wq worker thread because it could
    /// not complete without blocking (buffered writes on ext4, fsync, linked work).
    IowqPunt,
    /// `io_uring_poll_arm`: a request that could not complete at once (no data yet) waiting on a
    /// poll of its file (FAST_POLL), to be retried when it is ready.
    PollArmed,
    /// `io_uring_task_work_run`: a run of queued task work (completions) in the task's context
    /// that found work (an SQPOLL thread also looks for some on every loop, mostly in vain).
    TaskWorkRun,
    /// `io_uring_local_work_run`: a run of DEFER_TASKRUN local work, when the task asked for it,
    /// that found work.
    LocalWorkRun,
    /// `io_uring_cqe_overflow`: a CQE that did not fit in the completion queue.
    CqOverflow,
    /// `io_uring_short_write`: a write that wrote less than asked and was retried in a worker.
    ShortWrite,
}

impl RingEvent {
    pub const ALL: [RingEvent; 8] = [
        RingEvent::SqeSubmitted,
        RingEvent::CqePosted,
        RingEvent::IowqPunt,
        RingEvent::PollArmed,
        RingEvent::TaskWorkRun,
        RingEvent::LocalWorkRun,
        RingEvent::CqOverflow,
        RingEvent::ShortWrite,
    ];

    /// The tracepoint under tracefs' `events/`.
    pub fn tracepoint(self) -> &'static str {
        match self {
            RingEvent::SqeSubmitted => "io_uring/io_uring_submit_req",
            RingEvent::CqePosted => "io_uring/io_uring_complete",
            RingEvent::IowqPunt => "io_uring/io_uring_queue_async_work",
            RingEvent::PollArmed => "io_uring/io_uring_poll_arm",
            RingEvent::TaskWorkRun => "io_uring/io_uring_task_work_run",
            RingEvent::LocalWorkRun => "io_uring/io_uring_local_work_run",
            RingEvent::CqOverflow => "io_uring/io_uring_cqe_overflow",
            RingEvent::ShortWrite => "io_uring/io_uring_short_write",
        }
    }
}

impl RingEvent {
    /// The tracefs filter a counter of the event applies: the runs that found no work are not
    /// runs of work.
    fn filter(self) -> Option<&'static str> {
        match self {
            RingEvent::TaskWorkRun | RingEvent::LocalWorkRun => Some("count > 0"),
            _ => None,
        }
    }

    fn open(self, id: u64, tid: i32) -> std::io::Result<PerfCounter> {
        let mut counter = PerfCounter::open_tracepoint(id, tid)?;
        if let Some(filter) = self.filter() {
            counter.set_filter(filter)?;
        }
        Ok(counter)
    }
}

/// The counts of every `RingEvent` over a section; None for a tracepoint this kernel lacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingEvents {
    counts: [Option<u64>; RingEvent::ALL.len()],
}

impl RingEvents {
    pub fn get(&self, event: RingEvent) -> Option<u64> {
        self.counts[event as usize]
    }

    /// Counts as the kernel would have given them, for tests and hand-made rows.
    pub fn with(mut self, event: RingEvent, count: u64) -> RingEvents {
        self.counts[event as usize] = Some(count);
        self
    }
}

/// Counters of every `RingEvent` on a set of threads (and the threads they start later).
pub(super) struct RingEventCounter {
    /// Per thread, one counter per event (None where this kernel lacks the tracepoint).
    threads: Vec<Vec<Option<PerfCounter>>>,
}

impl RingEventCounter {
    /// Opens counters on threads `tids` (0: the calling thread). The error says why the
    /// kernel refused them; the second value names tracepoints this kernel lacks.
    pub(super) fn open(tids: &[i32]) -> Result<(RingEventCounter, Vec<&'static str>), String> {
        let names = RingEvent::ALL.map(RingEvent::tracepoint);
        let ids = tracepoint_ids(&names)?;
        let missing = names
            .iter()
            .zip(&ids)
            .filter(|(_, id)| id.is_none())
            .map(|(name, _)| *name)
            .collect();
        let mut threads = Vec::with_capacity(tids.len());
        for &tid in tids {
            let counters = RingEvent::ALL
                .iter()
                .zip(&ids)
                .map(|(event, id)| id.map(|id| event.open(id, tid)).transpose())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| {
                    format!(
                        "perf_event_open on the io_uring tracepoints failed ({error}); run as \
                         root, lower /proc/sys/kernel/perf_event_paranoid or raise the open-files \
                         limit"
                    )
                })?;
            threads.push(counters);
        }
        Ok((RingEventCounter { threads }, missing))
    }

    pub(super) fn start(&mut self) {
        for counter in self.threads.iter_mut().flatten().flatten() {
            counter.start();
        }
    }

    pub(super) fn stop(&mut self) -> RingEvents {
        let mut events = RingEvents::default();
        for thread in &mut self.threads {
            for (total, counter) in events.counts.iter_mut().zip(thread) {
                if let Some(counter) = counter {
                    *total = Some(total.unwrap_or(0) + counter.stop());
                }
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the counters see a ring's work on the calling thread. Method: 64 NOPs submitted in
    /// one batch on a fresh ring; the kernel must count 64 SQEs and 64 CQEs (a kernel that
    /// refuses the counters or io_uring skips the test).
    #[test]
    fn a_batch_of_nops_is_counted_sqe_by_sqe() {
        let Ok((mut counter, _)) = RingEventCounter::open(&[0]) else {
            eprintln!("skipped: the kernel refused the io_uring tracepoint counters here");
            return;
        };
        let Ok(mut ring) = io_uring::IoUring::new(64) else {
            eprintln!("skipped: no io_uring here");
            return;
        };
        counter.start();
        for index in 0..64 {
            let nop = io_uring::opcode::Nop::new().build().user_data(index);
            // SAFETY: a NOP points at no memory.
            unsafe { ring.submission().push(&nop) }.expect("64 SQEs fit a 64-entry ring");
        }
        ring.submit_and_wait(64).unwrap();
        let events = counter.stop();
        assert_eq!(events.get(RingEvent::SqeSubmitted), Some(64));
        assert_eq!(events.get(RingEvent::CqePosted), Some(64));
        assert_eq!(events.get(RingEvent::IowqPunt), Some(0));
        assert_eq!(events.get(RingEvent::CqOverflow), Some(0));
    }
}
