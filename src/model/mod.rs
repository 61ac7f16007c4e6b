//! The analysis model every view renders: rows become studies (a workload at one parameter
//! set, one summary per engine with its per-round figures), and studies become comparisons
//! (an engine against another, paired round by round, with an interval and a decision); open-loop
//! rows become equal-load comparisons (`equal_load`: the servers at the same offered rate). The
//! report, the studies' terminal tables, `compare` and the bench write-ups read the same model,
//! so a figure or a verdict is computed once. A published claim (`claim`) is a comparison
//! stated before it is measured; `claim_verdict` reads it against the studies.

pub mod calibration;
pub mod claim;
pub mod claim_verdict;
pub mod comparison;
pub mod drift;
pub mod equal_load;
pub mod figures;
pub mod ladder;
pub mod regime;
pub mod study;
pub mod summary;
pub mod sweep;
