//! The machine a measurement runs on, as knobs every part may turn: pinning threads to CPUs
//! (`pin`), the scheduling class and idle state (`tuning`), the file-descriptor limit
//! (`limits`), and the stop flag that Ctrl-C raises (`stop`). Nothing here knows an engine, a
//! workload or a row, so every other folder may import it. (The probe, which reports on the
//! machine and lists the engines, sits above the engines in `probe/`.)

pub mod kernel;
pub mod limits;
pub mod pin;
pub mod stop;
pub mod tuning;
