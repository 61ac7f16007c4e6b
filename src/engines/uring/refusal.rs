//! Which of a ring's setup flags the kernel lacks. io_uring_setup answers EINVAL for any flag it
//! does not know, so a refused ring does not say which; ringside asks again with the ring's
//! flags added one at a time in the order Linux added them (DEFER_TASKRUN needs SINGLE_ISSUER,
//! which came before it), and names the first one refused: on 6.1 a `uring-no-sqarray` ring is
//! refused for NO_SQARRAY (6.6) alone, not for the three older flags it also asks for.

use std::io;

use super::ring::{on_trial_thread, RingSetup};
use crate::engines::needs::Kernel;

/// A setup flag an engine may ask for: its name after `IORING_SETUP_`, the Linux that added it,
/// and its field in `RingSetup`. SQPOLL (5.1) is left in every trial: its refusals are EPERM.
struct SetupFlag {
    name: &'static str,
    since: Kernel,
    field: fn(&mut RingSetup) -> &mut bool,
}

/// The flags, oldest first.
const FLAGS_BY_AGE: [SetupFlag; 5] = [
    SetupFlag {
        name: "IOPOLL",
        since: (5, 1),
        field: |setup| &mut setup.iopoll,
    },
    SetupFlag {
        name: "COOP_TASKRUN",
        since: (5, 19),
        field: |setup| &mut setup.coop_taskrun,
    },
    SetupFlag {
        name: "SINGLE_ISSUER",
        since: (6, 0),
        field: |setup| &mut setup.single_issuer,
    },
    SetupFlag {
        name: "DEFER_TASKRUN",
        since: (6, 1),
        field: |setup| &mut setup.defer_taskrun,
    },
    SetupFlag {
        name: "NO_SQARRAY",
        since: (6, 6),
        field: |setup| &mut setup.no_sqarray,
    },
];

/// One trial: a flag added to the older ones before it, and whether the kernel made that ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trial {
    pub flag: &'static str,
    pub since: Kernel,
    pub accepted: bool,
}

/// Makes small rings with `setup`'s flags added oldest first, until the kernel refuses one, on a
/// thread of its own (a trial ring must not size the caller's io-wq pool).
pub fn trials(setup: &RingSetup) -> Vec<Trial> {
    let mut wanted = setup.clone();
    let mut ring = RingSetup {
        sqpoll_idle_ms: setup.sqpoll_idle_ms,
        ..RingSetup::with_entries(8)
    };
    let mut trials = Vec::new();
    on_trial_thread(|| {
        for flag in &FLAGS_BY_AGE {
            if !*(flag.field)(&mut wanted) {
                continue;
            }
            *(flag.field)(&mut ring) = true;
            let accepted = ring.build_plain().is_ok();
            trials.push(Trial {
                flag: flag.name,
                since: flag.since,
                accepted,
            });
            if !accepted {
                break;
            }
        }
    });
    trials
}

/// Why the kernel refused a ring with `error` (EINVAL), from the trials: the first flag it
/// refused, or, when it took them all, that the flags are not the cause.
pub fn reason(trials: &[Trial], error: &io::Error, entries: u32) -> String {
    match trials.iter().find(|trial| !trial.accepted) {
        Some(Trial {
            flag,
            since: (major, minor),
            ..
        }) => {
            let older: Vec<&str> = trials
                .iter()
                .take_while(|trial| trial.accepted)
                .map(|trial| trial.flag)
                .collect();
            let took = if older.is_empty() {
                String::new()
            } else {
                format!(", after it took {}", older.join(", "))
            };
            format!(
                "this kernel lacks IORING_SETUP_{flag} (Linux {major}.{minor}): io_uring_setup \
                 refused it ({error}){took}"
            )
        }
        None => {
            let flags: Vec<&str> = trials.iter().map(|trial| trial.flag).collect();
            let flags = if flags.is_empty() {
                "none of the newer setup flags".to_string()
            } else {
                flags.join(", ")
            };
            format!(
                "io_uring_setup refused this ring ({error}) although this kernel takes its \
                 setup flags ({flags}) on a small ring; its size ({entries} entries) or another \
                 parameter is what was refused"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(flag: &'static str, since: Kernel, accepted: bool) -> Trial {
        Trial {
            flag,
            since,
            accepted,
        }
    }

    #[test]
    fn a_refused_ring_names_the_one_flag_the_kernel_lacks() {
        // What Debian 12's 6.1 answers for uring-no-sqarray's ring.
        let on_6_1 = [
            trial("COOP_TASKRUN", (5, 19), true),
            trial("SINGLE_ISSUER", (6, 0), true),
            trial("DEFER_TASKRUN", (6, 1), true),
            trial("NO_SQARRAY", (6, 6), false),
        ];
        let einval = io::Error::from_raw_os_error(libc::EINVAL);
        let text = reason(&on_6_1, &einval, 8);
        assert!(
            text.starts_with("this kernel lacks IORING_SETUP_NO_SQARRAY (Linux 6.6): "),
            "{text}"
        );
        assert!(
            text.ends_with("after it took COOP_TASKRUN, SINGLE_ISSUER, DEFER_TASKRUN"),
            "{text}"
        );
        // On 5.10 the oldest missing flag is the one named.
        let on_5_10 = [trial("COOP_TASKRUN", (5, 19), false)];
        let text = reason(&on_5_10, &einval, 8);
        assert!(text.starts_with("this kernel lacks IORING_SETUP_COOP_TASKRUN (Linux 5.19)"));
        assert!(!text.contains("DEFER_TASKRUN"), "{text}");
        let all_taken = [trial("IOPOLL", (5, 1), true)];
        assert!(reason(&all_taken, &einval, 65536).contains("its size (65536 entries)"));
    }
}
