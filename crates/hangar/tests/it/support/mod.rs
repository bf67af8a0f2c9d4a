//! The process-level test harness: one real hangar daemon per test, in its own
//! temp `HANGAR_HOME`, with `hangar-fake-agent` standing in for every provider.
//!
//! The fixture (`Hangar`), the waits and the `/proc` readers are
//! hangar-testkit's, shared with the other crates' tests; what only these
//! tests need is here: the MCP client, the sshd, crafted workspaces.
//!
//! Tests count processes from `/proc`, never from the daemon's own word, and
//! the fixture never leaks a process (see `hangar_testkit::home`).

#![allow(dead_code)] // not every helper is used by the tests of the moment

pub mod mcp;
pub mod sshd;
pub mod workspace;

pub use hangar_testkit::bins::{fake_agent_bin, hangar_bin};
pub use hangar_testkit::git;
pub use hangar_testkit::home::{Hangar, user_entries};
// The whole /proc toolbox, used or not by the tests of the moment.
#[allow(unused_imports)]
pub use hangar_testkit::proc::{
    all_pids, arg_after, children_of, cmdline, descendants_of, environ, exists, fd_targets,
    is_running, is_zombie, open_fds, pgid, ppid, proc_state, processes_in_group, rss_kib,
    start_secs, uptime_secs,
};
pub use hangar_testkit::wait::{DEADLINE, poll_for, wait_for, wait_until};

/// Every file under `dir`, recursively (folders left out; an unreadable
/// or missing folder adds nothing).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
