//! The io_uring file engine's reads (`fs read`): single blocks at `--depth`, each into its own
//! slot of one page-aligned buffer (registered when the rung uses fixed buffers), submitted one
//! at a time, in batches, or as a ring kept full (an O_DIRECT read submitted as its slot frees),
//! each checked against its stamp as it completes. The `uring-nop` row submits NOPs through the same loop:
//! no file, no copy, only io_uring's own cost per operation at that depth (as fio's
//! `t/io_uring -N1`), the floor every engine's CPU per read is read against.

use io_uring::opcode;

use super::file::{completion_result, Driver, FileMemory, Submit, Uring};
use crate::engines::file::{FileOutcome, ReadJob};
use crate::engines::slots::Slots;
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
        let (ring, params, notes) = self.build_ring(depth as u32, job.file, false)?;
        // Reads land in the slots' buffers, registered as the extra region; no write slots.
        let slots = Slots::new(depth, job.block_size);
        let mut held = self.hold(ring, job.file, (0, 0), slots)?;
        let (ring, memory) = held.parts();
        let FileMemory {
            target,
            buffers: slots,
            in_flight,
        } = memory;
        let mut driver = Driver::new(ring, in_flight, self.ring_fd, self.flags.sqpoll)?;
        let stamp = (!self.nops).then_some(job.stamp);
        // A ring kept full submits each O_DIRECT read as its slot frees, as fio does
        // (`iodepth_batch_submit=1`): one call for a refill plugs the block queue, and the device
        // sees none of the reads until the kernel has prepared them all (on virtio-blk, 1.02-1.14x
        // the reads/s at depths 16 and 64). Buffered reads mostly complete inline from the page
        // cache, where a call per read cost 10% (bench/read.md): they, and the NOPs of the floor
        // (io_uring's least cost, as t/io_uring submits), go in one call per refill.
        let direct = rustix::fs::fcntl_getfl(job.file)?.contains(rustix::fs::OFlags::DIRECT);
        let submit_each = self.submit == Submit::Ring && !self.nops && direct;
        let mut tally = Tally::default();
        let mut next = 0usize;
        // Whether an SQE waits in the queue: the last of a refill goes with the wait's call.
        let mut queued = false;
        meter.start();
        loop {
            while next < job.blocks.len() && slots.has_free() && !(job.should_stop)() {
                if submit_each && queued {
                    driver.submit(&mut tally)?;
                }
                let block = job.blocks[next];
                let (slot, buffer) = slots.start(block).expect("a free slot");
                let entry = if self.nops {
                    opcode::Nop::new().build()
                } else {
                    target.read(buffer, u64::from(block) * job.block_size as u64)
                };
                driver.push(&[entry.user_data(slot as u64)], &mut tally)?;
                queued = true;
                next += 1;
            }
            let in_flight = slots.in_flight();
            if in_flight == 0 {
                break;
            }
            // A batch waits for all of itself; a ring waits for one completion and takes all
            // that are ready, as fio's io_uring engine and t/io_uring do, so the device is
            // never left with fewer reads than a slot's turnaround allows.
            let want = match self.submit {
                Submit::Batch => in_flight,
                Submit::Single | Submit::Ring => 1,
            };
            driver.wait(want, &mut tally)?;
            queued = false;
            while let Some(cqe) = driver.next_completion() {
                let read = completion_result(&cqe, if self.nops { "nop" } else { "read" })?;
                slots.finish(cqe.user_data() as usize, read, stamp)?;
                tally.ops += 1;
                if !self.nops {
                    tally.bytes += read as u64;
                }
            }
        }
        let measured = meter.stop();
        let slots = held.into_memory()?.buffers;
        Ok(FileOutcome {
            params,
            notes,
            ..slots.outcome(measured, tally)
        })
    }
}
