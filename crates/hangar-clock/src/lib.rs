//! hangar's clock, in ms since the Unix epoch: the wall clock as read once
//! (the first call, which the daemon makes at its start), plus the time
//! elapsed since on a clock that never jumps (`CLOCK_BOOTTIME` on Linux,
//! which keeps counting through a suspend, so a laptop's night still ages
//! its sessions).
//!
//! Every timestamp the daemon stores and every age it computes (idle,
//! parked, tombstones, activity), and every time its proxy writes (a capture
//! line's `ts`, a capture file's date) comes from here, so they agree with
//! each other and a wall clock stepped a day forward or back while the
//! daemon runs neither makes a session "idle for a day" nor yields a time
//! before the one just stored. The price: a step of the wall clock (an NTP
//! correction too) is taken at the next start. A crate of its own so the
//! daemon and the proxy (which never depends on the daemon) share it.

/// Now, on hangar's clock.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_never_goes_back_and_starts_at_the_wall_clock() {
        let wall = wall_ms();
        let a = now_ms();
        let b = now_ms();
        assert!(b >= a);
        // Anchored at the wall clock of the first call, give or take a
        // slow machine's scheduling.
        assert!(a.abs_diff(wall) < 60_000, "{a} vs {wall}");
    }
}
