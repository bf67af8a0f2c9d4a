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

#![forbid(unsafe_code)]

/// Now, on hangar's clock.
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Now on hangar's clock in µs. The anchor is taken in µs, not ms: two
/// clocks each cut to whole ms put hangar's up to 1 ms ahead of the wall
/// clock, and an agent's transcript line written in the same ms as the
/// prompt hangar typed then looked older than the prompt (so a finished
/// turn read as the one before).
fn now_us() -> u64 {
    static ANCHOR: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    // Wall first: the steady read after it puts hangar's clock behind the
    // wall clock by the moment between them, never ahead.
    let (wall_at_start, steady_at_start) = *ANCHOR.get_or_init(|| (wall_us(), steady_us()));
    wall_at_start.saturating_add(steady_us().saturating_sub(steady_at_start))
}

/// The wall clock as it is now, for comparing with times other programs
/// wrote (file names and dates of transcripts).
pub fn wall_ms() -> u64 {
    wall_us() / 1000
}

/// A time another program wrote by the wall clock (a transcript line's
/// timestamp), on hangar's clock: the same moment, whatever the wall clock
/// was stepped by since the daemon started.
pub fn from_wall_ms(wall: u64) -> u64 {
    // The two reads are a moment apart; the offset is whole ms, rounded.
    let offset_us = now_us() as i64 - wall_us() as i64;
    let offset_ms = (offset_us + offset_us.signum() * 500) / 1000;
    wall.saturating_add_signed(offset_ms)
}

fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Microseconds on a clock that only moves forward.
fn steady_us() -> u64 {
    use nix::time::ClockId;
    #[cfg(target_os = "linux")]
    const CLOCK: ClockId = ClockId::CLOCK_BOOTTIME;
    #[cfg(not(target_os = "linux"))]
    const CLOCK: ClockId = ClockId::CLOCK_MONOTONIC;
    let Ok(ts) = nix::time::clock_gettime(CLOCK) else {
        return 0;
    };
    (ts.tv_sec() as u64)
        .saturating_mul(1_000_000)
        .saturating_add(ts.tv_nsec() as u64 / 1_000)
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

    #[test]
    fn hangars_clock_is_never_ahead_of_the_wall_clock_it_started_from() {
        // A transcript line written after a prompt hangar typed must not
        // read as older than the prompt: hangar's ms must never be past the
        // wall clock's at the same moment (no step of the wall clock here).
        now_ms();
        for _ in 0..20_000 {
            let before = wall_ms();
            let ours = now_ms();
            let after = wall_ms();
            // Behind by the moment between the anchor's two reads at most.
            assert!(
                ours <= after && before <= ours + 1,
                "{before} {ours} {after}"
            );
        }
    }

    #[test]
    fn a_wall_clock_time_maps_onto_hangars_clock_unchanged_without_a_step() {
        now_ms();
        for _ in 0..1_000 {
            let wall = wall_ms();
            let mapped = from_wall_ms(wall);
            assert!(mapped.abs_diff(wall) <= 1, "{wall} -> {mapped}");
        }
        assert_eq!(
            from_wall_ms(1_735_787_045_678).abs_diff(1_735_787_045_678),
            0
        );
    }
}
