//! The file a file study writes, and the data it writes (in `engines::aligned` memory).
//!
//! The scratch directory is created under `--dir` and removed when the study ends, also on
//! error, panic or Ctrl-C (the stop flag ends the run loop normally, so `Drop` runs). Data is
//! random, generated once from a recorded seed, in page-aligned memory so O_DIRECT and
//! registered buffers take it as it is, and touched before any run (cold guest memory costs a
//! host fault on first touch; FINDINGS).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Writes the run number into the first bytes of every block, so a run that failed to write a
/// block leaves the previous run's stamp there and the read-back catches it even when the file
/// is overwritten with otherwise identical data.
pub fn stamp_blocks(data: &mut [u8], block_size: usize, run: u32) {
    let stamp = (u64::from(run) << 32 | 0x7269_6e67).to_le_bytes();
    for block in data.chunks_mut(block_size) {
        let len = block.len().min(stamp.len());
        block[..len].copy_from_slice(&stamp[..len]);
    }
}

/// A private directory under `--dir` holding the study's file; removed on drop.
pub struct Scratch {
    dir: PathBuf,
    file: PathBuf,
}

impl Scratch {
    pub fn create(parent: &Path) -> anyhow::Result<Scratch> {
        let parent_shown = parent.display();
        anyhow::ensure!(
            parent.is_dir(),
            "--dir {parent_shown} is not a directory; create it or point --dir at one"
        );
        let dir = parent.join(format!(
            "ringside-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir(&dir).map_err(|error| {
            anyhow::anyhow!("cannot create a scratch directory in {parent_shown} ({error}); pick a writable --dir")
        })?;
        let file = dir.join("data.bin");
        Ok(Scratch { dir, file })
    }

    pub fn file_path(&self) -> &Path {
        &self.file
    }

    /// Opens (creating) the data file for reading and writing, with O_DIRECT when asked.
    pub fn open(&self, direct: bool) -> anyhow::Result<File> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        options.open(&self.file).map_err(|error| {
            if direct && error.raw_os_error() == Some(libc::EINVAL) {
                anyhow::anyhow!(
                    "this filesystem refuses O_DIRECT ({error}); drop --direct or use a --dir on a \
                     disk filesystem such as ext4 or xfs"
                )
            } else {
                anyhow::anyhow!("cannot open {} ({error})", self.file.display())
            }
        })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads the first `data.len()` bytes of `path` back and compares them with `data`, through
/// the page cache (a separate, buffered descriptor), in 1 MiB pieces. Returns whether they match.
pub fn verify_file(path: &Path, data: &[u8]) -> anyhow::Result<bool> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path)
        .with_context(|| format!("cannot reopen {} to verify it", path.display()))?;
    let mut buffer = vec![0u8; 1 << 20];
    for (index, expected) in data.chunks(buffer.len()).enumerate() {
        let read = &mut buffer[..expected.len()];
        file.read_exact_at(read, (index * (1 << 20)) as u64)
            .with_context(|| format!("cannot read {} back to verify it", path.display()))?;
        if read != expected {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::aligned::AlignedBuffer;

    #[test]
    fn stamps_differ_between_runs_in_every_block() {
        let mut data = vec![0u8; 4096 * 3 + 5];
        stamp_blocks(&mut data, 4096, 1);
        let first = data.clone();
        stamp_blocks(&mut data, 4096, 2);
        for (a, b) in first.chunks(4096).zip(data.chunks(4096)) {
            assert_ne!(a, b);
        }
    }

    #[test]
    fn scratch_is_removed_on_drop_and_verify_catches_a_flipped_byte() {
        let parent = tempfile::tempdir().unwrap();
        let path;
        {
            let scratch = Scratch::create(parent.path()).unwrap();
            path = scratch.file_path().to_path_buf();
            let data = AlignedBuffer::random(3 << 20, 1);
            std::fs::write(&path, data.as_slice()).unwrap();
            assert!(verify_file(&path, data.as_slice()).unwrap());
            let mut changed = data.as_slice().to_vec();
            changed[(2 << 20) + 17] ^= 1;
            assert!(!verify_file(&path, &changed).unwrap());
        }
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }
}
