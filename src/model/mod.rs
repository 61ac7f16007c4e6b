//! The analysis model every view renders: rows become studies (a workload at one parameter
//! set, one summary per engine with its per-round figures), and studies become comparisons
//! (an engine against another, paired round by round, with an interval and a decision). The
//! report, the studies' terminal tables, `compare` and the bench write-ups read the same model,
//! so a figure or a verdict is computed once.

mod calibration;
pub mod comparison;
pub mod drift;
pub mod figures;
pub mod ladder;
pub mod study;
pub mod sweep;
