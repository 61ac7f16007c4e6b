//! Which mount a path lives on, from `/proc/self/mountinfo`: its options decide what a file
//! benchmark measures (FINDINGS: with `discard`, deleting a big file sends discards that land
//! during the next run).

use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
    /// Per-mount options (field 6: rw, relatime, ...).
    pub mount_options: String,
    /// Filesystem options after the separator (discard, journalling, ...).
    pub super_options: String,
}

impl Mount {
    /// Whether either option list names `option` exactly.
    pub fn has_option(&self, option: &str) -> bool {
        let mut both = self
            .mount_options
            .split(',')
            .chain(self.super_options.split(','));
        both.any(|each| each == option)
    }
}

/// Parses one mountinfo line:
/// `id parent major:minor root mount_point mount_options [optional...] - fs_type source super`.
pub fn parse_line(line: &str) -> Option<Mount> {
    let (before, after) = line.split_once(" - ")?;
    let fields: Vec<&str> = before.split(' ').collect();
    let mut rest = after.split(' ');
    Some(Mount {
        mount_point: PathBuf::from(unescape(fields.get(4)?)),
        mount_options: fields.get(5)?.to_string(),
        fs_type: rest.next()?.to_string(),
        source: unescape(rest.next()?),
        super_options: rest.next().unwrap_or("").to_string(),
    })
}

/// The mount holding `path` (canonical): the longest mount point that is a prefix of it, the
/// last listed when mounts are stacked on the same point.
pub fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    mountinfo
        .lines()
        .filter_map(parse_line)
        .filter(|mount| path.starts_with(&mount.mount_point))
        .fold(None, |best: Option<Mount>, mount| match best {
            Some(best)
                if best.mount_point.as_os_str().len() > mount.mount_point.as_os_str().len() =>
            {
                Some(best)
            }
            _ => Some(mount),
        })
}

/// Undoes the kernel's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[index], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                index += 4;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict
25 24 0:23 / /dev/shm rw,relatime shared:5 - tmpfs tmpfs rw,size=24684084k
30 25 0:27 / /dev/shm rw,nosuid - tmpfs tmpfs rw,size=1k
40 27 0:40 / /mnt/my\\040disk rw - xfs /dev/vdb rw,attr2
";

    #[test]
    fn parses_fields_around_optional_ones() {
        let mount = parse_line(SAMPLE.lines().nth(1).unwrap()).unwrap();
        assert_eq!(mount.mount_point, Path::new("/dev/shm"));
        assert_eq!(mount.fs_type, "tmpfs");
        assert_eq!(mount.mount_options, "rw,relatime");
        assert_eq!(mount.super_options, "rw,size=24684084k");
    }

    #[test]
    fn longest_prefix_wins_and_discard_is_seen() {
        let root = mount_of(SAMPLE, Path::new("/work/wt-probe")).unwrap();
        assert_eq!(root.fs_type, "ext4");
        assert!(root.has_option("discard"));
        let shm = mount_of(SAMPLE, Path::new("/dev/shm/x")).unwrap();
        assert_eq!(
            shm.super_options, "rw,size=1k",
            "the stacked mount on top wins"
        );
        assert!(!shm.has_option("discard"));
    }

    #[test]
    fn escaped_spaces_and_component_prefixes() {
        let disk = mount_of(SAMPLE, Path::new("/mnt/my disk/f")).unwrap();
        assert_eq!(disk.fs_type, "xfs");
        let other = mount_of(SAMPLE, Path::new("/dev/shmother")).unwrap();
        assert_eq!(
            other.fs_type, "ext4",
            "a path prefix must end at a component"
        );
    }
}
