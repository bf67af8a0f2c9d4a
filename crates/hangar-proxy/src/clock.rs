//! The proxy's clock, in ms since the Unix epoch: the same rule as the
//! daemon's `now_ms` (the wall clock read once, plus the time elapsed since
//! on a clock that never jumps), kept here so the proxy needs no daemon.
//!
//! Every time the proxy writes (a capture line's `ts`, a capture file's
//! date, an error's time) and every time it compares with them (the usage
//! replay's start) comes from here, so they agree with each other even when
//! the wall clock is stepped while the daemon runs.

/// Now, on the proxy's clock.
pub fn now_ms() -> u64 {
    static ANCHOR: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    let (wall_at_start, steady_at_start) = *ANCHOR.get_or_init(|| (wall_ms(), steady_ms()));
    wall_at_start.saturating_add(steady_ms().saturating_sub(steady_at_start))
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Milliseconds on a clock that only moves forward (`CLOCK_BOOTTIME` on
/// Linux, which keeps counting through a suspend).
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
