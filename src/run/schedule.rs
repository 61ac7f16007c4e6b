//! What `run` runs: the steps of its mode, narrowed by `--only` and `--engine`, fitted to
//! `--budget`, each with its planned time (the step's own, measured on a 2-vCPU VM); and, in
//! words, what it left out and why.
//!
//! A budget keeps the steps in their rank (`Step::rank`: the answer for files and the network
//! first, the equal-load sweeps next, the shapes beyond them last), each in the first form that
//! fits what is left: as the mode runs it, without the reference contenders, then its `--quick`
//! form (fewer rounds, shorter windows, smaller files); a step no form of which fits is left
//! out. The run then keeps to it (`run::run`): a step that would outlast the budget is ended
//! there with its finished runs kept.

use std::time::Duration;

use super::steps::{plan, Mode, Only, Step};
use crate::engines::{self, Workload};
use crate::output::progress::time_text;

/// One step as the run will run it.
#[derive(Clone, Debug)]
pub struct Scheduled {
    pub step: &'static Step,
    /// The mode whose arguments it runs with: a step fitted to a budget may run its quick form.
    pub mode: Mode,
    /// Whether the reference contenders join it (where they would).
    pub contenders: bool,
    /// Its `--engine` list when `run --engine` chose it.
    pub engines: Option<String>,
    /// Its planned time.
    pub seconds: u64,
}

/// What `run` asked for.
pub struct Wishes<'a> {
    pub mode: Mode,
    pub only: Option<Only>,
    /// `run --engine`: the engines each step runs, with its baseline.
    pub engines: &'a [String],
    /// The time the steps may take (the run's budget less what it spent before them and what
    /// writing the report takes).
    pub budget: Option<Duration>,
    /// Whether reference contenders were chosen.
    pub contenders: bool,
    /// `run --server-threads`: how many loop counts each network step measures.
    pub loops: u64,
}

/// The steps to run, in table order, and what was left out or changed: each a sentence for the
/// report's notes, and in short for the plan's line.
#[derive(Debug, Default)]
pub struct Schedule {
    pub steps: Vec<Scheduled>,
    pub left_out: Vec<String>,
    /// Steps `--engine` left out, for want of any of its engines.
    no_engine: Vec<&'static str>,
    /// Steps fitted to the budget in another form (`echo without the reference contenders`).
    fitted: Vec<String>,
    /// Steps no form of which fit in the budget.
    no_room: Vec<&'static str>,
}

impl Schedule {
    /// The planned time of every step.
    pub fn seconds(&self) -> u64 {
        self.steps.iter().map(|scheduled| scheduled.seconds).sum()
    }
}

/// The schedule `wishes` ask for.
pub fn schedule(wishes: &Wishes) -> anyhow::Result<Schedule> {
    let mut schedule = Schedule::default();
    let mut wanted: Vec<Scheduled> = Vec::new();
    for step in plan(wishes.mode) {
        if wishes.only.is_some_and(|only| !only.keeps(step)) {
            continue;
        }
        let engines = match wishes.engines {
            [] => None,
            named => match narrowed(step, wishes.mode, named)? {
                Some(list) => Some(list),
                None => {
                    schedule.left_out.push(format!(
                        "{}: left out, --engine names none of its engines",
                        step.name
                    ));
                    schedule.no_engine.push(step.name);
                    continue;
                }
            },
        };
        let contenders = wishes.contenders && step.contenders(wishes.mode).is_some();
        wanted.push(Scheduled {
            step,
            mode: wishes.mode,
            contenders,
            engines,
            seconds: step.seconds(wishes.mode, contenders, wishes.loops),
        });
    }
    anyhow::ensure!(
        !wanted.is_empty(),
        "nothing to run: {}",
        schedule.left_out.join("; ")
    );
    match wishes.budget {
        None => schedule.steps = wanted,
        Some(budget) => fit(&mut schedule, wanted, budget, wishes.loops),
    }
    Ok(schedule)
}

/// What the plan's times may fall short of the time the steps take: a default run took 11%
/// longer than its plan on a busy 2-vCPU VM (675 s against 606 s), so a budget's steps are
/// planned into nine tenths of it.
const BUDGET_SLACK: (u64, u64) = (9, 10);

/// Keeps the steps of `wanted` within `budget`: first as many as fit in rank order, each in the
/// first form that fits what is left (as the mode runs it without the reference contenders,
/// else its `--quick` form), so the budget buys breadth before references; then the contenders
/// back where they still fit, in rank order. Says what changed.
fn fit(schedule: &mut Schedule, mut wanted: Vec<Scheduled>, budget: Duration, loops: u64) {
    wanted.sort_by_key(|scheduled| scheduled.step.rank);
    let (share, of) = BUDGET_SLACK;
    let mut left = budget.as_secs() * share / of;
    // Each kept step, whether it would have had the contenders, and its mode as wanted.
    let mut kept: Vec<(Scheduled, bool, Mode)> = Vec::new();
    for scheduled in wanted {
        let step = scheduled.step;
        let forms = [(scheduled.mode, false), (Mode::Quick, false)];
        let fitting = forms.into_iter().find(|(mode, contenders)| {
            step.args(*mode).is_some() && step.seconds(*mode, *contenders, loops) <= left
        });
        let Some((mode, contenders)) = fitting else {
            schedule.left_out.push(format!(
                "{}: left out, its {} did not fit the {} left of the budget",
                step.name,
                time_text(Duration::from_secs(scheduled.seconds)),
                time_text(Duration::from_secs(left))
            ));
            schedule.no_room.push(step.name);
            continue;
        };
        let seconds = step.seconds(mode, contenders, loops);
        left -= seconds;
        let wanted_contenders = scheduled.contenders && mode == scheduled.mode;
        let wanted_mode = scheduled.mode;
        kept.push((
            Scheduled {
                mode,
                contenders,
                seconds,
                ..scheduled
            },
            wanted_contenders,
            wanted_mode,
        ));
    }
    for (scheduled, wanted_contenders, _) in &mut kept {
        let with = scheduled.step.seconds(scheduled.mode, true, loops);
        if *wanted_contenders && with - scheduled.seconds <= left {
            left -= with - scheduled.seconds;
            (scheduled.contenders, scheduled.seconds) = (true, with);
        }
    }
    for (scheduled, wanted_contenders, wanted_mode) in &kept {
        let name = scheduled.step.name;
        let how = match (scheduled.mode != *wanted_mode, *wanted_contenders) {
            (true, _) => "in its --quick form (fewer rounds, shorter windows)",
            (false, true) if !scheduled.contenders => "without the reference contenders",
            _ => continue,
        };
        schedule
            .left_out
            .push(format!("{name}: {how}, to fit the budget"));
        schedule.fitted.push(format!("{name} {how}"));
    }
    let mut kept: Vec<Scheduled> = kept.into_iter().map(|(scheduled, ..)| scheduled).collect();
    // Back in table order (by name: a `const` table has no one address to compare).
    kept.sort_by_key(|scheduled| {
        (super::steps::STEPS.iter()).position(|step| step.name == scheduled.step.name)
    });
    schedule.steps = kept;
}

/// The engines `step` runs under `run --engine named`: its baseline (the first engine of its
/// list, to compare with) and every named engine of its workload. None when none of `named`
/// serves its workload.
fn narrowed(step: &Step, mode: Mode, named: &[String]) -> anyhow::Result<Option<String>> {
    let workload_name = step.command.join("-");
    let workload = (Workload::ALL.into_iter())
        .find(|workload| workload.name() == workload_name)
        .ok_or_else(|| anyhow::anyhow!("{}: no workload {workload_name}", step.name))?;
    let own = step
        .flag(mode, "--engine")
        .unwrap_or_else(|| engines::default_list(workload));
    let baseline = own.split(',').next().unwrap_or_default();
    let serving: Vec<&str> = (named.iter())
        .map(String::as_str)
        .filter(|name| engines::find(workload, name).is_ok())
        .collect();
    if serving.is_empty() {
        return Ok(None);
    }
    let mut list = vec![baseline];
    list.extend(serving.into_iter().filter(|name| *name != baseline));
    Ok(Some(list.join(",")))
}

/// Checks `run --engine`'s names against every workload: a name no step's workload has is a
/// typo, refused before anything runs.
pub fn check_engines(named: &[String]) -> anyhow::Result<()> {
    for name in named {
        let known =
            (Workload::ALL.into_iter()).any(|workload| engines::find(workload, name).is_ok());
        anyhow::ensure!(
            known,
            "--engine {name} is no engine of any workload (`ringside engines` lists them)"
        );
    }
    Ok(())
}

/// The plan `run` says before it starts: its steps with their planned times, and what it left
/// out.
pub fn plan_text(schedule: &Schedule) -> String {
    let steps: Vec<String> = (schedule.steps.iter())
        .map(|scheduled| {
            format!(
                "{} {}",
                scheduled.step.name,
                time_text(Duration::from_secs(scheduled.seconds))
            )
        })
        .collect();
    let mut text = format!(
        "ringside run: {} steps, planned {} (each step as measured on a 2-vCPU VM): {}",
        schedule.steps.len(),
        time_text(Duration::from_secs(schedule.seconds())),
        steps.join(", ")
    );
    let mut changes = Vec::new();
    if !schedule.no_engine.is_empty() {
        changes.push(format!(
            "left out, --engine names none of their engines: {}",
            schedule.no_engine.join(", ")
        ));
    }
    if !schedule.fitted.is_empty() {
        changes.push(format!("to fit the budget, {}", schedule.fitted.join(", ")));
    }
    if !schedule.no_room.is_empty() {
        changes.push(format!(
            "left out, no room in the budget: {}",
            schedule.no_room.join(", ")
        ));
    }
    if !changes.is_empty() {
        text.push_str(&format!("\nringside run: {}", changes.join("; ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wishes(budget: Option<u64>) -> Wishes<'static> {
        Wishes {
            mode: Mode::Default,
            only: None,
            engines: &[],
            budget: budget.map(Duration::from_secs),
            contenders: true,
            loops: 1,
        }
    }

    /// A budget keeps the answer first and fits within itself; no budget keeps every step.
    #[test]
    fn a_budget_keeps_the_first_ranked_steps_within_it() {
        let all = schedule(&wishes(None)).unwrap();
        assert_eq!(all.steps.len(), plan(Mode::Default).len());
        assert!(all.left_out.is_empty());
        let five = schedule(&wishes(Some(280))).unwrap();
        assert!(five.seconds() <= 280, "{}", five.seconds());
        let names: Vec<&str> = five.steps.iter().map(|s| s.step.name).collect();
        assert!(
            names.contains(&"fs write 4k") && names.contains(&"echo"),
            "{names:?}"
        );
        assert!(!five.left_out.is_empty());
        assert!(
            (five.left_out.iter()).any(|note| note.starts_with("echo 16k: left out")),
            "{:?}",
            five.left_out
        );
        let said = plan_text(&five);
        assert!(said.contains("left out, no room in the budget: "), "{said}");
        let order: Vec<&str> = five.steps.iter().map(|s| s.step.name).collect();
        let table: Vec<&str> = (plan(Mode::Default).into_iter())
            .map(|step| step.name)
            .filter(|name| order.contains(name))
            .collect();
        assert_eq!(order, table, "the steps run in table order");
        assert_eq!(said.lines().count(), 2, "{said}");
    }

    #[test]
    fn only_and_engine_narrow_the_steps() {
        let fs = schedule(&Wishes {
            only: Some(Only::Fs),
            ..wishes(None)
        })
        .unwrap();
        assert!(fs.steps.iter().all(|s| s.step.command[0] == "fs"));
        let named = ["uring-defer".to_string()];
        let defer = schedule(&Wishes {
            engines: &named,
            ..wishes(None)
        })
        .unwrap();
        let echo = defer.steps.iter().find(|s| s.step.name == "echo").unwrap();
        assert_eq!(echo.engines.as_deref(), Some("epoll,uring-defer"));
        let write = defer
            .steps
            .iter()
            .find(|s| s.step.name == "fs write 4k")
            .unwrap();
        assert_eq!(write.engines.as_deref(), Some("blocking,uring-defer"));
        assert!(check_engines(&["uring-nope".to_string()]).is_err());
        let named = ["libaio".to_string()];
        let reads = schedule(&Wishes {
            engines: &named,
            ..wishes(None)
        })
        .unwrap();
        assert!(reads.steps.iter().all(|s| s.step.command == ["fs", "read"]));
        assert!(reads
            .left_out
            .iter()
            .any(|note| note.starts_with("echo: left out")));
    }
}
