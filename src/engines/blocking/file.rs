//! The blocking file engine: plain `pwrite`, `fsync`/`fdatasync` and `pread`, one syscall per
//! operation, issued straight to the kernel through rustix (no libc wrapper in between, so the
//! baseline measures the syscall itself).

use std::os::fd::BorrowedFd;

use rustix::io::Errno;

use crate::engines::aligned::AlignedBuffer;
use crate::engines::file::{CycleJob, FileEngine, FileOutcome, ReadJob, WriteJob};
use crate::measure::Meter;
use crate::row::Tally;

pub struct Blocking;

impl FileEngine for Blocking {
    fn write(&mut self, job: &WriteJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let mut tally = Tally::default();
        meter.start();
        let mut offset = 0usize;
        while offset < job.data.len() && !(job.should_stop)() {
            let end = (offset + job.block_size).min(job.data.len());
            offset += pwrite_all(job.file, &job.data[offset..end], offset as u64, &mut tally)?;
            tally.ops += 1;
        }
        if job.fsync_end {
            rustix::fs::fsync(job.file).map_err(|e| io_error("fsync", e))?;
            tally.syscalls_self += 1;
        }
        let measured = meter.stop();
        tally.bytes = offset as u64;
        Ok(FileOutcome::new(measured, tally))
    }

    fn cycle(&mut self, job: &CycleJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let mut tally = Tally::default();
        let mut mismatches = 0;
        // Page-aligned, so a read-back from an O_DIRECT file (--direct) is accepted.
        let mut page = AlignedBuffer::zeroed(job.page_size);
        let mut latency = crate::stats::histogram::new_latency();
        meter.start();
        for (index, expected) in job.data.chunks(job.page_size).enumerate() {
            if (job.should_stop)() {
                break;
            }
            let started = std::time::Instant::now();
            let offset = (index * job.page_size) as u64;
            pwrite_all(job.file, expected, offset, &mut tally)?;
            let synced = if job.datasync {
                rustix::fs::fdatasync(job.file)
            } else {
                rustix::fs::fsync(job.file)
            };
            synced.map_err(|e| io_error("fsync", e))?;
            tally.syscalls_self += 1;
            let read = &mut page.as_mut_slice()[..expected.len()];
            pread_exact(job.file, read, offset, &mut tally)?;
            if read != expected {
                mismatches += 1;
            }
            latency.saturating_record(started.elapsed().as_nanos() as u64);
            tally.ops += 1;
            tally.bytes += expected.len() as u64;
        }
        let measured = meter.stop();
        Ok(FileOutcome {
            mismatches,
            latency_ns: Some(latency),
            ..FileOutcome::new(measured, tally)
        })
    }

    fn read(&mut self, job: &ReadJob, meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        let mut tally = Tally::default();
        let mut mismatches = 0;
        let mut buffer = AlignedBuffer::zeroed(job.block_size);
        let mut latency = crate::stats::histogram::new_latency();
        meter.start();
        for &block in job.blocks {
            if (job.should_stop)() {
                break;
            }
            let started = std::time::Instant::now();
            let offset = u64::from(block) * job.block_size as u64;
            pread_exact(job.file, buffer.as_mut_slice(), offset, &mut tally)?;
            latency.saturating_record(started.elapsed().as_nanos() as u64);
            if !job.stamp.matches(buffer.as_slice(), block) {
                mismatches += 1;
            }
            tally.ops += 1;
            tally.bytes += job.block_size as u64;
        }
        let measured = meter.stop();
        Ok(FileOutcome {
            mismatches,
            latency_ns: Some(latency),
            ..FileOutcome::new(measured, tally)
        })
    }
}

/// Writes all of `block` at `offset`, resubmitting the rest after a short write.
pub(crate) fn pwrite_all(
    file: BorrowedFd,
    block: &[u8],
    offset: u64,
    tally: &mut Tally,
) -> anyhow::Result<usize> {
    let mut done = 0;
    while done < block.len() {
        let written = rustix::io::pwrite(file, &block[done..], offset + done as u64);
        tally.syscalls_self += 1;
        match written {
            Ok(0) => anyhow::bail!("pwrite wrote nothing at offset {}", offset + done as u64),
            Ok(count) => done += count,
            Err(Errno::INTR) => continue,
            Err(error) => return Err(io_error("pwrite", error)),
        }
    }
    Ok(done)
}

pub(crate) fn pread_exact(
    file: BorrowedFd,
    page: &mut [u8],
    offset: u64,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let mut done = 0;
    while done < page.len() {
        let read = rustix::io::pread(file, &mut page[done..], offset + done as u64);
        tally.syscalls_self += 1;
        match read {
            Ok(0) => anyhow::bail!(
                "the file ended at {} while reading a page back",
                offset + done as u64
            ),
            Ok(count) => done += count,
            Err(Errno::INTR) => continue,
            Err(error) => return Err(io_error("pread", error)),
        }
    }
    Ok(())
}

/// An I/O error with the operation named; a full disk says so in plain words.
pub fn io_error(operation: &str, error: impl Into<std::io::Error>) -> anyhow::Error {
    let error: std::io::Error = error.into();
    if error.raw_os_error() == Some(libc::ENOSPC) {
        anyhow::anyhow!(
            "{operation} failed: the disk is full (ENOSPC); free space or use a smaller --size"
        )
    } else if error.raw_os_error() == Some(libc::EDQUOT) {
        anyhow::anyhow!("{operation} failed: the disk quota is exhausted (EDQUOT)")
    } else {
        anyhow::anyhow!("{operation} failed: {error}")
    }
}
