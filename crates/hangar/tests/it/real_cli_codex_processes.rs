//! Real-CLI conformance, codex 0.171.0 and its shared background server
//! (issue 16 defect 4): run by hangar, with or without hangar's MCP
//! overrides, codex keeps everything in the session's own process group,
//! so after a hibernate and after `hangar shutdown` no process of it is
//! left (counted from /proc), and two codex sessions in one folder each
//! keep their own conversation id.

use crate::real_cli_support;
use crate::support;

use real_cli_support::RealCli;

/// The processes of this test that are codex's shared app-server.
fn app_servers(rc: &RealCli) -> Vec<i32> {
    rc.processes_matching("app-server")
}

/// Every process of this test but the daemon.
fn agents_left(rc: &RealCli) -> Vec<(i32, String)> {
    let daemon = rc.hangar.daemon_pid_opt();
    rc.hangar
        .pids_for_home()
        .into_iter()
        .filter(|&p| Some(p) != daemon && support::is_running(p))
        .map(|p| (p, support::cmdline(p).join(" ")))
        .collect()
}

fn leaves_nothing_behind(with_mcp: bool) {
    let Some(rc) = RealCli::start() else { return };
    if !with_mcp {
        rc.hangar_config("[mcp]\nenabled = false\n");
    }
    rc.hangar.start_daemon();
    let a = rc.hangar.new_agent(&["--provider", "codex"]);
    let b = rc.hangar.new_agent(&["--provider", "codex"]);
    rc.wait_ready(&a);
    rc.wait_ready(&b);
    rc.ask(&a, "question for a");
    rc.ask(&b, "question for b");
    let (ida, idb) = (rc.wait_provider_id(&a), rc.wait_provider_id(&b));
    assert_ne!(
        ida, idb,
        "two codex sessions in one folder each have their own thread"
    );
    assert!(
        app_servers(&rc).is_empty(),
        "codex started its shared app-server: {:?}",
        agents_left(&rc)
    );
    // Everything codex runs stays inside its session's process group, but
    // the MCP servers it starts: codex 0.171.0 gives each a process group
    // of its own (observed here), so hangar ends those by the session id
    // they carry, as it ends an app-server.
    for id in [&a, &b] {
        let pid = rc.hangar.pid_of(id);
        let group = support::pgid(pid).expect("session has a group");
        for d in support::descendants_of(pid) {
            let cmd = support::cmdline(d);
            let is_mcp = cmd.get(1).is_some_and(|a| a == "mcp");
            if support::is_running(d) && !is_mcp {
                assert_eq!(
                    support::pgid(d),
                    Some(group),
                    "{cmd:?} left the session's group"
                );
            }
        }
    }

    rc.hangar.ok(&["hibernate", &a]);
    rc.hangar.ok(&["hibernate", &b]);
    rc.wait_state(&a, "hibernated");
    rc.wait_state(&b, "hibernated");
    support::wait_until(
        "no codex process is left after hibernating both",
        real_cli_support::REAL_DEADLINE,
        || agents_left(&rc).is_empty(),
    );

    rc.hangar.ok(&["wake", &a]);
    rc.wait_ready(&a);
    rc.ask(&a, "again for a");
    rc.hangar.shutdown();
    support::wait_until(
        "no process of this test is left after shutdown",
        real_cli_support::REAL_DEADLINE,
        || {
            rc.hangar
                .pids_for_home()
                .into_iter()
                .all(|p| !support::is_running(p))
        },
    );
}

#[test]
fn codex_with_mcp_leaves_no_process_behind_after_hibernate_and_shutdown() {
    leaves_nothing_behind(true);
}

#[test]
fn codex_without_mcp_leaves_no_process_behind_after_hibernate_and_shutdown() {
    leaves_nothing_behind(false);
}
