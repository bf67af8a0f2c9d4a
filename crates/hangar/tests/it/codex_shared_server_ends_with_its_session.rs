//! Codex 0.17x's shared background server (issue 16 defect 4), with the
//! fake codex behaving like the real one (`FAKE_AGENT_CODEX_SHARED_SERVER=1`:
//! without `--no-daemon` it starts `app-server --managed-daemon` in a
//! session and group of its own, which outlives it). The real codex is
//! checked the same way in `real_cli_codex_processes.rs`.
//!
//! - A codex whose `--help` offers `--no-daemon` is run with it: no shared
//!   server at all.
//! - One that does not (an older codex): the server it starts outside the
//!   session's group is still ended with the session, on hibernate and on
//!   shutdown. Processes are counted from /proc.

use crate::support;

use support::{DEADLINE, Hangar};

fn app_servers(h: &Hangar) -> Vec<i32> {
    h.pids_for_home()
        .into_iter()
        .filter(|&p| {
            support::is_running(p) && support::cmdline(p).iter().any(|a| a == "app-server")
        })
        .collect()
}

#[test]
fn a_codex_that_offers_no_daemon_is_run_with_it_and_starts_no_shared_server() {
    let h = Hangar::with_env(&[("FAKE_AGENT_CODEX_SHARED_SERVER", "1")]);
    h.write_config("[mcp]\nenabled = false\n");
    h.start_daemon();
    let id = h.new_agent(&["--provider", "codex"]);
    h.wait_state(&id, "live");
    h.wait_screen(&id, "fake-agent codex session");
    let pid = h.pid_of(&id);
    // The wrapper execs the fake: the session's process is the fake itself.
    assert!(
        support::cmdline(pid).iter().any(|a| a == "--no-daemon"),
        "codex was not told --no-daemon: {:?}",
        support::cmdline(pid)
    );
    assert!(app_servers(&h).is_empty(), "a shared server started");
    h.ok(&["hibernate", &id]);
    h.wait_until("nothing but the daemon is left", DEADLINE, || {
        h.fake_agent_pids_for_home().is_empty()
    });
}

#[test]
fn a_shared_server_started_outside_the_sessions_group_ends_with_the_session() {
    let h = Hangar::with_env(&[
        ("FAKE_AGENT_CODEX_SHARED_SERVER", "1"),
        // An older codex: `--help` does not mention `--no-daemon`.
        ("FAKE_AGENT_CODEX_NO_DAEMON_HELP", "0"),
    ]);
    h.write_config("[mcp]\nenabled = false\n");
    h.start_daemon();
    let id = h.new_agent(&["--provider", "codex"]);
    h.wait_screen(&id, "fake-agent codex session");
    let group = support::pgid(h.pid_of(&id)).expect("the session has a group");
    let mut servers = Vec::new();
    h.wait_until("the fake codex started its shared server", DEADLINE, || {
        servers = app_servers(&h);
        !servers.is_empty()
    });
    assert_ne!(
        support::pgid(servers[0]),
        Some(group),
        "the server runs outside the session's group, as codex's does"
    );
    h.ok(&["hibernate", &id]);
    h.wait_until(
        "the shared server ended with the hibernate",
        DEADLINE,
        || app_servers(&h).is_empty(),
    );

    h.ok(&["wake", &id]);
    h.wait_until("the woken codex started a server again", DEADLINE, || {
        !app_servers(&h).is_empty()
    });
    h.shutdown();
    h.wait_until(
        "no process of this home is left after shutdown",
        DEADLINE,
        || {
            h.pids_for_home()
                .into_iter()
                .all(|p| !support::is_running(p))
        },
    );
}
