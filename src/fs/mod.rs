//! File workloads.
pub mod cycle;
pub mod write;
