//! The `threads` echo server: the pre-epoll answer to many clients, a thread per connection,
//! each running the `blocking` engine's connection loop. It shows the far end of the spectrum:
//! no readiness API at all, the scheduler does the multiplexing, and every message costs a
//! context switch into the right thread.

use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::net::SocketFlags;

use super::blocking::server::{serve_connection, set_timeouts, RECV_BUFFER_BYTES};
use super::server::{accept_failure, AcceptFailure, AcceptPause, Run, ServerCounters};
use crate::system::stop::stopped;

/// Stack per connection thread: the loop needs little, and 256 threads at the default 2 MiB
/// would reserve half a GiB of address space.
const THREAD_STACK_BYTES: usize = 128 * 1024;

pub fn serve(run: Run<'_>) -> anyhow::Result<()> {
    let (listener, config, counters) = (run.listener, run.config, run.counters);
    set_timeouts(&listener)?;
    let open = AtomicUsize::new(0);
    let open = &open;
    let mut pause = AcceptPause::default();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        while !stopped() {
            let accepted = counters.call(rustix::net::accept_with(&listener, SocketFlags::CLOEXEC));
            let connection = match accepted {
                Ok(connection) => connection,
                Err(error) => {
                    if accept_failure(error, counters) == AcceptFailure::Pause {
                        pause.start(open.load(Ordering::Acquire));
                        pause.sleep(|| open.load(Ordering::Acquire));
                    }
                    continue;
                }
            };
            if open.load(Ordering::Acquire) >= config.max_connections {
                // Refused: closed at once so the thread count, and memory, stay bounded.
                ServerCounters::add(&counters.connections_refused, 1);
                counters.syscalls(1);
                continue;
            }
            ServerCounters::add(&counters.connections_accepted, 1);
            open.fetch_add(1, Ordering::AcqRel);
            // The clone that starts the thread (its stack's mappings are the runtime's).
            counters.syscalls(1);
            let spawned = std::thread::Builder::new()
                .name("ringside-conn".into())
                .stack_size(THREAD_STACK_BYTES)
                .spawn_scoped(scope, move || {
                    let mut buffer = vec![0u8; RECV_BUFFER_BYTES];
                    serve_connection(connection, config, counters, &mut buffer);
                    open.fetch_sub(1, Ordering::AcqRel);
                });
            if spawned.is_err() {
                // The connection was moved into the closure that failed to start and is closed.
                ServerCounters::add(&counters.connections_failed, 1);
                open.fetch_sub(1, Ordering::AcqRel);
            }
        }
        Ok(())
    })
}
