//! The `FAKE_AGENT_*` environment variables that hangar's tests turn.
//!
//! Pure: reads through a lookup function. A value that does not parse is an
//! error, never silently ignored, so a typo in a test fails loudly.

/// How the fake should fail at start instead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Print Claude Code's expired-token error and exit 1.
    Auth,
    /// Exit with this code.
    Exit(i32),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Knobs {
    pub alloc_mb: Option<usize>,
    /// `FAKE_AGENT_SHARED_FILE=<path>`: map the file shared and read every
    /// page at start (`shared_pages.rs`): pages every fake mapping it
    /// shares, as agents share their runtime's.
    pub shared_file: Option<std::path::PathBuf>,
    pub fail: Option<Failure>,
    pub start_delay_ms: Option<u64>,
    pub ignore_sigterm: bool,
    /// `FAKE_AGENT_NO_TRANSCRIPT=1`: write no transcript at all.
    pub no_transcript: bool,
    /// `FAKE_AGENT_NO_SESSION_RECORD=1`: write no
    /// `$CLAUDE_CONFIG_DIR/sessions/<pid>.json` (as an older claude).
    pub no_session_record: bool,
    /// `FAKE_AGENT_SWALLOW_ENTERS=N`: the Enter of the first N non-blank
    /// lines is lost, the text staying in the input line until the next
    /// Enter, as a freshly drawn claude sometimes loses the Enter of a
    /// pasted prompt (2 in about 30 first sends, see docs/src/cli-facts.md).
    pub swallow_enters: u64,
    /// `FAKE_AGENT_DRAIN_ON_EXIT_MS=N`: transcript lines are queued, and on
    /// SIGTERM or SIGHUP the fake takes N ms to write them before it exits:
    /// Claude Code 2.1.197 drains its queued writes on those signals and
    /// forces its exit only after at least 5 s, so a busy claude's last
    /// answer reaches its transcript only if it is let finish.
    pub drain_on_exit_ms: Option<u64>,
    /// `FAKE_AGENT_TRANSCRIPT_LAG_MS=N`: an answer reaches the transcript N
    /// ms after it is drawn and its `Stop` hook ran, and a SIGTERM in that
    /// gap loses it: Claude Code draws an answer before its transcript holds
    /// it, and on a loaded machine the gap is long enough for a stop to land
    /// inside it (issue 31 item 6).
    pub transcript_lag_ms: Option<u64>,
}

pub fn read(get: impl Fn(&str) -> Option<String>) -> Result<Knobs, String> {
    let get = |name: &str| get(name).filter(|v| !v.is_empty());
    let number = |name: &str| -> Result<Option<u64>, String> {
        get(name)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{name}={v:?} is not a whole number"))
            })
            .transpose()
    };
    let fail = match get("FAKE_AGENT_FAIL") {
        None => None,
        Some(v) if v == "auth" => Some(Failure::Auth),
        Some(v) => match v.strip_prefix("exit:").map(str::parse::<i32>) {
            Some(Ok(code)) => Some(Failure::Exit(code)),
            _ => return Err(format!("FAKE_AGENT_FAIL={v:?}: use auth or exit:<code>")),
        },
    };
    Ok(Knobs {
        alloc_mb: number("FAKE_AGENT_ALLOC_MB")?.map(|n| n as usize),
        shared_file: get("FAKE_AGENT_SHARED_FILE").map(std::path::PathBuf::from),
        fail,
        start_delay_ms: number("FAKE_AGENT_START_DELAY_MS")?,
        swallow_enters: number("FAKE_AGENT_SWALLOW_ENTERS")?.unwrap_or(0),
        drain_on_exit_ms: number("FAKE_AGENT_DRAIN_ON_EXIT_MS")?,
        transcript_lag_ms: number("FAKE_AGENT_TRANSCRIPT_LAG_MS")?,
        ignore_sigterm: matches!(
            get("FAKE_AGENT_IGNORE_SIGTERM").as_deref(),
            Some("1" | "true" | "yes")
        ),
        no_transcript: matches!(
            get("FAKE_AGENT_NO_TRANSCRIPT").as_deref(),
            Some("1" | "true" | "yes")
        ),
        no_session_record: matches!(
            get("FAKE_AGENT_NO_SESSION_RECORD").as_deref(),
            Some("1" | "true" | "yes")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(pairs: &[(&str, &str)]) -> Result<Knobs, String> {
        read(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn no_variables_means_no_knobs_turned() {
        assert_eq!(knobs(&[]), Ok(Knobs::default()));
    }

    #[test]
    fn every_knob_is_read() {
        let k = knobs(&[
            ("FAKE_AGENT_ALLOC_MB", "64"),
            ("FAKE_AGENT_FAIL", "exit:7"),
            ("FAKE_AGENT_START_DELAY_MS", "250"),
            ("FAKE_AGENT_IGNORE_SIGTERM", "1"),
            ("FAKE_AGENT_NO_TRANSCRIPT", "1"),
            ("FAKE_AGENT_NO_SESSION_RECORD", "1"),
            ("FAKE_AGENT_SWALLOW_ENTERS", "2"),
            ("FAKE_AGENT_DRAIN_ON_EXIT_MS", "4500"),
            ("FAKE_AGENT_TRANSCRIPT_LAG_MS", "1500"),
            ("FAKE_AGENT_SHARED_FILE", "/tmp/runtime"),
        ])
        .unwrap();
        assert_eq!(
            k,
            Knobs {
                alloc_mb: Some(64),
                shared_file: Some("/tmp/runtime".into()),
                fail: Some(Failure::Exit(7)),
                start_delay_ms: Some(250),
                ignore_sigterm: true,
                no_transcript: true,
                no_session_record: true,
                swallow_enters: 2,
                drain_on_exit_ms: Some(4500),
                transcript_lag_ms: Some(1500),
            }
        );
        assert_eq!(
            knobs(&[("FAKE_AGENT_FAIL", "auth")]).unwrap().fail,
            Some(Failure::Auth)
        );
    }

    #[test]
    fn a_malformed_knob_is_an_error_naming_the_variable() {
        assert!(
            knobs(&[("FAKE_AGENT_FAIL", "sometimes")])
                .unwrap_err()
                .contains("FAKE_AGENT_FAIL")
        );
        assert!(
            knobs(&[("FAKE_AGENT_ALLOC_MB", "lots")])
                .unwrap_err()
                .contains("FAKE_AGENT_ALLOC_MB")
        );
    }
}
