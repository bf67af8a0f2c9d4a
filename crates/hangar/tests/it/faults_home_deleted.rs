//! Issue 18, fault: `HANGAR_HOME` deleted (`rm -rf`) while the daemon runs.
//! The daemon notices, re-creates the folder, its lock and its socket, and
//! writes its whole workspace to a new store, so nothing saved is lost: the
//! same daemon answers (no second one is started on an empty workspace),
//! its live sessions keep running untouched, `status` says what happened,
//! and a restart shows every session.

use crate::reliability_support;
use crate::support;

use std::collections::BTreeSet;

use support::*;

fn titles(h: &Hangar) -> BTreeSet<String> {
    h.ls()
        .iter()
        .filter_map(|r| r["title"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_home_deleted_under_the_daemon_is_re_created_with_everything_it_held() {
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let shell = h.new_agent(&["--provider", "shell", "--title", "pane"]);
    h.wait_state(&shell, "live");
    let agent = h.new_pane();
    h.wait_state(&agent, "live");
    let parked = h.new_agent(&["--provider", "shell", "--parked", "--title", "kept"]);
    h.ok(&["pin", &parked]);
    h.ok(&["send", &shell, "echo before-delete"]);
    h.wait_screen(&shell, "\nbefore-delete");
    let pids = (h.pid_of(&shell), h.pid_of(&agent));
    let before = titles(&h);

    std::fs::remove_dir_all(&h.home).expect("rm -rf HANGAR_HOME");
    // Wait for the socket before any `hangar` command: one run in the gap
    // would auto-start a daemon of its own.
    let socket = h.home.join("run").join("hangar.sock");
    wait_until("the daemon re-created its socket", DEADLINE, || {
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    let status = h.status();
    assert_eq!(status["daemon"]["pid"], daemon, "the same daemon answers");
    assert!(
        status["notices"]
            .to_string()
            .contains("was deleted while the daemon ran"),
        "status says what happened: {}",
        status["notices"]
    );
    assert_eq!(titles(&h), before, "every session is still there");
    assert_eq!(
        (h.pid_of(&shell), h.pid_of(&agent)),
        pids,
        "nothing was restarted"
    );
    assert_eq!(h.session(&parked)["pinned"], true);
    h.ok(&["send", &shell, "echo after-delete"]);
    h.wait_screen(&shell, "\nafter-delete");
    h.new_agent(&["--provider", "shell", "--parked", "--title", "after"]);
    let mut expected = before.clone();
    expected.insert("after".to_owned());
    assert_eq!(h.daemon_pid(), daemon, "no second daemon was started");

    h.shutdown();
    let opened = hangar_store::Store::open(&h.home.join("state.db")).expect("open the store");
    let on_disk: BTreeSet<String> = opened
        .workspace
        .sessions
        .values()
        .map(|m| m.title.clone())
        .collect();
    assert_eq!(on_disk, expected, "the new store holds everything");
    assert!(opened.recovered.is_none());
    drop(opened);
    h.start_daemon();
    assert_eq!(titles(&h), expected, "a restart shows every session");
    h.wait_state(&shell, "live");
    reliability_support::figures(
        "home deleted",
        format!(
            "sessions_kept={} restarted=0 second_daemon=no",
            expected.len()
        ),
    );
}
