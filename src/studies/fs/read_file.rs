//! The read study's file: by default a scratch file laid out anew for every invocation and
//! removed at its end; with `--filename` a file the user names, laid out once and kept, as fio
//! keeps the file it lays out.
//!
//! A named file is laid out only when it is absent or empty. One that exists is read as it is
//! only if its length is the study's (`--size` in whole `--block-size` blocks) and its blocks
//! carry the stamps of `--seed`: every block when the study reads it warm (which caches it, as
//! the layout would), a spread of blocks otherwise. Any other file is refused and left as it
//! is: it may be someone's data, or a layout for other flags. Every read still checks its
//! block's stamp, so a block changed after this check fails its row's verification.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::scratch::Scratch;
use crate::engines::blocking::file::io_error;
use crate::engines::file::Stamp;
use crate::units::format_size;

/// Bytes laid out (and checked) per call.
const CHUNK: usize = 1 << 20;

/// Blocks a spread check of a kept file reads (the first and last among them).
const SPREAD: u64 = 1024;

/// What a read study's file is made of: its blocks, their size, and the stamp's seed.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub blocks: u64,
    pub block_size: usize,
    pub seed: u64,
}

impl Layout {
    fn bytes(&self) -> u64 {
        self.blocks * self.block_size as u64
    }
}

/// Where the study's file is, and whether this invocation laid it out.
pub enum ReadFile {
    /// Laid out in a scratch directory, removed on drop.
    Scratch(Scratch),
    /// Named with `--filename`; `laid_out` when this invocation wrote it, not when it was kept.
    Named { path: PathBuf, laid_out: bool },
}

impl ReadFile {
    /// A scratch file under `dir`, laid out.
    pub fn scratch(dir: &Path, layout: Layout) -> anyhow::Result<ReadFile> {
        let scratch = Scratch::create(dir)?;
        lay_out(&scratch.open(false)?, layout, Interruptible::Yes)?;
        Ok(ReadFile::Scratch(scratch))
    }

    /// The file at `path`: laid out if absent or empty, kept if it is this layout (`every`
    /// block checked, or a spread of them), refused otherwise.
    pub fn named(path: &Path, layout: Layout, every: bool) -> anyhow::Result<ReadFile> {
        let shown = path.display();
        let length = match std::fs::metadata(path) {
            Ok(metadata) if !metadata.is_file() => {
                anyhow::bail!("--filename {shown} is not a regular file; name a file")
            }
            Ok(metadata) => metadata.len(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => 0,
            Err(error) => anyhow::bail!("cannot look at --filename {shown} ({error})"),
        };
        if length == 0 {
            lay_out_named(path, layout)?;
            return Ok(ReadFile::Named {
                path: path.to_path_buf(),
                laid_out: true,
            });
        }
        let refuse = |what: String| {
            anyhow::anyhow!(
                "--filename {shown} {what}, so it is not the layout of this --size, --block-size \
                 and --seed; it was left as it is: delete it (ringside lays it out again) or \
                 name another file"
            )
        };
        if length != layout.bytes() {
            return Err(refuse(format!(
                "holds {} where {} blocks of {} take {}",
                format_size(length),
                layout.blocks,
                format_size(layout.block_size as u64),
                format_size(layout.bytes())
            )));
        }
        if let Some(block) = first_unstamped(path, layout, every)? {
            return Err(refuse(format!("has block {block} without its stamp")));
        }
        Ok(ReadFile::Named {
            path: path.to_path_buf(),
            laid_out: false,
        })
    }

    pub fn path(&self) -> &Path {
        match self {
            ReadFile::Scratch(scratch) => scratch.file_path(),
            ReadFile::Named { path, .. } => path,
        }
    }

    /// The directory the probe describes (its filesystem and device).
    pub fn dir(&self) -> PathBuf {
        let parent = self.path().parent().unwrap_or(Path::new("."));
        match parent.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => parent.to_path_buf(),
        }
    }

    /// Opens the file for the reads: read-only (as fio opens a file it reads), O_DIRECT when
    /// asked.
    pub fn open(&self, direct: bool) -> anyhow::Result<File> {
        let mut options = OpenOptions::new();
        options.read(true);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        options.open(self.path()).map_err(|error| {
            if direct && error.raw_os_error() == Some(libc::EINVAL) {
                anyhow::anyhow!(
                    "this filesystem refuses O_DIRECT ({error}); drop --direct or use a --dir on a \
                     disk filesystem such as ext4 or xfs"
                )
            } else {
                anyhow::anyhow!("cannot open {} ({error})", self.path().display())
            }
        })
    }

    /// What a row says of its file: `scratch` (laid out for this invocation and removed),
    /// `laid out` (named, written by this invocation, kept), `kept` (named, as found).
    pub fn layout_name(&self) -> &'static str {
        match self {
            ReadFile::Scratch(_) => "scratch",
            ReadFile::Named { laid_out: true, .. } => "laid out",
            ReadFile::Named {
                laid_out: false, ..
            } => "kept",
        }
    }
}

/// Lays the named file out, creating it (or filling it where it is empty); a layout that fails
/// removes the file it wrote, so a later invocation does not find half of one.
fn lay_out_named(path: &Path, layout: Layout) -> anyhow::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|error| {
            anyhow::anyhow!("cannot create --filename {} ({error})", path.display())
        })?;
    lay_out(&file, layout, Interruptible::No).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}

/// Whether a layout stops when the stop flag rises: a scratch file's does (it is removed, and no
/// run reads it), a kept file's does not (a half-written `--filename` would be kept).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Interruptible {
    Yes,
    No,
}

/// Writes the file once, untimed: random bytes from the seed, each block stamped, then synced so
/// O_DIRECT reads see it and the cold state's dropped pages are clean.
pub fn lay_out(file: &File, layout: Layout, interruptible: Interruptible) -> anyhow::Result<()> {
    let Layout {
        blocks, block_size, ..
    } = layout;
    let stamp = Stamp::new(layout.seed);
    let blocks_per_chunk = (CHUNK / block_size).max(1) as u64;
    let mut rng = fastrand::Rng::with_seed(layout.seed);
    let mut chunk = vec![0u8; blocks_per_chunk as usize * block_size];
    for first in (0..blocks).step_by(blocks_per_chunk as usize) {
        if interruptible == Interruptible::Yes && crate::system::stop::stopped() {
            return Ok(());
        }
        let count = blocks_per_chunk.min(blocks - first) as usize;
        let chunk = &mut chunk[..count * block_size];
        rng.fill(chunk);
        for (index, block) in chunk.chunks_mut(block_size).enumerate() {
            stamp.write(block, (first as usize + index) as u32);
        }
        file.write_all_at(chunk, first * block_size as u64)
            .map_err(|error| io_error("laying out the file", error))?;
    }
    file.sync_all()
        .map_err(|error| io_error("syncing the laid-out file", error))
}

/// The first block of `path` (of `layout`'s length) without its stamp: every block when
/// `every` (read in order, in 1 MiB pieces, through the page cache), else a spread of
/// `SPREAD` blocks from the first to the last.
fn first_unstamped(path: &Path, layout: Layout, every: bool) -> anyhow::Result<Option<u64>> {
    let file = File::open(path)
        .map_err(|error| anyhow::anyhow!("cannot open --filename {} ({error})", path.display()))?;
    let stamp = Stamp::new(layout.seed);
    let block_size = layout.block_size;
    let per_read = match every {
        true => (CHUNK / block_size).max(1) as u64,
        false => 1,
    };
    let step = match every {
        true => per_read,
        false => (layout.blocks / SPREAD).max(1),
    };
    let mut buffer = vec![0u8; per_read as usize * block_size];
    let firsts = (0..layout.blocks).step_by(step as usize);
    for first in firsts.chain([layout.blocks - 1]) {
        let count = per_read.min(layout.blocks - first) as usize;
        let read = &mut buffer[..count * block_size];
        file.read_exact_at(read, first * block_size as u64)
            .map_err(|error| io_error("checking the kept file", error))?;
        let mut blocks = read.chunks(block_size).zip(first..);
        if let Some((_, bad)) = blocks.find(|&(data, at)| !stamp.matches(data, at as u32)) {
            return Ok(Some(bad));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: Layout = Layout {
        blocks: 3000,
        block_size: 4096,
        seed: 5,
    };

    #[test]
    fn a_named_file_is_laid_out_once_then_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reads.bin");
        let first = ReadFile::named(&path, LAYOUT, false).unwrap();
        assert_eq!(first.layout_name(), "laid out");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), LAYOUT.bytes());
        for every in [false, true] {
            let again = ReadFile::named(&path, LAYOUT, every).unwrap();
            assert_eq!(again.layout_name(), "kept");
        }
        drop(first);
        assert!(path.exists(), "a named file stays");
    }

    #[test]
    fn a_file_of_another_layout_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reads.bin");
        ReadFile::named(&path, LAYOUT, false).unwrap();
        let other_seed = Layout { seed: 6, ..LAYOUT };
        let error = ReadFile::named(&path, other_seed, false).err().unwrap();
        assert!(
            error.to_string().contains("block 0 without its stamp"),
            "{error}"
        );
        let other_size = Layout {
            blocks: 2999,
            ..LAYOUT
        };
        let error = ReadFile::named(&path, other_size, false).err().unwrap();
        assert!(error.to_string().contains("left as it is"), "{error}");
        // A block the spread skips, changed: only the check of every block sees it.
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[0xee; 8], 7 * 4096).unwrap();
        assert!(ReadFile::named(&path, LAYOUT, false).is_ok());
        let error = ReadFile::named(&path, LAYOUT, true).err().unwrap();
        assert!(error.to_string().contains("block 7 without"), "{error}");
        let foreign = dir.path().join("notes.txt");
        std::fs::write(&foreign, b"someone's data").unwrap();
        assert!(ReadFile::named(&foreign, LAYOUT, false).is_err());
        assert_eq!(std::fs::read(&foreign).unwrap(), b"someone's data");
    }
}
