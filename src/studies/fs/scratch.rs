//! The file a file study writes, and the data it writes (in `engines::aligned` memory).
//!
//! The scratch directory is created under `--dir` and removed when the study ends, also on
//! error, panic or Ctrl-C (the stop flag ends the run loop normally, so `Drop` runs). A study
//! killed outright (SIGKILL, a watchdog, power loss) cannot remove it, so its owner holds a lock
//! on a file in it for as long as it lives, and the next study to make a scratch directory in
//! the same place removes every one whose lock it can take: the lock, not the pid in the name,
//! says the owner is gone (a pid can be reused). Data is
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

/// What scratch directories are called: `ringside-PID-RANDOM`.
const SCRATCH_PREFIX: &str = "ringside-";
/// The file in a scratch directory its owner holds an exclusive `flock` on while it lives.
const LOCK_FILE: &str = "lock";
/// The lock file before it is locked: a sweep never sees a lock file its owner has not taken.
const LOCK_FILE_STAGED: &str = "lock.new";

/// A private directory under `--dir` holding the study's file; removed on drop.
pub struct Scratch {
    dir: PathBuf,
    file: PathBuf,
    /// Locked for the directory's life (`sweep` removes directories whose lock is free).
    _lock: File,
}

impl Scratch {
    /// A new scratch directory under `parent`, after removing the ones studies that were
    /// killed left there (each said on stderr).
    pub fn create(parent: &Path) -> anyhow::Result<Scratch> {
        let parent_shown = parent.display();
        anyhow::ensure!(
            parent.is_dir(),
            "--dir {parent_shown} is not a directory; create it or point --dir at one"
        );
        Scratch::create_for(parent, "").map_err(|error| {
            anyhow::anyhow!("cannot create a scratch directory in {parent_shown} ({error}); pick a writable --dir")
        })
    }

    /// `create`, for anything ringside writes and must not leave behind (`run`'s contender
    /// sources): `label` names what it holds (`ringside-LABEL-PID-RANDOM`), and killed, it is
    /// swept like a study's.
    pub fn create_for(parent: &Path, label: &str) -> std::io::Result<Scratch> {
        for (stale, bytes) in sweep(parent) {
            eprintln!(
                "ringside: removed {} ({} bytes), the scratch directory of a ringside that was \
                 killed",
                stale.display(),
                bytes
            );
        }
        let label = match label {
            "" => String::new(),
            label => format!("{label}-"),
        };
        let dir = parent.join(format!(
            "{SCRATCH_PREFIX}{label}{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir(&dir)?;
        let lock = match lock(&dir) {
            Ok(lock) => lock,
            Err(error) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(error);
            }
        };
        let file = dir.join("data.bin");
        Ok(Scratch {
            dir,
            file,
            _lock: lock,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
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
        // Removed while still locked; the lock goes with the field after.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The lock file of a new scratch directory, locked, then moved to its name.
fn lock(dir: &Path) -> std::io::Result<File> {
    let staged = dir.join(LOCK_FILE_STAGED);
    let lock = File::create(&staged)?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
    std::fs::rename(&staged, dir.join(LOCK_FILE))?;
    Ok(lock)
}

/// Removes the scratch directories under `parent` whose owner is gone (their lock file's
/// lock can be taken), and returns each with the bytes it held. A directory without a lock
/// file (one being made, or not ringside's) is left alone.
pub fn sweep(parent: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let ours = entry
            .file_name()
            .to_string_lossy()
            .starts_with(SCRATCH_PREFIX);
        if !ours || !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let Ok(lock) = File::open(dir.join(LOCK_FILE)) else {
            continue;
        };
        let free = rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive);
        if free.is_err() {
            continue; // Its owner lives.
        }
        let bytes = bytes_under(&dir);
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed.push((dir, bytes));
        }
    }
    removed
}

/// The bytes of the files under `dir`, at any depth (symbolic links not followed).
fn bytes_under(dir: &Path) -> u64 {
    (std::fs::read_dir(dir).into_iter().flatten().flatten())
        .filter_map(|entry| {
            Some((
                entry.path(),
                entry.file_type().ok()?,
                entry.metadata().ok()?,
            ))
        })
        .map(|(path, kind, metadata)| match kind.is_dir() {
            true => bytes_under(&path),
            false => metadata.len(),
        })
        .sum()
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
            let data = AlignedBuffer::random_until(3 << 20, 1, || false);
            std::fs::write(&path, data.as_slice()).unwrap();
            assert!(verify_file(&path, data.as_slice()).unwrap());
            let mut changed = data.as_slice().to_vec();
            changed[(2 << 20) + 17] ^= 1;
            assert!(!verify_file(&path, &changed).unwrap());
        }
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    /// A directory whose lock is free is a dead owner's and is swept; a live owner's (locked
    /// through another open file, as another process would hold it), one without a lock file
    /// and anything not named as scratch are left.
    #[test]
    fn only_scratch_whose_owner_is_gone_is_swept() {
        let parent = tempfile::tempdir().unwrap();
        let live = Scratch::create(parent.path()).unwrap();
        std::fs::write(live.file_path(), b"live").unwrap();
        let dead = parent.path().join("ringside-1-2");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(LOCK_FILE), b"").unwrap();
        std::fs::write(dead.join("data.bin"), vec![0u8; 5000]).unwrap();
        let making = parent.path().join("ringside-3-4");
        std::fs::create_dir(&making).unwrap();
        let other = parent.path().join("mine");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(LOCK_FILE), b"").unwrap();
        assert_eq!(sweep(parent.path()), [(dead.clone(), 5000)]);
        assert!(!dead.exists());
        assert!(live.file_path().exists() && making.exists() && other.exists());
        let next = Scratch::create(parent.path()).unwrap();
        assert!(live.file_path().exists());
        drop((live, next));
        let left: Vec<_> = std::fs::read_dir(parent.path())
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }
}
