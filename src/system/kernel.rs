//! The running kernel's version, for what the opcode probe cannot see (a multishot variant
//! shares its base opcode) and for the minimum kernel the engine table states.

/// The Linux version as (major, minor) from a release string (`6.18.44-fc-v669`).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The running kernel's (major, minor).
pub fn running_kernel_version() -> Option<(u32, u32)> {
    kernel_version(
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()?
            .trim(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_version_reads_vendor_releases() {
        assert_eq!(kernel_version("6.18.44-fc-v669"), Some((6, 18)));
        assert_eq!(kernel_version("5.19.0"), Some((5, 19)));
        assert_eq!(kernel_version("garbage"), None);
    }
}
