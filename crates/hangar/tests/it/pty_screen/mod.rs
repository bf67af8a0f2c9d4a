//! Runs a `hangar` command inside a real pseudo-terminal and keeps a vt100
//! picture of what it draws, for the TUI and attach tests: hangar-testkit's
//! `pty`, under the name these tests use.

pub use hangar_testkit::pty::{DEADLINE, PtyApp, mask};
