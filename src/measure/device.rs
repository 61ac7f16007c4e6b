//! The block device under a file, and the writes and flushes it completed over a section.

use std::fs;

/// The block device a file lives on, whose counters (`/sys/dev/block/MAJ:MIN/stat`) say how
/// many writes and cache flushes reached the device: concurrent fsyncs may share one flush,
/// which is where io_uring's page-cycle win comes from (FINDINGS).
#[derive(Clone, Debug)]
pub struct BlockDevice {
    stat_path: std::path::PathBuf,
}

/// Requests a block device completed over a section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceIo {
    pub writes: u64,
    pub flushes: u64,
}

impl BlockDevice {
    /// The device under `file`, or None when it is not on a block device (tmpfs, overlay).
    pub fn of_file(file: &fs::File) -> Option<BlockDevice> {
        let stat = rustix::fs::fstat(file).ok()?;
        let (major, minor) = (
            rustix::fs::major(stat.st_dev),
            rustix::fs::minor(stat.st_dev),
        );
        let stat_path = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
        let device = BlockDevice { stat_path };
        device.read().map(|_| device)
    }

    pub(super) fn read(&self) -> Option<DeviceIo> {
        let text = fs::read_to_string(&self.stat_path).ok()?;
        let fields: Vec<u64> = text
            .split_whitespace()
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        // Documentation/block/stat.rst: field 5 is write I/Os, field 16 flush I/Os (4.19+).
        Some(DeviceIo {
            writes: *fields.get(4)?,
            flushes: *fields.get(15)?,
        })
    }
}

impl DeviceIo {
    pub(super) fn since(&self, earlier: &DeviceIo) -> DeviceIo {
        DeviceIo {
            writes: self.writes.saturating_sub(earlier.writes),
            flushes: self.flushes.saturating_sub(earlier.flushes),
        }
    }
}
