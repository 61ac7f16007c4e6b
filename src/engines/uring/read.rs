//! The io_uring file engine's reads (`fs read`): single blocks at `--depth`, each into its own
//! slot of one page-aligned buffer (registered when the rung uses fixed buffers), submitted as
//! the rung submits writes (one at a time, in batches, or a ring kept full), each checked
//! against its stamp as it completes. The `uring-nop` row submits NOPs through the same loop:
//! no file, no copy, only io_uring's own cost per operation at that depth (as fio's
//! `t/io_uring -N1`), the floor every engine's CPU per read is read against.

use std::time::Instant;

use io_uring::opcode;

use super::file::{completion_result, Driver, Submit, Target, Uring};
use crate::engines::aligned::AlignedBuffer;
use crate::engines::file::{FileOutcome, ReadJob};
use crate::measure::Meter;
use crate::row::Tally;

impl Uring {
    pub(super) fn read_blocks(
        &self,
        job: &ReadJob,
        meter: &mut Meter,
    ) -> anyhow::Result<FileOutcome> {
        let depth = match self.submit {
            Submit::Single => 1,
            Submit::Batch | Submit::Ring => job.depth.max(1) as usize,
        };
        let (ring, params, notes) = self.build_ring(depth as u32, job.helpers, job.file, false)?;
        let mut buffers = AlignedBuffer::zeroed(depth * job.block_size);
        // Reads land in `buffers`, registered as the extra region; no write slots.
        let target = Target::new(&ring, job.file, self.fixed, (0, 0), &[buffers.as_slice()])?;
        let driver = Driver::new(&ring, self.ring_fd, self.flags.sqpoll)?;
        // Per slot: the block it reads and when its read was queued.
        let mut slot_block = vec![0u32; depth];
        let mut started = vec![Instant::now(); depth];
        let mut free: Vec<usize> = (0..depth).rev().collect();
        let mut latency = crate::stats::histogram::new_latency();
        let mut tally = Tally::default();
        let mut mismatches = 0;
        let mut next = 0usize;
        meter.start();
        loop {
            while next < job.blocks.len() && !free.is_empty() && !(job.should_stop)() {
                let slot = free.pop().expect("a free slot");
                let block = job.blocks[next];
                let entry = if self.nops {
                    opcode::Nop::new().build()
                } else {
                    let buffer =
                        &mut buffers.as_mut_slice()[slot * job.block_size..][..job.block_size];
                    target.read(buffer, u64::from(block) * job.block_size as u64)
                };
                slot_block[slot] = block;
                started[slot] = Instant::now();
                driver.push(&[entry.user_data(slot as u64)], &mut tally)?;
                next += 1;
            }
            let in_flight = depth - free.len();
            if in_flight == 0 {
                break;
            }
            // As the writes wait: all of a batch, three quarters of a ring.
            let want = match self.submit {
                Submit::Batch => in_flight,
                Submit::Single | Submit::Ring => (in_flight * 3 / 4).max(1),
            };
            driver.wait(want, &mut tally)?;
            while let Some(cqe) = driver.next_completion() {
                let slot = cqe.user_data() as usize;
                debug_assert!(
                    slot < depth && !free.contains(&slot),
                    "a completion of a free slot"
                );
                latency.saturating_record(started[slot].elapsed().as_nanos() as u64);
                let read = completion_result(&cqe, if self.nops { "nop" } else { "read" })?;
                let good = if self.nops {
                    read == 0
                } else {
                    let buffer = &buffers.as_slice()[slot * job.block_size..][..read];
                    tally.bytes += read as u64;
                    job.stamp.matches(buffer, slot_block[slot])
                };
                mismatches += u64::from(!good);
                tally.ops += 1;
                free.push(slot);
            }
        }
        let measured = meter.stop();
        drop(ring);
        Ok(FileOutcome {
            mismatches,
            latency_ns: Some(latency),
            params,
            notes,
            ..FileOutcome::new(measured, tally)
        })
    }
}
