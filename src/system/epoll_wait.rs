//! Every epoll wait in ringside (the epoll server, the load generator) goes through here, so
//! that it runs on every kernel from 5.10 on with its timeouts kept to the microsecond.
//!
//! `epoll_pwait2` (Linux 5.11) takes a nanosecond timeout; `epoll_wait` rounds one up to the
//! next millisecond. Where the kernel lacks `epoll_pwait2` (ENOSYS; EPERM from a seccomp
//! filter that predates it), a wait with a sub-millisecond part arms a one-shot timerfd in the
//! set for the exact time instead, and `epoll_wait`'s rounded-up timeout is only a bound
//! behind it. A rounded wait would send an open loop's requests up to a millisecond late and
//! in bursts, which is what its schedule exists to avoid. Which call the kernel has is found
//! once per process; `RINGSIDE_NO_EPOLL_PWAIT2=1` takes the fallback on any kernel (tests).

use std::cell::Cell;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::OnceLock;
use std::time::Duration;

use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::io::Errno;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};

/// Switches `epoll_pwait2` off for this process (any value but `0`).
pub const NO_PWAIT2_VAR: &str = "RINGSIDE_NO_EPOLL_PWAIT2";

/// The token of the fallback's timer in an epoll set: callers keep it free (their tokens are
/// slots, connection indexes and the few constants just below `u64::MAX`).
pub const TIMER_TOKEN: u64 = u64::MAX - 16;

const NANOS_PER_MILLI: u32 = 1_000_000;

/// How this process waits on epoll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitCall {
    /// `epoll_pwait2`: the timeout as given, to the nanosecond.
    Pwait2,
    /// `epoll_wait`, with a timerfd for the sub-millisecond part of a timeout.
    WaitWithTimer,
}

impl WaitCall {
    /// The call this kernel has (found once per process).
    pub fn here() -> WaitCall {
        static CALL: OnceLock<WaitCall> = OnceLock::new();
        *CALL.get_or_init(|| {
            let off = std::env::var_os(NO_PWAIT2_VAR).is_some_and(|value| value != "0");
            match off || !pwait2_exists() {
                true => WaitCall::WaitWithTimer,
                false => WaitCall::Pwait2,
            }
        })
    }

    /// What the probe says about it.
    pub fn describe(self) -> String {
        match self {
            WaitCall::Pwait2 => "epoll_pwait2 (timeouts to the nanosecond)".to_string(),
            WaitCall::WaitWithTimer => {
                let why = match std::env::var_os(NO_PWAIT2_VAR).is_some_and(|v| v != "0") {
                    true => format!("epoll_pwait2 switched off by {NO_PWAIT2_VAR}"),
                    false => "no epoll_pwait2 before Linux 5.11".to_string(),
                };
                format!("epoll_wait, a timerfd for sub-millisecond timeouts ({why})")
            }
        }
    }
}

/// Whether `epoll_pwait2` runs here: one zero-timeout wait on an empty set of its own.
fn pwait2_exists() -> bool {
    let Ok(epoll) = epoll::create(CreateFlags::CLOEXEC) else {
        return false;
    };
    let mut event = [empty_event()];
    !matches!(
        pwait2(&epoll, &mut event, Some(&Timespec::default())),
        Err(Errno::NOSYS | Errno::PERM)
    )
}

/// An event slot to fill a buffer with.
pub fn empty_event() -> Event {
    Event {
        flags: EventFlags::empty(),
        data: EventData::new_u64(0),
    }
}

/// The waits on one epoll set: holds the fallback's timer, registered in that set.
pub struct EpollWait {
    call: WaitCall,
    timer: Option<OwnedFd>,
    /// Syscalls the waits made since `take_syscalls` last read them: the fallback's wait is
    /// two (the timer armed, then `epoll_wait`) whenever its timeout has a sub-millisecond part.
    syscalls: Cell<u64>,
}

impl EpollWait {
    /// The waits on `epoll` with the call this kernel has.
    pub fn new(epoll: &impl AsFd) -> rustix::io::Result<EpollWait> {
        EpollWait::with_call(epoll, WaitCall::here())
    }

    /// The waits on `epoll` with `call`; the fallback adds its timer to the set, edge-triggered
    /// so that a timer that fired is reported once and needs no read.
    pub fn with_call(epoll: &impl AsFd, call: WaitCall) -> rustix::io::Result<EpollWait> {
        let timer = match call {
            WaitCall::Pwait2 => None,
            WaitCall::WaitWithTimer => {
                let flags = TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK;
                let timer = timerfd_create(TimerfdClockId::Monotonic, flags)?;
                let data = EventData::new_u64(TIMER_TOKEN);
                epoll::add(epoll, &timer, data, EventFlags::IN | EventFlags::ET)?;
                Some(timer)
            }
        };
        Ok(EpollWait {
            call,
            timer,
            syscalls: Cell::new(0),
        })
    }

    /// The syscalls the waits made since the last call (a server counts them as its own).
    pub fn take_syscalls(&self) -> u64 {
        self.syscalls.take()
    }

    fn made_syscall(&self) {
        self.syscalls.set(self.syscalls.get() + 1);
    }

    /// Waits on `epoll` (the set this was made for) for at most `timeout` (None: until an event)
    /// and returns how many of `events` it filled. The fallback's timer is never among them: its
    /// expiry is a timeout.
    pub fn wait(
        &self,
        epoll: &impl AsFd,
        events: &mut [Event],
        timeout: Option<Duration>,
    ) -> rustix::io::Result<usize> {
        let timespec = match timeout {
            Some(timeout) => Some(Timespec::try_from(timeout).map_err(|_| Errno::INVAL)?),
            None => None,
        };
        let Some(timer) = &self.timer else {
            self.made_syscall();
            return pwait2(epoll, events, timespec.as_ref());
        };
        debug_assert_eq!(self.call, WaitCall::WaitWithTimer);
        // Whole milliseconds (or none) wait exactly with epoll_wait's own timeout.
        let sub_ms = timeout.is_some_and(|t| t.subsec_nanos() % NANOS_PER_MILLI != 0);
        if let (true, Some(exact)) = (sub_ms, timespec) {
            let once = Itimerspec {
                it_interval: Timespec::default(),
                it_value: exact,
            };
            self.made_syscall();
            timerfd_settime(timer, TimerfdTimerFlags::empty(), &once)?;
        }
        // rustix's epoll_wait rounds the timeout up to the millisecond: the timer comes first.
        // A timer armed by an earlier wait may fire in any later one: it is never an event.
        self.made_syscall();
        let ready = epoll::wait(epoll, &mut *events, timespec.as_ref())?;
        Ok(without_timer(&mut events[..ready]))
    }
}

/// Removes the timer's event from `ready` (order does not matter) and returns what is left.
fn without_timer(ready: &mut [Event]) -> usize {
    let mut count = ready.len();
    if let Some(index) = ready.iter().position(|e| e.data.u64() == TIMER_TOKEN) {
        ready.swap(index, count - 1);
        count -= 1;
    }
    debug_assert!(ready[..count].iter().all(|e| e.data.u64() != TIMER_TOKEN));
    count
}

/// `epoll_pwait2` with no signal mask, as a raw syscall: rustix calls it only for timeouts
/// beyond `epoll_wait`'s range, and glibc wraps it only from 2.35.
fn pwait2(
    epoll: &impl AsFd,
    events: &mut [Event],
    timeout: Option<&Timespec>,
) -> rustix::io::Result<usize> {
    let timeout_ptr = timeout.map_or(std::ptr::null(), |t| t as *const Timespec);
    let capacity = libc::c_int::try_from(events.len()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `events` is valid for `capacity` writes and rustix's `Event` has the kernel's
    // `epoll_event` layout; rustix's `Timespec` is the kernel's 64-bit `__kernel_timespec`,
    // borrowed for the call; a null signal mask leaves the mask alone.
    let ready = unsafe {
        libc::syscall(
            libc::SYS_epoll_pwait2,
            epoll.as_fd().as_raw_fd(),
            events.as_mut_ptr(),
            capacity,
            timeout_ptr,
            std::ptr::null::<libc::sigset_t>(),
            0usize,
        )
    };
    match usize::try_from(ready) {
        Ok(ready) => Ok(ready),
        Err(_) => Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The shortest time `call` takes to wait `timeout` on an empty set, over `waits` waits
    /// (each at least `timeout`). The shortest, because a busy machine only delays wake-ups:
    /// one wait under the next whole millisecond shows that the timeout was not rounded up.
    fn shortest_wait(call: WaitCall, timeout: Duration, waits: usize) -> Duration {
        let epoll = epoll::create(CreateFlags::CLOEXEC).unwrap();
        let waiter = EpollWait::with_call(&epoll, call).unwrap();
        let mut events = [empty_event(); 4];
        (0..waits)
            .map(|_| {
                let start = Instant::now();
                let ready = waiter.wait(&epoll, &mut events, Some(timeout)).unwrap();
                let took = start.elapsed();
                assert_eq!(ready, 0, "an empty set reports nothing, the timer included");
                assert!(took >= timeout, "woke after {took:?} of {timeout:?}");
                took
            })
            .min()
            .expect("some waits")
    }

    #[test]
    fn the_fallback_keeps_a_sub_millisecond_timeout() {
        // epoll_wait alone would sleep a whole millisecond (rounded up) for 300 µs.
        let shortest = shortest_wait(WaitCall::WaitWithTimer, Duration::from_micros(300), 21);
        assert!(
            shortest < Duration::from_micros(900),
            "shortest {shortest:?}"
        );
    }

    #[test]
    fn epoll_wait_alone_rounds_up_to_the_millisecond() {
        // What the timer is for: without it, 300 µs would never be less than 1 ms.
        let epoll = epoll::create(CreateFlags::CLOEXEC).unwrap();
        let mut events = [empty_event(); 4];
        let timeout = Timespec::try_from(Duration::from_micros(300)).unwrap();
        let start = Instant::now();
        assert_eq!(epoll::wait(&epoll, &mut events, Some(&timeout)).unwrap(), 0);
        assert!(
            start.elapsed() >= Duration::from_millis(1),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn the_fallback_keeps_a_multi_millisecond_timeout() {
        let whole = shortest_wait(WaitCall::WaitWithTimer, Duration::from_millis(4), 7);
        assert!(whole < Duration::from_micros(4_800), "shortest {whole:?}");
        // 2.4 ms would be 3 ms rounded up.
        let part = shortest_wait(WaitCall::WaitWithTimer, Duration::from_micros(2_400), 7);
        assert!(part < Duration::from_micros(2_900), "shortest {part:?}");
    }

    #[test]
    fn the_call_here_waits_as_asked() {
        let shortest = shortest_wait(WaitCall::here(), Duration::from_micros(300), 21);
        assert!(
            shortest < Duration::from_micros(900),
            "shortest {shortest:?}"
        );
    }

    #[test]
    fn a_timer_left_armed_by_an_earlier_wait_is_never_an_event() {
        let epoll = epoll::create(CreateFlags::CLOEXEC).unwrap();
        let waiter = EpollWait::with_call(&epoll, WaitCall::WaitWithTimer).unwrap();
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        epoll::add(&epoll, &reader, EventData::new_u64(7), EventFlags::IN).unwrap();
        rustix::io::write(&writer, b"x").unwrap();
        let mut events = [empty_event(); 4];
        // Woken by the pipe at once, the 500 µs timer stays armed ...
        let sub_ms = Some(Duration::from_micros(500));
        assert_eq!(waiter.wait(&epoll, &mut events, sub_ms).unwrap(), 1);
        rustix::io::read(&reader, &mut [0u8; 1]).unwrap();
        // ... and fires inside a whole-millisecond wait, which reports nothing.
        let whole_ms = Some(Duration::from_millis(5));
        assert_eq!(waiter.wait(&epoll, &mut events, whole_ms).unwrap(), 0);
    }

    /// What a server counts as its own syscalls: the fallback's wait with a sub-millisecond
    /// part arms the timer too.
    #[test]
    fn the_waits_count_the_syscalls_they_make() {
        let epoll = epoll::create(CreateFlags::CLOEXEC).unwrap();
        let mut events = [empty_event(); 4];
        let fallback = EpollWait::with_call(&epoll, WaitCall::WaitWithTimer).unwrap();
        let sub_ms = Some(Duration::from_micros(200));
        let whole_ms = Some(Duration::from_millis(1));
        for (timeout, syscalls) in [(sub_ms, 2), (whole_ms, 1), (Some(Duration::ZERO), 1)] {
            fallback.wait(&epoll, &mut events, timeout).unwrap();
            assert_eq!(fallback.take_syscalls(), syscalls, "{timeout:?}");
        }
        let pwait2 = EpollWait::with_call(&epoll, WaitCall::Pwait2).unwrap();
        if pwait2_exists() {
            pwait2.wait(&epoll, &mut events, sub_ms).unwrap();
            assert_eq!(pwait2.take_syscalls(), 1);
        }
    }

    #[test]
    fn events_still_arrive_beside_the_timer() {
        let epoll = epoll::create(CreateFlags::CLOEXEC).unwrap();
        let waiter = EpollWait::with_call(&epoll, WaitCall::WaitWithTimer).unwrap();
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        epoll::add(&epoll, &reader, EventData::new_u64(7), EventFlags::IN).unwrap();
        rustix::io::write(&writer, b"x").unwrap();
        let mut events = [empty_event(); 4];
        let ready = waiter
            .wait(&epoll, &mut events, Some(Duration::from_micros(200)))
            .unwrap();
        assert_eq!(ready, 1);
        assert_eq!(events[0].data.u64(), 7);
    }
}
