//! Why the kernel refused SCHED_FIFO. The errno (EPERM) and the uid cannot tell the causes
//! apart: root without CAP_SYS_NICE (a container's default capability set, Docker's among
//! them, leaves it out) is refused as a plain user is, and so is root in a cgroup whose
//! real-time budget is 0 (where RT group scheduling exists, the kernel refuses real-time
//! policies to tasks of a group without runtime). So the process's effective capabilities
//! (`CapEff` in /proc/self/status), its `RLIMIT_RTPRIO` and its cgroup's `cpu.rt_runtime_us`
//! are read, and the sentence names the one that refused and the file to look at.

use std::path::Path;

/// CAP_SYS_NICE's bit in the capability sets (linux/capability.h).
const CAP_SYS_NICE: u32 = 23;

/// What the kernel weighs before it lets a task switch to a real-time policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RealtimeFacts {
    pub uid: u32,
    /// The effective capability set (`CapEff` in /proc/self/status), when readable.
    pub capabilities_effective: Option<u64>,
    /// RLIMIT_RTPRIO's soft limit: the highest real-time priority allowed without CAP_SYS_NICE.
    pub rtprio_limit: Option<u64>,
    /// The cgroup's real-time budget, where RT group scheduling exists: its
    /// `cpu.rt_runtime_us` file and what it reads (µs per period; 0 refuses real-time tasks).
    pub group_budget: Option<(String, i64)>,
}

impl RealtimeFacts {
    /// The facts of the calling process.
    pub fn read() -> RealtimeFacts {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit through a valid pointer.
        let limited = unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut limit) } == 0;
        RealtimeFacts {
            // SAFETY: getuid has no preconditions and cannot fail.
            uid: unsafe { libc::getuid() },
            capabilities_effective: capabilities_effective(&status),
            rtprio_limit: limited.then_some(limit.rlim_cur),
            group_budget: group_budget(
                &std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
                &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
                |path| std::fs::read_to_string(path).ok(),
            ),
        }
    }

    fn has_sys_nice(&self) -> Option<bool> {
        self.capabilities_effective
            .map(|set| set & (1 << CAP_SYS_NICE) != 0)
    }

    /// Why switching to real-time priority `priority` was refused with `error`: the cause, the
    /// file that shows it, and what would lift it.
    pub fn refusal(&self, priority: u32, error: &str) -> String {
        let limit_allows = self
            .rtprio_limit
            .is_some_and(|limit| limit >= u64::from(priority));
        let capabilities = match self.capabilities_effective {
            Some(set) => format!("CapEff {set:016x} in /proc/self/status"),
            None => "/proc/self/status unreadable".to_string(),
        };
        if self.has_sys_nice() == Some(false) && !limit_allows {
            let limit = self.rtprio_limit.unwrap_or(0);
            return match self.uid {
                0 => format!(
                    "the process is root but lacks CAP_SYS_NICE ({capabilities} has no bit \
                     {CAP_SYS_NICE}: a container's default capability set, Docker's among them, \
                     leaves it out), and its RLIMIT_RTPRIO is {limit}; add the capability \
                     (`docker run --cap-add SYS_NICE`) or raise the limit (`ulimit -r \
                     {priority}`)"
                ),
                uid => format!(
                    "uid {uid} lacks CAP_SYS_NICE ({capabilities}) and its RLIMIT_RTPRIO is \
                     {limit} (`ulimit -r`); run as root, grant the capability, or raise the \
                     limit to {priority} (rtprio in /etc/security/limits.conf)"
                ),
            };
        }
        if let Some((file, 0)) = &self.group_budget {
            return format!(
                "the process's cgroup has no real-time budget: {file} reads 0, and the kernel \
                 refuses SCHED_FIFO to a task of a group without one, even to root; give the \
                 group a budget (write µs per period to that file, its parents' first) or run \
                 ringside outside it"
            );
        }
        let budget = match &self.group_budget {
            Some((file, budget)) => format!("{file} reads {budget}"),
            None => "no cgroup real-time budget applies".to_string(),
        };
        format!(
            "refused ({error}) although neither capability nor budget explains it ({capabilities}, \
             RLIMIT_RTPRIO {}, {budget}): a seccomp filter or security module may deny \
             sched_setscheduler",
            self.rtprio_limit
                .map_or("unknown".to_string(), |limit| limit.to_string())
        )
    }
}

/// `CapEff` of a /proc/PID/status text.
fn capabilities_effective(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// The `cpu.rt_runtime_us` of the cgroup `cgroup` (/proc/self/cgroup) puts the process in, on
/// the hierarchy `mountinfo` mounts with the cpu controller, and what `read` finds in it; None
/// where no such file exists (no RT group scheduling, or cgroup v2, which has none).
fn group_budget(
    cgroup: &str,
    mountinfo: &str,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<(String, i64)> {
    // "4:cpu,cpuacct:/docker/abc" (v1) or "0::/user.slice" (v2).
    let controller = |list: &str| list.split(',').any(|name| name == "cpu");
    let (v1, path) = (cgroup.lines())
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            match controllers {
                "" => Some((false, path)),
                list if controller(list) => Some((true, path)),
                _ => None,
            }
        })
        .max_by_key(|(v1, _)| *v1)?;
    // "36 25 0:31 /root /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct"
    let (root, mount) = mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let mut fields = fs.split_whitespace();
        let (fstype, _, options) = (fields.next()?, fields.next()?, fields.next()?);
        let mounted = match v1 {
            true => fstype == "cgroup" && controller(options),
            false => fstype == "cgroup2",
        };
        let fields: Vec<&str> = mount.split_whitespace().collect();
        (mounted && fields.len() >= 5).then(|| (fields[3], fields[4]))
    })?;
    let inside = path
        .strip_prefix(root)
        .unwrap_or(path)
        .trim_start_matches('/');
    let file = Path::new(mount).join(inside).join("cpu.rt_runtime_us");
    let budget = read(&file)?.trim().parse().ok()?;
    Some((file.display().to_string(), budget))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS_V1: &str = "\
25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw
31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
36 25 0:31 /docker /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct";
    const CGROUP_V1: &str = "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n";

    /// Capability sets with and without CAP_SYS_NICE (bit 23), as root in a default Docker
    /// container (0xa80425fb) and on a host (every bit).
    const DOCKER_DEFAULT: u64 = 0xa804_25fb;
    const EVERY_CAPABILITY: u64 = 0x1ff_ffff_ffff;

    fn facts(uid: u32, caps: u64, limit: u64, budget: Option<i64>) -> RealtimeFacts {
        RealtimeFacts {
            uid,
            capabilities_effective: Some(caps),
            rtprio_limit: Some(limit),
            group_budget: budget.map(|b| ("/sys/fs/cgroup/cpu/x/cpu.rt_runtime_us".into(), b)),
        }
    }

    #[test]
    fn capeff_is_read_from_the_status_file() {
        let status = "Name:\tringside\nCapPrm:\t000001ffffffffff\nCapEff:\t00000000a80425fb\n";
        assert_eq!(capabilities_effective(status), Some(DOCKER_DEFAULT));
        assert_eq!(
            DOCKER_DEFAULT & (1 << CAP_SYS_NICE),
            0,
            "Docker leaves it out"
        );
        assert_eq!(capabilities_effective("Name:\tx\n"), None);
    }

    /// Goal: each cause of a refusal gets its own sentence, naming the file that shows it.
    #[test]
    fn each_cause_of_a_refusal_is_named_with_its_file() {
        let root_in_docker = facts(0, DOCKER_DEFAULT, 0, Some(950_000)).refusal(50, "EPERM");
        assert!(
            root_in_docker.starts_with(
                "the process is root but lacks CAP_SYS_NICE (CapEff \
                 00000000a80425fb in /proc/self/status has no bit 23"
            ),
            "{root_in_docker}"
        );
        assert!(
            root_in_docker.contains("--cap-add SYS_NICE"),
            "{root_in_docker}"
        );
        let plain_user = facts(1000, 0, 0, None).refusal(50, "EPERM");
        assert!(
            plain_user.starts_with("uid 1000 lacks CAP_SYS_NICE"),
            "{plain_user}"
        );
        assert!(plain_user.contains("RLIMIT_RTPRIO is 0"), "{plain_user}");
        // A plain user whose limit allows the priority is not refused for the capability.
        let allowed = facts(1000, 0, 99, Some(0)).refusal(50, "EPERM");
        assert!(
            allowed.starts_with("the process's cgroup has no real-time budget"),
            "{allowed}"
        );
        let no_budget = facts(0, EVERY_CAPABILITY, 0, Some(0)).refusal(50, "EPERM");
        assert!(
            no_budget.starts_with(
                "the process's cgroup has no real-time budget: \
                 /sys/fs/cgroup/cpu/x/cpu.rt_runtime_us reads 0"
            ),
            "{no_budget}"
        );
        let unexplained = facts(0, EVERY_CAPABILITY, 0, Some(950_000)).refusal(50, "EPERM");
        assert!(
            unexplained.starts_with("refused (EPERM) although"),
            "{unexplained}"
        );
        assert!(unexplained.contains("reads 950000"), "{unexplained}");
        assert!(unexplained.contains("seccomp"), "{unexplained}");
    }

    /// Goal: the budget file is found on the hierarchy that mounts the cpu controller, at the
    /// process's group relative to the mount's root (a container sees its own group as /).
    #[test]
    fn the_cgroups_budget_file_is_found_from_proc() {
        let read = |path: &Path| {
            (path == Path::new("/sys/fs/cgroup/cpu,cpuacct/abc/cpu.rt_runtime_us"))
                .then(|| "0\n".to_string())
        };
        assert_eq!(
            group_budget(CGROUP_V1, MOUNTS_V1, read),
            Some(("/sys/fs/cgroup/cpu,cpuacct/abc/cpu.rt_runtime_us".into(), 0))
        );
        // cgroup v2 has no real-time budget file: nothing to read, no budget.
        let v2 = "0::/user.slice\n";
        let mounts = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw";
        assert_eq!(group_budget(v2, mounts, |_| None), None);
        assert_eq!(group_budget("", "", |_| Some("5".into())), None);
    }
}
