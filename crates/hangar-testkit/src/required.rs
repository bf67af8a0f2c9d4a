//! What a test does when this machine lacks what it needs (a program, root,
//! mount rights, a resolvable host name): it says so in one line and
//! passes, except where every suite must run (CI), where it fails.
//!
//! `.ci/run` sets `HANGAR_TESTS_REQUIRED=1`, the one variable every suite
//! reads here; the older per-suite `HANGAR_REAL_CLI_REQUIRED=1` and
//! `HANGAR_ENGINES_REQUIRED=1` still count. Without this, about 25 tests
//! passed silently on a machine without Chromium, sshd, libfaketime or root
//! (issue 44), and CI could not tell.

/// The variable `.ci/run` sets.
pub const REQUIRED_VAR: &str = "HANGAR_TESTS_REQUIRED";

/// Whether every suite must run here (CI).
pub fn required() -> bool {
    [
        REQUIRED_VAR,
        "HANGAR_REAL_CLI_REQUIRED",
        "HANGAR_ENGINES_REQUIRED",
    ]
    .iter()
    .any(|v| std::env::var(v).is_ok_and(|v| v == "1"))
}

/// `test` cannot run on this machine because of `why`: one line on the
/// terminal and the caller returns, or (under CI) a failure naming both.
///
/// Written straight to stderr: the test harness captures `eprintln!` of a
/// passing test, and a skip nobody sees is the silence this exists to end.
pub fn missing(test: &str, why: &str) {
    if required() {
        panic!("{test} cannot run: {why} ({REQUIRED_VAR}=1: every suite must run here)");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED [{test}]: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_fails_where_every_suite_must_run() {
        // The one process-wide variable is read, never set, by other tests:
        // this test checks the rule on the value the run was started with.
        let result = std::panic::catch_unwind(|| missing("t", "no tool"));
        assert_eq!(result.is_err(), required());
    }
}
