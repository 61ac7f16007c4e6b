//! What the kernel counted for one engine in one study: the medians the causes (`analysis::causes`)
//! read to name why an engine moved as it did.

use crate::row::Row;
use crate::stats::median;

/// What was counted for one engine in one study: the median over its runs of each count (None
/// where some run lacks it: an older document, a refused counter).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub ops: f64,
    pub seconds: f64,
    pub syscalls: Option<f64>,
    pub ctx_switches: f64,
    pub sqes_submitted: Option<f64>,
    pub cqes_posted: Option<f64>,
    pub iowq_punts: Option<f64>,
    pub polls_armed: Option<f64>,
    pub task_work_runs: Option<f64>,
    pub local_work_runs: Option<f64>,
    pub cqe_overflows: Option<f64>,
    pub short_writes: Option<f64>,
    pub iowq_workers: Option<f64>,
    pub iowq_cpu_s: Option<f64>,
    pub iowq_ctx_switches: Option<f64>,
    pub sqpoll_cpu_s: Option<f64>,
    pub device_flushes: Option<f64>,
    /// The load generator's CPU time over the window, as a share of the window.
    pub client_cpu_share: Option<f64>,
    /// Some run's load generator had a thread busy for most of the window.
    pub client_saturated: bool,
    /// The share of runs whose load generator had a thread that busy.
    pub client_saturated_share: f64,
    /// The server's CPU over the window as a share of its event loops' cores, and the load's
    /// as a share of its threads' (each thread on a CPU of its own): what `Regime` reads.
    /// None where a run lacks it (a file row, a server nobody measured).
    pub server_busy_share: Option<f64>,
    pub client_busy_share: Option<f64>,
}

impl Figures {
    pub fn of(rows: &[&Row]) -> Figures {
        let all =
            |field: fn(&Row) -> f64| median(&rows.iter().map(|r| field(r)).collect::<Vec<_>>());
        let each = |field: fn(&Row) -> Option<f64>| {
            let values: Option<Vec<f64>> = rows.iter().map(|r| field(r)).collect();
            values.filter(|v| !v.is_empty()).map(|v| median(&v))
        };
        Figures {
            ops: all(|r| r.ops as f64),
            seconds: all(|r| r.seconds),
            syscalls: each(|r| {
                matches!(r.syscalls_source.as_str(), "kernel" | "self").then_some(r.syscalls as f64)
            }),
            ctx_switches: all(|r| (r.ctx_switches_voluntary + r.ctx_switches_involuntary) as f64),
            sqes_submitted: each(|r| count(r.sqes_submitted)),
            cqes_posted: each(|r| count(r.cqes_posted)),
            iowq_punts: each(|r| count(r.iowq_punts)),
            polls_armed: each(|r| count(r.polls_armed)),
            task_work_runs: each(|r| count(r.task_work_runs)),
            local_work_runs: each(|r| count(r.local_work_runs)),
            cqe_overflows: each(|r| count(r.cqe_overflows)),
            short_writes: each(|r| count(r.short_writes)),
            iowq_workers: each(|r| r.iowq_workers.map(f64::from)),
            iowq_cpu_s: each(|r| r.iowq_cpu_s),
            iowq_ctx_switches: each(|r| count(r.iowq_ctx_switches)),
            sqpoll_cpu_s: each(|r| r.sqpoll_cpu_s),
            device_flushes: each(|r| count(r.device_flushes)),
            client_cpu_share: each(|r| {
                let cpu = r.client_cpu_user_s? + r.client_cpu_sys_s?;
                (r.seconds > 0.0).then(|| cpu / r.seconds)
            }),
            client_saturated: rows.iter().any(|r| r.client_saturated == Some(true)),
            client_saturated_share: match rows.len() {
                0 => 0.0,
                runs => {
                    let saturated = rows.iter().filter(|r| r.client_saturated == Some(true));
                    saturated.count() as f64 / runs as f64
                }
            },
            server_busy_share: each(|r| {
                let loops = param(r, "server_threads").unwrap_or(1).max(1);
                Some(r.server_cpu_utilisation? / loops as f64)
            }),
            client_busy_share: each(|r| {
                let threads = param(r, "client_threads")?
                    .min(param(r, "connections")?)
                    .max(1);
                let cpu = r.client_cpu_user_s? + r.client_cpu_sys_s?;
                (r.seconds > 0.0).then(|| cpu / r.seconds / threads as f64)
            }),
        }
    }

    /// `count` per operation (None without operations).
    pub fn per_op(&self, count: Option<f64>) -> Option<f64> {
        count.filter(|_| self.ops > 0.0).map(|n| n / self.ops)
    }
}

/// A whole-number parameter of the row.
fn param(row: &Row, key: &str) -> Option<u64> {
    row.params.get(key).and_then(serde_json::Value::as_u64)
}

fn count(value: Option<u64>) -> Option<f64> {
    value.map(|n| n as f64)
}
