//! The real operating system: `kill(2)` on process groups, `/proc` for
//! process facts, and the daemon's clock anchored at its start.

use super::{Clock, ProcessControl};

/// The real operating system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealOs;

impl ProcessControl for RealOs {
    fn signal_group(&self, pgid: u32, signal: i32) -> bool {
        if pgid <= 1 {
            // kill(-1) or kill(-0) would signal far more than one group.
            return false;
        }
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(-(pgid as i32), signal) == 0 }
    }

    fn start_time(&self, pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_start_time(&stat)
    }
}

impl Clock for RealOs {
    fn now_ms(&self) -> u64 {
        now_ms()
    }
    fn wall_ms(&self) -> u64 {
        wall_ms()
    }
}

/// The daemon's clock, in ms since the Unix epoch: the wall clock as read at
/// the daemon's start, plus the time elapsed since on a clock that never
/// jumps (`CLOCK_BOOTTIME` on Linux, which keeps counting through a suspend,
/// so a laptop's night still ages its sessions).
///
/// Every timestamp the daemon stores and every age it computes (idle,
/// parked, tombstones, activity) comes from here, so a wall clock stepped a
/// day forward or back while it runs neither makes a session "idle for a
/// day" nor yields a time before the one just stored. The price: a step of
/// the wall clock (an NTP correction too) is taken at the next start.
pub fn now_ms() -> u64 {
    static ANCHOR: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    let (wall_at_start, steady_at_start) = *ANCHOR.get_or_init(|| (wall_ms(), steady_ms()));
    wall_at_start.saturating_add(steady_ms().saturating_sub(steady_at_start))
}

/// The wall clock as it is now, for comparing with times other programs
/// wrote (file names and dates of transcripts).
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Milliseconds on a clock that only moves forward.
fn steady_ms() -> u64 {
    #[cfg(target_os = "linux")]
    const CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
    #[cfg(not(target_os = "linux"))]
    const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
    // SAFETY: clock_gettime writes into the zeroed timespec we own.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(CLOCK, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1000)
        .saturating_add(ts.tv_nsec as u64 / 1_000_000)
}

/// Field 22 of a `/proc/<pid>/stat` line. The command name (field 2) may
/// contain spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_past_a_command_name_with_spaces() {
        let stat = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(stat), Some(987654));
    }

    #[test]
    fn our_own_start_time_is_known() {
        assert!(RealOs.start_time(std::process::id()).is_some());
    }
}
