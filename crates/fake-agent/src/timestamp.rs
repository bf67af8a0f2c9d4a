//! Wall-clock times written by hand, in the two shapes the real CLIs use.
//!
//! Claude Code writes RFC 3339 UTC with milliseconds (`2025-01-02T03:04:05.678Z`);
//! Codex names rollout files `rollout-2025-01-02T03-04-05-<id>.jsonl` under
//! `sessions/2025/01/02/`. No time-zone database is involved: everything is UTC.

use std::time::{SystemTime, UNIX_EPOCH};

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

impl UtcTime {
    pub fn now() -> UtcTime {
        UtcTime::from_system(SystemTime::now())
    }

    pub fn from_system(t: SystemTime) -> UtcTime {
        // A clock before 1970 is a broken machine; treat it as the epoch.
        let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let at = time::OffsetDateTime::from(UNIX_EPOCH + since);
        UtcTime {
            year: i64::from(at.year()),
            month: u32::from(u8::from(at.month())),
            day: u32::from(at.day()),
            hour: u32::from(at.hour()),
            minute: u32::from(at.minute()),
            second: u32::from(at.second()),
            millis: u32::from(at.millisecond()),
        }
    }

    /// `2025-01-02T03:04:05.678Z`
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }

    /// `2025-01-02T03-04-05`, the stamp inside a Codex rollout file name.
    pub fn rollout_stamp(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, millis: u64) -> UtcTime {
        UtcTime::from_system(UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis))
    }

    #[test]
    fn the_epoch_is_written_as_rfc3339_utc() {
        assert_eq!(at(0, 0).rfc3339(), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn a_leap_day_and_milliseconds_are_written_exactly() {
        // 2024-02-29T23:59:58.123Z
        assert_eq!(at(1_709_251_198, 123).rfc3339(), "2024-02-29T23:59:58.123Z");
    }

    #[test]
    fn the_turn_of_a_century_year_lands_on_the_right_day() {
        // 2100-03-01T00:00:00Z (2100 is not a leap year)
        assert_eq!(at(4_107_542_400, 0).rfc3339(), "2100-03-01T00:00:00.000Z");
    }

    #[test]
    fn rollout_stamps_use_dashes_for_the_time() {
        assert_eq!(
            at(1_709_251_198, 999).rollout_stamp(),
            "2024-02-29T23-59-58"
        );
    }
}
