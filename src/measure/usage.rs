//! CPU time and context switches: of this process or thread (getrusage, io_uring's io-wq workers
//! and SQPOLL thread included, as threads of the process), of another process (/proc, and the
//! scheduler's clock of its threads), and of one core (softirq and steal, /proc/stat).

use std::fs;
use std::io;

use super::syscalls::task_ids;

/// CPU time and context switches of the whole process (all threads, io_uring workers included).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub ctx_switches_voluntary: u64,
    pub ctx_switches_involuntary: u64,
    /// CPU time of another process by the scheduler's clock (`of_pid`), in ns resolution: what
    /// per-message figures of a few µs need, where `cpu_user_s` and `cpu_sys_s` move by whole
    /// clock ticks (4–10 ms). None where the clock could not be read (the ticks stand in).
    pub cpu_sched_s: Option<f64>,
}

impl Usage {
    pub fn of_process() -> Usage {
        Self::read(libc::RUSAGE_SELF)
    }

    /// Usage of the calling thread alone (a load generator thread measuring its own saturation).
    pub fn of_thread() -> Usage {
        Self::read(libc::RUSAGE_THREAD)
    }

    fn read(who: libc::c_int) -> Usage {
        // SAFETY: getrusage fills the zeroed struct it is given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut usage);
            usage
        };
        let seconds = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        Usage {
            cpu_user_s: seconds(usage.ru_utime),
            cpu_sys_s: seconds(usage.ru_stime),
            ctx_switches_voluntary: usage.ru_nvcsw as u64,
            ctx_switches_involuntary: usage.ru_nivcsw as u64,
            cpu_sched_s: None,
        }
    }

    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cpu_user_s: (self.cpu_user_s - earlier.cpu_user_s).max(0.0),
            cpu_sys_s: (self.cpu_sys_s - earlier.cpu_sys_s).max(0.0),
            // Saturating: summed over living threads (`of_pid`), a count can shrink when a
            // thread exits.
            ctx_switches_voluntary: self
                .ctx_switches_voluntary
                .saturating_sub(earlier.ctx_switches_voluntary),
            ctx_switches_involuntary: self
                .ctx_switches_involuntary
                .saturating_sub(earlier.ctx_switches_involuntary),
            cpu_sched_s: self
                .cpu_sched_s
                .zip(earlier.cpu_sched_s)
                .map(|(now, then)| (now - then).max(0.0)),
        }
    }
}

impl Usage {
    /// CPU time of every thread of process `pid`, living or exited: user and system from
    /// `/proc/PID/stat` (in clock ticks, so 4–10 ms resolution), their sum from the scheduler's
    /// clock (`process_cpu_ns`); and the context switches of its living threads
    /// (`/proc/PID/task/*/status`).
    pub fn of_pid(pid: i32) -> io::Result<Usage> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // Fields after the command name, which is in parentheses and may contain spaces.
        let after_name = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or_else(|| io::Error::other("malformed /proc/PID/stat"))?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat(5); field 3 is the first after the name.
        let ticks = |index: usize| -> io::Result<f64> {
            fields
                .get(index - 3)
                .and_then(|text| text.parse::<u64>().ok())
                .map(|ticks| ticks as f64 / clock_ticks_per_sec())
                .ok_or_else(|| io::Error::other("malformed /proc/PID/stat"))
        };
        let mut usage = Usage {
            cpu_user_s: ticks(14)?,
            cpu_sys_s: ticks(15)?,
            cpu_sched_s: process_cpu_ns(pid).map(|ns| ns as f64 / 1e9),
            ..Usage::default()
        };
        for tid in task_ids(pid)? {
            // A thread that exited meanwhile has no status.
            if let Some((voluntary, involuntary)) = thread_ctx_switches(pid, tid) {
                usage.ctx_switches_voluntary += voluntary;
                usage.ctx_switches_involuntary += involuntary;
            }
        }
        Ok(usage)
    }
}

impl Usage {
    pub fn plus(&self, other: &Usage) -> Usage {
        Usage {
            cpu_user_s: self.cpu_user_s + other.cpu_user_s,
            cpu_sys_s: self.cpu_sys_s + other.cpu_sys_s,
            ctx_switches_voluntary: self.ctx_switches_voluntary + other.ctx_switches_voluntary,
            ctx_switches_involuntary: self.ctx_switches_involuntary
                + other.ctx_switches_involuntary,
            cpu_sched_s: self
                .cpu_sched_s
                .zip(other.cpu_sched_s)
                .map(|(one, two)| one + two),
        }
    }
}

/// Nanoseconds every thread of process `pid` has run, living or exited, by the scheduler's
/// clock (its `sum_exec_runtime`, the clock `/proc/PID/task/*/schedstat` starts with): the
/// process's CPU clock, which any user may read for any process. Summing the threads'
/// schedstat instead would lose the threads that exit inside a window (io-wq workers that
/// idled out, a thread per connection that closed). None when the process is gone.
fn process_cpu_ns(pid: i32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: clock_getcpuclockid writes the clock id it is given a pointer to; clock_gettime
    // fills the timespec.
    let time = unsafe {
        if libc::clock_getcpuclockid(pid, &mut clock) != 0 {
            return None;
        }
        let mut time: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(clock, &mut time) != 0 {
            return None;
        }
        time
    };
    Some(time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64)
}

/// Every process in /proc with the fields of its stat after the command name (which may
/// contain spaces): state, parent, process group, ...
fn processes() -> impl Iterator<Item = (i32, Vec<String>)> {
    let entries = fs::read_dir("/proc").into_iter().flatten().flatten();
    entries.filter_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
        // None when it exited meanwhile.
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        Some((pid, rest.split_whitespace().map(str::to_string).collect()))
    })
}

/// Process `pid` and its descendants, `pid` first (from every process's parent in /proc).
pub fn process_tree(pid: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = processes()
        .filter_map(|(child, fields)| Some((child, fields.get(1)?.parse().ok()?)))
        .collect();
    let mut tree = vec![pid];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        tree.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        next += 1;
    }
    tree
}

/// Whether process group `group` has a process that has not exited: one that exited and waits
/// to be reaped (a zombie, which holds no CPU, memory or socket) does not count. Its reaper may
/// be an init that reaps once a second: a contender's shell forks the server, and the server
/// is reparented when the shell dies.
pub fn group_has_live_process(group: i32) -> bool {
    processes().any(|(_, fields)| {
        fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(group)
            && fields
                .first()
                .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Peak resident memory of process `pid` (`VmHWM` in /proc/PID/status), if it still runs.
pub fn rss_peak_bytes(pid: i32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The voluntary and involuntary context switches of thread `tid` of process `pid` so far.
pub(super) fn thread_ctx_switches(pid: i32, tid: i32) -> Option<(u64, u64)> {
    let status = fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    let (mut voluntary, mut involuntary) = (0, 0);
    for line in status.lines() {
        let value = |prefix: &str| {
            line.strip_prefix(prefix)
                .and_then(|rest| rest.trim().parse::<u64>().ok())
        };
        if let Some(count) = value("voluntary_ctxt_switches:") {
            voluntary = count;
        } else if let Some(count) = value("nonvoluntary_ctxt_switches:") {
            involuntary = count;
        }
    }
    Some((voluntary, involuntary))
}

/// `/proc/stat`'s tick (USER_HZ): the resolution of its times.
pub fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// Time one CPU spent serving softirqs (the kernel's TCP receive work runs there) and stolen by
/// the hypervisor, from `/proc/stat`. Without CONFIG_IRQ_TIME_ACCOUNTING (as on this VM) the
/// softirq figure is sampled by the tick, so it is a share, not an exact time; steal says how
/// much of the window another guest had the core. The NET_RX softirqs the CPU ran are exact
/// (`/proc/softirqs`); on loopback a sender's CPU runs the receive side of what it sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoreTimes {
    pub softirq_s: f64,
    pub steal_s: f64,
    /// None where /proc/softirqs has no NET_RX line for the CPU.
    pub net_rx_softirqs: Option<u64>,
}

impl CoreTimes {
    pub fn read(cpu: usize) -> io::Result<CoreTimes> {
        let stat = fs::read_to_string("/proc/stat")?;
        let prefix = format!("cpu{cpu} ");
        let line = stat
            .lines()
            .find(|line| line.starts_with(&prefix))
            .ok_or_else(|| io::Error::other(format!("/proc/stat has no line for CPU {cpu}")))?;
        // user nice system idle iowait irq softirq steal ..., in USER_HZ ticks.
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        let seconds =
            |index: usize| fields.get(index).copied().unwrap_or(0) as f64 / clock_ticks_per_sec();
        Ok(CoreTimes {
            softirq_s: seconds(6),
            steal_s: seconds(7),
            net_rx_softirqs: net_rx_softirqs(cpu),
        })
    }

    pub fn since(&self, earlier: &CoreTimes) -> CoreTimes {
        let net_rx = self.net_rx_softirqs.zip(earlier.net_rx_softirqs);
        CoreTimes {
            softirq_s: (self.softirq_s - earlier.softirq_s).max(0.0),
            steal_s: (self.steal_s - earlier.steal_s).max(0.0),
            net_rx_softirqs: net_rx.map(|(now, then)| now.saturating_sub(then)),
        }
    }
}

/// What the whole machine's CPUs spent running tasks (user, nice and system time of every CPU:
/// `/proc/stat`'s first line, in ticks), and how many CPUs it has. Taking the measured
/// processes' own CPU time off a section's share of it leaves what other work took
/// (`foreign_cpu_share`): interrupts and softirqs are left out, for on loopback they are mostly
/// the measured traffic's, and steal is the host's, recorded apart.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineCpu {
    pub busy_s: f64,
    pub cpus: usize,
}

impl MachineCpu {
    pub fn read() -> io::Result<MachineCpu> {
        let stat = fs::read_to_string("/proc/stat")?;
        let mut lines = stat.lines();
        let total = (lines.next())
            .and_then(|line| line.strip_prefix("cpu "))
            .ok_or_else(|| io::Error::other("/proc/stat does not start with its cpu line"))?;
        let ticks: Vec<u64> = (total.split_whitespace().take(3))
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        let cpus = lines.take_while(|line| line.starts_with("cpu")).count();
        Ok(MachineCpu {
            busy_s: ticks.iter().sum::<u64>() as f64 / clock_ticks_per_sec(),
            cpus,
        })
    }

    /// The share of the machine's CPU time over `elapsed` since `earlier` that went to work
    /// other than `own` seconds of the measured processes (0 to 1; ticks are 10 ms, so a short
    /// section reads a few per cent either way).
    pub fn foreign_share(&self, earlier: &MachineCpu, own_s: f64, elapsed_s: f64) -> Option<f64> {
        let capacity = elapsed_s * self.cpus as f64;
        let foreign = self.busy_s - earlier.busy_s - own_s;
        (capacity > 0.0).then(|| (foreign / capacity).clamp(0.0, 1.0))
    }
}

/// NET_RX softirqs CPU `cpu` ran since boot: its column of `/proc/softirqs`' NET_RX line.
fn net_rx_softirqs(cpu: usize) -> Option<u64> {
    let text = fs::read_to_string("/proc/softirqs").ok()?;
    let mut lines = text.lines();
    let column = lines
        .next()?
        .split_whitespace()
        .position(|name| name == format!("CPU{cpu}"))?;
    let counts = lines.find_map(|line| line.trim_start().strip_prefix("NET_RX:"))?;
    counts.split_whitespace().nth(column)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    /// Goal: a group whose processes all exited is not live while they wait to be reaped.
    /// Method: a child in a group of its own, live while it runs; once it exits and before it
    /// is reaped the kernel still finds the group (a zombie keeps it), this does not.
    #[test]
    fn an_exited_process_waiting_for_its_reaper_is_not_live() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = child.id() as i32;
        assert!(group_has_live_process(group));
        let pid = rustix::process::Pid::from_raw(group).unwrap();
        // Wait for the exit without reaping (WNOWAIT), as a lazy init would leave it.
        let options =
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT;
        rustix::process::waitid(rustix::process::WaitId::Pid(pid), options).unwrap();
        assert!(rustix::process::test_kill_process_group(pid).is_ok());
        assert!(!group_has_live_process(group));
        child.wait().unwrap();
    }

    /// Goal: CPU time the measured processes did not spend reads as other work's: a busy loop
    /// on another thread, left out of `own`, is all in the foreign share (the machine's other
    /// work only adds to it), however busy the machine is.
    #[test]
    fn another_threads_work_is_foreign() {
        let cpu = |usage: Usage| usage.cpu_user_s + usage.cpu_sys_s;
        // Spins until this thread has had `for_` of CPU, however long a busy machine makes it
        // wait for it (on wall time, a loop beside 8 runnable builds got 0.085 s of 0.4).
        let spin = move |for_: Duration| {
            let start = cpu(Usage::of_thread());
            while cpu(Usage::of_thread()) - start < for_.as_secs_f64() {
                for _ in 0..10_000 {
                    std::hint::spin_loop();
                }
            }
        };
        let (before, own_before, at) = (
            MachineCpu::read().unwrap(),
            Usage::of_thread(),
            Instant::now(),
        );
        let other = std::thread::spawn(move || {
            let start = Usage::of_thread();
            spin(Duration::from_millis(400));
            cpu(Usage::of_thread()) - cpu(start)
        });
        spin(Duration::from_millis(400));
        let own_s = cpu(Usage::of_thread()) - cpu(own_before);
        let other_s = other.join().unwrap();
        let after = MachineCpu::read().unwrap();
        let elapsed = at.elapsed().as_secs_f64();
        let share = after.foreign_share(&before, own_s, elapsed).unwrap();
        let foreign_s = share * elapsed * after.cpus as f64;
        assert!(other_s > 0.1, "the loop ran {other_s:.3} s");
        // Ticks are 10 ms a CPU at each read.
        let tolerance = 0.02 * after.cpus as f64;
        assert!(
            foreign_s >= other_s - tolerance,
            "the other thread's {other_s:.3} s, foreign {foreign_s:.3} s"
        );
    }

    #[test]
    fn net_rx_softirqs_are_read_per_cpu() {
        // Every CPU of a running Linux has a NET_RX column, and the count only grows.
        let first = net_rx_softirqs(0).expect("/proc/softirqs has CPU0's NET_RX");
        assert!(net_rx_softirqs(0).unwrap() >= first);
        assert_eq!(net_rx_softirqs(100_000), None);
    }

    #[test]
    fn the_scheduler_clock_of_a_process_is_read_in_ns() {
        let me = std::process::id() as i32;
        let first = process_cpu_ns(me).expect("any process's CPU clock is readable");
        assert!(first > 0 && process_cpu_ns(me).unwrap() >= first);
        assert!(Usage::of_pid(me).unwrap().cpu_sched_s.is_some());
        // Above the kernel's largest pid_max: no such process.
        assert_eq!(process_cpu_ns(4_194_305), None);
    }

    #[test]
    fn usage_moves_forward_with_work() {
        let before = Usage::of_process();
        let mut spin = 0u64;
        let until = Instant::now() + Duration::from_millis(30);
        while Instant::now() < until {
            spin = spin.wrapping_add(1);
        }
        let used = Usage::of_process().since(&before);
        assert!(spin > 0);
        assert!(used.cpu_user_s + used.cpu_sys_s > 0.0);
    }
}
