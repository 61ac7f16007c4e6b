//! The io_uring file engine.
use crate::fs::{CycleJob, FileEngine, FileOutcome, UringFeatures, WriteJob};
use crate::measure::Meter;

pub struct Uring {
    features: UringFeatures,
}

impl Uring {
    pub fn new(features: UringFeatures) -> Uring {
        Uring { features }
    }
}

pub fn availability(_features: UringFeatures) -> Result<(), String> {
    crate::ring::usable()
}

impl FileEngine for Uring {
    fn write(&mut self, _job: &WriteJob, _meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        anyhow::bail!("{:?} not written yet", self.features)
    }
    fn cycle(&mut self, _job: &CycleJob, _meter: &mut Meter) -> anyhow::Result<FileOutcome> {
        anyhow::bail!("not written yet")
    }
}
