//! What the kernel says a measured section cost: syscalls counted by the kernel itself (a
//! perf counter on the `raw_syscalls:sys_enter` tracepoint), what io_uring did inside the kernel
//! (counters on its own tracepoints: SQEs, CQEs, io-wq punts, polls, task work), CPU time and
//! context switches of the whole process from getrusage (so io_uring's io-wq workers and SQPOLL
//! thread, which are threads of this process, are counted too, and also on their own), the block
//! device's flushes, and wall time.
//!
//! The seeds quote lines like "196608 syscalls" vs "386 syscalls"; ringside prints the same
//! kind of line, but with the number the kernel counted, not one the program believes.

mod device;
mod meter;
mod perf;
mod ring_events;
mod syscalls;
mod threads;
mod usage;

pub use device::{BlockDevice, DeviceIo};
pub use meter::{counting_syscalls, meter_for_run, Measured, Meter, ProcessMeter};
pub use ring_events::{RingEvent, RingEvents};
pub use syscalls::{
    sys_enter_tracepoint_id, task_ids, ProcessSyscallCounter, SyscallCounter, SyscallSource,
};
pub use threads::{threads_named, HelperThreads, PoolThreads};
pub use usage::{
    clock_ticks_per_sec, group_has_live_process, process_tree, CoreTimes, MachineCpu, Usage,
};
