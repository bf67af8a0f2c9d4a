//! Pages the fake shares with every other fake that maps the same file, as
//! the node processes of many Claude agents share the pages of node's
//! binary and of the CLI's code: each counts them whole in its resident set,
//! but only its share in its proportional set size (`/proc/PID/smaps_rollup`).
//! `FAKE_AGENT_SHARED_FILE=<path>` maps the file and reads every page.
//!
//! The mapping is read-only and kept until the process ends; the one
//! `unsafe` call of this module is the `mmap` itself.

use std::os::fd::AsRawFd;

/// Map `path` shared and read-only and touch every page, so each counts in
/// this process's resident set. Returns the bytes mapped.
#[allow(unsafe_code)]
pub fn map_and_touch(path: &std::path::Path) -> std::io::Result<usize> {
    let file = std::fs::File::open(path)?;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: a fresh read-only shared mapping of a file we opened, at an
    // address the kernel chooses; nothing else aliases it mutably, and it
    // is never unmapped, so the slice below stays valid for the process's
    // life. The fd may close after mmap returns (the mapping holds the file).
    let slice: &'static [u8] = unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        std::slice::from_raw_parts(addr as *const u8, len)
    };
    // One byte per page brings every page in (black_box keeps the reads).
    let mut sum = 0u8;
    for page in slice.chunks(4096) {
        sum = sum.wrapping_add(page[0]);
    }
    std::hint::black_box(sum);
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollup_kb(field: &str) -> u64 {
        let text = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn a_mapped_file_counts_in_the_resident_set() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime");
        std::fs::write(&path, vec![7u8; 8 * 1024 * 1024]).unwrap();
        let before = rollup_kb("Rss:");
        assert_eq!(map_and_touch(&path).unwrap(), 8 * 1024 * 1024);
        let after = rollup_kb("Rss:");
        assert!(after >= before + 7 * 1024, "{before} kB -> {after} kB");
    }
}
