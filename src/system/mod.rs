//! The machine a measurement runs on, as knobs every part may turn: children that die with
//! ringside (`children`), the epoll wait that runs on every kernel from 5.10 on (`epoll_wait`),
//! a document read from a file of bounded size (`input`), pinning threads to CPUs (`pin`), the
//! scheduling class and idle state (`tuning`; why the kernel refused a real-time class:
//! `realtime`), the file-descriptor limit (`limits`), the stop flag that Ctrl-C raises (`stop`),
//! and the network path between a server and its client (`network`: loopback or a veth pair
//! between namespaces). Nothing here knows an engine, a workload or a row, so every other folder
//! may import it. (The probe, which reports on the machine and lists the engines, sits above the
//! engines in `probe/`.)

pub mod children;
pub mod epoll_wait;
pub mod input;
pub mod kernel;
pub mod limits;
pub mod network;
pub mod pin;
pub mod realtime;
pub mod stop;
pub mod tuning;
