//! hangar's clock, in ms since the Unix epoch: the wall clock as read once
//! (the first call, which the daemon makes at its start), plus the time
//! elapsed since on a clock that never jumps (`CLOCK_BOOTTIME` on Linux,
//! which keeps counting through a suspend, so a laptop's night still ages
//! its sessions), corrected towards the wall clock while the two differ only
//! by a slew (NTP's gradual correction), never backwards.
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
    static CLOCK: std::sync::Mutex<Option<Anchor>> = std::sync::Mutex::new(None);
    // Wall first: the steady read after it puts hangar's clock behind the
    // wall clock by the moment between them, never ahead.
    let wall = wall_us();
    let steady = steady_us();
    let mut clock = CLOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    clock
        .get_or_insert_with(|| Anchor::new(wall, steady))
        .read(wall, steady)
}

/// hangar's clock: the wall clock while it only drifts, the anchored steady
/// clock when it was stepped.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    /// hangar's time minus the steady clock's, in µs.
    offset: i64,
    /// The steady clock at the last read, and what that read returned.
    last_steady: u64,
    last: u64,
}

impl Anchor {
    /// A difference from the wall clock of more than this (plus 1 ms per
    /// second since the last read: NTP slews by at most 0.5 ms a second) is a
    /// step of the wall clock, which hangar does not follow while it runs.
    const STEP_US: u64 = 1_000_000;

    fn new(wall: u64, steady: u64) -> Anchor {
        Anchor {
            offset: wall as i64 - steady as i64,
            last_steady: steady,
            last: wall,
        }
    }

    fn read(&mut self, wall: u64, steady: u64) -> u64 {
        let anchored = steady as i64 + self.offset;
        let drift = wall as i64 - anchored;
        let since_last = steady.saturating_sub(self.last_steady);
        // Without following the wall clock's slew, hangar's clock ran ahead
        // of it (NTP slows the wall clock against CLOCK_BOOTTIME by tens of
        // µs a second), and a transcript line written in the same ms as a
        // prompt hangar typed read as older than the prompt.
        if drift.unsigned_abs() <= Self::STEP_US + since_last / 1_000 {
            self.offset += drift;
        }
        self.last_steady = steady;
        self.last = self.last.max((steady as i64 + self.offset).max(0) as u64);
        self.last
    }
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

/// How far local time is ahead of UTC at `ms` (negative west of Greenwich),
/// in milliseconds, from the system's time zone rules (`TZ`,
/// `/etc/localtime`, read by jiff). 0 when it cannot tell. Shared by the
/// daemon (transcript folders, limit texts) and the client (the times it
/// prints), which reaches no daemon code for it.
pub fn local_offset_ms(ms: u64) -> i64 {
    let Ok(at) = jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX)) else {
        return 0;
    };
    i64::from(jiff::tz::TimeZone::system().to_offset(at).seconds()) * 1000
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
    fn a_slewed_wall_clock_is_followed_and_a_stepped_one_is_not() {
        const START: u64 = 1_764_700_000_000_000; // 2025-12-02, in µs
        let mut clock = Anchor::new(START, 50);
        // The wall clock runs 400 µs a second slower than the steady one
        // (an NTP slew): hangar stays on the wall clock, never ahead of it.
        let mut wall = START;
        for second in 1..=100u64 {
            wall += 999_600;
            assert_eq!(clock.read(wall, 50 + second * 1_000_000), wall);
        }
        // Stepped a day back: hangar keeps counting from where it was.
        let before = clock.read(wall, 50 + 101 * 1_000_000);
        let after = clock.read(wall - 86_400_000_000, 50 + 102 * 1_000_000);
        assert_eq!(after, before + 1_000_000);
        // Stepped a day forward: the same.
        let later = clock.read(wall + 86_400_000_000, 50 + 103 * 1_000_000);
        assert_eq!(later, after + 1_000_000);
    }

    #[test]
    fn the_clock_never_goes_back_when_the_wall_clock_does_by_a_little() {
        let mut clock = Anchor::new(5_000_000, 0);
        let first = clock.read(5_000_000, 10);
        // 300 ms back: within a slew's reach, followed, but never backwards.
        let second = clock.read(4_700_020, 20);
        assert!(second >= first, "{first} then {second}");
        let third = clock.read(4_700_030, 1_000_000);
        assert!(third >= second);
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
