//! The directory file workloads write into: which filesystem and mount it is, how much room
//! it has, and whether O_DIRECT works there. A tmpfs target never touches a disk, and a mount
//! with `discard` makes deletes slow down the next run, so both are flagged.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rustix::fs::{Mode, OFlags};
use serde::Serialize;

use super::mountinfo;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Target {
    pub path: String,
    /// Why the directory could not be probed; the other fields are empty then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// From the statfs magic number.
    pub fs_type: String,
    /// False for memory filesystems (tmpfs, ramfs): file results there measure memory.
    pub real_disk: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_note: Option<&'static str>,
    pub mount_point: String,
    pub mount_source: String,
    /// Per-mount options (rw, relatime, ...).
    pub mount_options: String,
    /// The filesystem's own options (discard, journalling, ...).
    pub fs_options: String,
    /// Deletes send discards to the device that land during the next run.
    pub discard: bool,
    pub bytes_free: u64,
    pub bytes_total: u64,
    /// A 4 KiB aligned O_DIRECT write to a temporary file worked.
    pub o_direct: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub o_direct_error: Option<String>,
}

/// The canonical directory, or one sentence saying why it cannot be probed.
pub fn check_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let canonical = dir
        .canonicalize()
        .with_context(|| format!("cannot probe --dir {}", dir.display()))?;
    anyhow::ensure!(
        canonical.is_dir(),
        "cannot probe --dir {}: it is not a directory",
        dir.display()
    );
    Ok(canonical)
}

impl Target {
    pub fn read(dir: &Path) -> Target {
        match check_dir(dir) {
            Ok(canonical) => Target::read_canonical(&canonical),
            Err(error) => Target {
                path: dir.display().to_string(),
                error: Some(format!("{error:#}")),
                ..Target::default()
            },
        }
    }

    fn read_canonical(dir: &Path) -> Target {
        let mut target = Target {
            path: dir.display().to_string(),
            ..Target::default()
        };
        match rustix::fs::statfs(dir) {
            Ok(stat) => {
                let block_bytes = stat.f_bsize as u64;
                target.fs_type = fs_name(stat.f_type as u64);
                target.bytes_free = stat.f_bavail * block_bytes;
                target.bytes_total = stat.f_blocks * block_bytes;
            }
            Err(error) => target.error = Some(format!("statfs failed: {error}")),
        }
        target.real_disk = !matches!(target.fs_type.as_str(), "tmpfs" | "ramfs");
        target.fs_note = fs_note(&target.fs_type);
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some(mount) = mountinfo::mount_of(&mountinfo, dir) {
            target.mount_point = mount.mount_point.display().to_string();
            target.mount_source = mount.source.clone();
            target.mount_options = mount.mount_options.clone();
            target.fs_options = mount.super_options.clone();
            target.discard = mount.has_option("discard");
        }
        let direct = try_o_direct(dir);
        target.o_direct = direct.is_ok();
        target.o_direct_error = direct.err();
        target
    }
}

/// Names a statfs `f_type` magic number (linux/magic.h).
pub fn fs_name(magic: u64) -> String {
    let name = match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58F6 => "ramfs",
        0x794C_7630 => "overlay",
        0x6969 => "nfs",
        0xF2F5_2010 => "f2fs",
        0x2FC1_2FC1 => "zfs",
        0xCA45_1A4E => "bcachefs",
        0x6573_5546 => "fuse",
        0xFF53_4D42 => "cifs",
        0xFE53_4D42 => "smb2",
        0x0102_1997 => "9p",
        0x7371_7368 => "squashfs",
        _ => return format!("unknown (0x{magic:x})"),
    };
    name.to_string()
}

fn fs_note(fs_type: &str) -> Option<&'static str> {
    match fs_type {
        "tmpfs" | "ramfs" => Some("not a real disk: file results measure memory, not a device"),
        "overlay" => Some("overlay: writes land on the upper layer's filesystem"),
        "nfs" | "cifs" | "smb2" | "9p" | "fuse" => {
            Some("network or user-space filesystem: results include its transport")
        }
        _ => None,
    }
}

/// One 4 KiB block, aligned as O_DIRECT requires.
#[repr(C, align(4096))]
struct AlignedBlock([u8; 4096]);

/// Writes one aligned block with O_DIRECT to a temporary file in `dir`, then removes it.
fn try_o_direct(dir: &Path) -> Result<(), String> {
    let path = dir.join(format!(".ringside-probe-direct-{}", std::process::id()));
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::DIRECT | OFlags::CLOEXEC;
    let opened = rustix::fs::open(&path, flags, Mode::from_raw_mode(0o600));
    let result = opened
        .map_err(|errno| format!("open with O_DIRECT failed: {}", describe(errno)))
        .and_then(|file| {
            let block = Box::new(AlignedBlock([0xA5; 4096]));
            match rustix::io::pwrite(file.as_fd(), &block.0, 0) {
                Ok(4096) => Ok(()),
                Ok(short) => Err(format!("O_DIRECT write was short: {short} of 4096 bytes")),
                Err(errno) => Err(format!("O_DIRECT write failed: {}", describe(errno))),
            }
        });
    let _ = std::fs::remove_file(&path);
    result
}

/// An errno as "EINVAL (Invalid argument)" for the ones a filesystem gives O_DIRECT.
fn describe(errno: rustix::io::Errno) -> String {
    let name = match errno {
        rustix::io::Errno::INVAL => "EINVAL",
        rustix::io::Errno::OPNOTSUPP => "EOPNOTSUPP",
        rustix::io::Errno::ACCESS => "EACCES",
        rustix::io::Errno::PERM => "EPERM",
        rustix::io::Errno::ROFS => "EROFS",
        rustix::io::Errno::NOSPC => "ENOSPC",
        _ => return std::io::Error::from(errno).to_string(),
    };
    format!("{name} ({})", std::io::Error::from(errno))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_name_common_filesystems() {
        assert_eq!(fs_name(0xEF53), "ext4");
        assert_eq!(fs_name(0x0102_1994), "tmpfs");
        assert_eq!(fs_name(0x5846_5342), "xfs");
        assert_eq!(fs_name(0x1234), "unknown (0x1234)");
        assert!(fs_note("tmpfs").unwrap().contains("not a real disk"));
        assert_eq!(fs_note("ext4"), None);
    }

    #[test]
    fn a_missing_directory_is_one_sentence() {
        let error = check_dir(Path::new("/nonexistent/ringside")).unwrap_err();
        let text = format!("{error:#}");
        assert!(
            text.starts_with("cannot probe --dir /nonexistent/ringside"),
            "{text}"
        );
        let target = Target::read(Path::new("/nonexistent/ringside"));
        assert!(target.error.is_some());
    }

    #[test]
    fn a_temp_directory_is_probed_and_left_clean() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::read(dir.path());
        assert_eq!(target.error, None);
        assert!(target.bytes_total > 0);
        assert!(!target.mount_point.is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
