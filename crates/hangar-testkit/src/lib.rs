//! hangar's one test harness, shared by every crate's tests.
//!
//! - [`wait`]: waits on a named condition with a deadline (never a fixed
//!   sleep) and the default [`wait::DEADLINE`];
//! - [`proc`]: what `/proc` says about processes (pids, command lines,
//!   environments, parents, groups, fds), so tests count processes from the
//!   kernel, never from the daemon's own word;
//! - [`bins`]: the workspace's programs in the cargo target folder;
//! - [`home`]: [`Hangar`], one test's temporary `HANGAR_HOME` and the real
//!   daemon it starts, which never leaks a process;
//! - [`git`]: real git repositories made in a test's folder;
//! - [`sqlite`]: reading a SQLite file's b-tree pages and tearing one;
//! - [`fake_api`]: a running `hangar-fake-model-api`;
//! - [`io`]: reads a signal does not cut short;
//! - [`http`]: reading one HTTP/1.1 request, for the small stand-in APIs
//!   tests serve themselves;
//! - [`pty`]: a program in a real pseudo-terminal, its screen read back
//!   through vt100;
//! - [`required`]: a test this machine cannot run says so, and fails under
//!   CI.
//!
//! Nothing here is global: every helper is per fixture, so tests run in
//! parallel in one process.

pub mod bins;
pub mod fake_api;
pub mod git;
pub mod home;
pub mod http;
pub mod io;
pub mod proc;
pub mod pty;
pub mod required;
pub mod sqlite;
pub mod wait;

pub use home::Hangar;
pub use wait::{DEADLINE, poll_for, wait_for, wait_until};
