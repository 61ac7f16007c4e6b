//! The `libaio` file engine: Linux's native asynchronous I/O (`io_setup`, `io_submit`,
//! `io_getevents`), the API io_uring replaced and still fio's default asynchronous engine. It is
//! asynchronous only for O_DIRECT files (on a buffered file `io_submit` does the read itself
//! before it returns), so its row needs `--direct`. Its syscalls are made raw through `libc`,
//! as fio's libaio engine makes them through libaio's thin wrappers: no crate for them is kept
//! up, and the ABI (`linux/aio_abi.h`) is four calls and two structs.
//!
//! The loop keeps `--depth` reads in flight: it submits each read as its slot frees, one
//! `io_submit` each (a batch in one call plugs the block queue: the device sees none of it until
//! the kernel has prepared it all), then waits in `io_getevents` for at least one completion and
//! takes every one that is ready, as fio's libaio engine does (`iodepth_batch_submit=1`,
//! `iodepth_batch_complete_min=1`) and as `uring-ring`'s reads do, so the two differ only in
//! their API.

use crate::engines::blocking::file::io_error;
use crate::engines::file::{FileEngine, FileOutcome, ReadJob};
use crate::engines::slots::Slots;
use crate::measure::Meter;
use crate::row::Tally;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `struct iocb` of `linux/aio_abi.h` (64 bytes; `aio_key` before `aio_rw_flags` on
/// little-endian machines, and both stay zero here).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: u32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;

/// An AIO context of `depth` slots, destroyed on drop.
struct Context {
    id: libc::c_ulong,
}

impl Context {
    fn new(depth: usize) -> anyhow::Result<Context> {
        let mut id: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context's id into `id`, which outlives the call.
        let result = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut id) };
        if result < 0 {
            let error = std::io::Error::last_os_error();
            anyhow::bail!(
                "io_setup({depth}) failed ({error}); with EAGAIN the system's AIO slots \
                 (/proc/sys/fs/aio-max-nr) are used up: use a smaller --depth"
            );
        }
        Ok(Context { id })
    }

    /// Submits one iocb.
    fn submit_one(&self, iocb: &mut Iocb) -> anyhow::Result<()> {
        let mut iocbs = [iocb as *mut Iocb];
        loop {
            // SAFETY: the pointer is to a live iocb whose buffer outlives its completion (the
            // engine reaps every submitted read before its buffers are dropped).
            let taken = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.id,
                    1 as libc::c_long,
                    iocbs.as_mut_ptr(),
                )
            };
            if taken == 1 {
                return Ok(());
            }
            anyhow::ensure!(taken < 0, "io_submit took {taken} of one iocb");
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EINTR) {
                return Err(io_error("io_submit", error));
            }
        }
    }

    /// Waits for at least `want` completions, taking up to `events.len()`.
    fn events(&self, want: usize, events: &mut [IoEvent]) -> anyhow::Result<usize> {
        loop {
            // SAFETY: the kernel writes at most `events.len()` events into `events`.
            let got = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.id,
                    want as libc::c_long,
                    events.len() as libc::c_long,
                    events.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if got >= 0 {
                return Ok(got as usize);
            }
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EINTR) {
                return Err(io_error("io_getevents", error));
            }
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is ours; destroying it waits for whatever is still in flight.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.id) };
    }
}

pub struct Libaio;

impl FileEngine for Libaio {
    fn read(&mut self, job: &ReadJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        check_direct(job.file)?;
        let depth = job.depth.max(1) as usize;
        let mut slots = Slots::new(depth, job.block_size);
        let context = Context::new(depth)?;
        // One iocb per slot, rewritten for each read and submitted at once.
        let mut iocbs = vec![Iocb::default(); depth];
        let mut events = vec![IoEvent::default(); depth];
        let mut tally = Tally::default();
        let mut next = 0usize;
        let fd = job.file.as_raw_fd() as u32;
        meter.start();
        loop {
            while next < job.blocks.len() && slots.has_free() && !(job.should_stop)() {
                let block = job.blocks[next];
                let (slot, buffer) = slots.start(block).expect("a free slot");
                iocbs[slot] = Iocb {
                    aio_data: slot as u64,
                    aio_lio_opcode: IOCB_CMD_PREAD,
                    aio_fildes: fd,
                    aio_buf: buffer.as_mut_ptr() as u64,
                    aio_nbytes: job.block_size as u64,
                    aio_offset: i64::from(block) * job.block_size as i64,
                    ..Iocb::default()
                };
                context.submit_one(&mut iocbs[slot])?;
                tally.syscalls_self += 1;
                next += 1;
            }
            if slots.in_flight() == 0 {
                break;
            }
            // As fio's libaio engine: wait for one completion, take all that are ready.
            let got = context.events(1, &mut events)?;
            tally.syscalls_self += 1;
            for event in &events[..got] {
                if event.res < 0 {
                    let errno = rustix::io::Errno::from_raw_os_error(-event.res as i32);
                    return Err(io_error("an AIO read", errno));
                }
                let read = event.res as usize;
                slots.finish(event.data as usize, read, Some(job.stamp))?;
                tally.ops += 1;
                tally.bytes += read as u64;
            }
        }
        let measured = meter.stop();
        drop(context);
        Ok(slots.outcome(measured, tally))
    }
}

/// Refuses a buffered file, in one sentence: there io_submit reads synchronously, and the row
/// would measure a slower pread.
fn check_direct(file: BorrowedFd) -> anyhow::Result<()> {
    let direct = rustix::fs::fcntl_getfl(file)?.contains(rustix::fs::OFlags::DIRECT);
    anyhow::ensure!(
        direct,
        "libaio is asynchronous only on O_DIRECT files (on a buffered file io_submit reads \
         before it returns): run libaio with --direct"
    );
    Ok(())
}
