//! Reading a document someone hands ringside (a results document for `report`, `compare` and
//! `merge`, a claim file from `--claims-dir`): a regular file of at most `--max-input` bytes,
//! both checked on the open file before a byte is read. Before, the whole file was read
//! whatever it was: a 2 GiB file took 2 GiB of memory before its first byte was judged,
//! `/dev/zero` was read until allocation failed, and a FIFO with no writer blocked the open.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The default of `--max-input`: far above any document ringside writes (a default `run`'s is
/// about 3 MB, 834 rows; 20,000 load rows with their histograms 93 MB), far below what would
/// strain a machine.
pub const INPUT_BYTES_DEFAULT: u64 = 512 << 20;

static INPUT_BYTES_MAX: AtomicU64 = AtomicU64::new(INPUT_BYTES_DEFAULT);

/// Sets the largest document this process reads (`--max-input`), once, as the command line is
/// parsed.
pub fn set_input_limit(bytes: u64) {
    INPUT_BYTES_MAX.store(bytes, Ordering::Relaxed);
}

pub fn input_limit() -> u64 {
    INPUT_BYTES_MAX.load(Ordering::Relaxed)
}

/// The text of the document at `path`: refused, before anything is read, unless it is a
/// regular file of at most `input_limit()` bytes (a file that grows past it while read is
/// refused too); and refused unless it is UTF-8. The open does not wait (O_NONBLOCK), so a
/// FIFO is refused as what it is, not waited on.
pub fn read_document(path: &Path) -> anyhow::Result<String> {
    let limit = input_limit();
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    let what = if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_dir() {
        Some("a directory")
    } else {
        None
    };
    if let Some(what) = what {
        anyhow::bail!("it is {what}, not a regular file; ringside reads documents only from files");
    }
    let size = file.metadata()?.len();
    anyhow::ensure!(size <= limit, "{}", too_large(size, limit));
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    anyhow::ensure!(
        bytes.len() as u64 <= limit,
        "it grew while read, past {}",
        too_large(bytes.len() as u64, limit)
    );
    String::from_utf8(bytes).map_err(|error| {
        anyhow::anyhow!(
            "it is not UTF-8 text (byte {} is not)",
            error.utf8_error().valid_up_to()
        )
    })
}

/// The sentence for a document of `size` bytes over `limit`.
fn too_large(size: u64, limit: u64) -> String {
    format!(
        "it holds {size} bytes ({} MiB), more than --max-input allows ({limit} bytes, {} MiB); \
         raise --max-input if it is a document you trust",
        size >> 20,
        limit >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_the_limit_is_read_and_anything_else_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.json");
        std::fs::write(&path, "{}\n").unwrap();
        assert_eq!(read_document(&path).unwrap(), "{}\n");
        let error = read_document(Path::new("/dev/zero")).unwrap_err();
        assert!(error.to_string().contains("a character device"), "{error}");
        let error = read_document(dir.path()).unwrap_err();
        assert!(error.to_string().contains("a directory"), "{error}");
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let error = read_document(&fifo).unwrap_err();
        assert!(error.to_string().contains("a FIFO"), "{error}");
        std::fs::write(&path, [b'{', 0xff, b'}']).unwrap();
        let error = read_document(&path).unwrap_err();
        assert!(error.to_string().contains("byte 1 is not"), "{error}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        // Sparse: 3 GiB that take no disk and, read, would take 3 GiB of memory.
        File::create(&path).unwrap().set_len(3 << 30).unwrap();
        let error = read_document(&path).unwrap_err().to_string();
        assert!(
            error.contains("it holds 3221225472 bytes (3072 MiB)"),
            "{error}"
        );
        assert!(error.contains("--max-input"), "{error}");
    }
}
