//! The reads an asynchronous file engine keeps in flight (`libaio`, the io_uring rungs): one
//! slot per read, each with its own block-sized part of one page-aligned buffer (O_DIRECT and
//! registered buffers take it as it is), the block it reads and when its read was queued. A
//! completion names its slot; finishing it records the latency, checks the block's stamp and
//! frees the slot. Everything is allocated before the clock starts.

use std::time::Instant;

use hdrhistogram::Histogram;

use crate::engines::aligned::AlignedBuffer;
use crate::engines::file::{FileOutcome, Stamp};
use crate::measure::Measured;
use crate::row::Tally;

pub struct Slots {
    buffers: AlignedBuffer,
    block_size: usize,
    /// Per slot: the block it reads and when its read was queued.
    block: Vec<u32>,
    started: Vec<Instant>,
    /// Per slot: whether a read is in it (the loop invariant behind `free`).
    busy: Vec<bool>,
    free: Vec<usize>,
    latency: Histogram<u64>,
    mismatches: u64,
}

impl Slots {
    pub fn new(depth: usize, block_size: usize) -> Slots {
        assert!(depth >= 1, "at least one read in flight");
        let now = Instant::now();
        Slots {
            buffers: AlignedBuffer::zeroed(depth * block_size),
            block_size,
            block: vec![0; depth],
            started: vec![now; depth],
            busy: vec![false; depth],
            free: (0..depth).rev().collect(),
            latency: crate::stats::histogram::new_latency(),
            mismatches: 0,
        }
    }

    pub fn depth(&self) -> usize {
        self.block.len()
    }

    pub fn in_flight(&self) -> usize {
        self.depth() - self.free.len()
    }

    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Every slot's buffer, one after the other (what a fixed-buffer ring registers).
    pub fn buffers(&self) -> &[u8] {
        self.buffers.as_slice()
    }

    /// Takes a free slot for a read of `block` and starts its clock; returns the slot and the
    /// buffer the read lands in. None when every slot is busy.
    pub fn start(&mut self, block: u32) -> Option<(usize, &mut [u8])> {
        let slot = self.free.pop()?;
        assert!(!self.busy[slot], "a free slot holds a read");
        self.busy[slot] = true;
        self.block[slot] = block;
        self.started[slot] = Instant::now();
        let buffer = &mut self.buffers.as_mut_slice()[slot * self.block_size..][..self.block_size];
        Some((slot, buffer))
    }

    /// Ends the read in `slot`, which returned `read` bytes: records its latency, checks them
    /// against `stamp` (None: a NOP, which reads nothing and must return 0), frees the slot.
    pub fn finish(&mut self, slot: usize, read: usize, stamp: Option<Stamp>) -> anyhow::Result<()> {
        anyhow::ensure!(
            slot < self.depth() && self.busy[slot],
            "a completion names slot {slot}, which holds no read"
        );
        self.latency
            .saturating_record(self.started[slot].elapsed().as_nanos() as u64);
        let good = match stamp {
            Some(stamp) => {
                let data = &self.buffers.as_slice()[slot * self.block_size..][..read];
                stamp.matches(data, self.block[slot])
            }
            None => read == 0,
        };
        self.mismatches += u64::from(!good);
        self.busy[slot] = false;
        self.free.push(slot);
        Ok(())
    }

    /// What the loop measured, with the latencies and mismatches the slots gathered.
    pub fn outcome(self, measured: Measured, tally: Tally) -> FileOutcome {
        debug_assert_eq!(self.in_flight(), 0, "reads still in flight");
        FileOutcome {
            mismatches: self.mismatches,
            latency_ns: Some(self.latency),
            ..FileOutcome::new(measured, tally)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;
    use crate::engines::file::Stamp;

    #[test]
    fn slots_check_each_read_against_its_block_and_refuse_a_stray_completion() {
        let stamp = Stamp::new(5);
        let mut slots = Slots::new(2, 64);
        let (first, buffer) = slots.start(10).unwrap();
        stamp.write(buffer, 10);
        let (second, buffer) = slots.start(11).unwrap();
        stamp.write(buffer, 12);
        assert!(slots.start(13).is_none(), "both slots are busy");
        assert_eq!(slots.in_flight(), 2);
        slots.finish(first, 64, Some(stamp)).unwrap();
        slots.finish(second, 64, Some(stamp)).unwrap();
        assert!(
            slots.finish(second, 64, Some(stamp)).is_err(),
            "freed twice"
        );
        let (third, _) = slots.start(14).unwrap();
        slots.finish(third, 8, Some(stamp)).unwrap();
        assert_eq!(slots.mismatches, 2, "the wrong block and the short read");
        assert_eq!(slots.latency.len(), 3);
    }
}
