//! Issue 3 acceptance: sessions are real processes in PTYs, each in its own
//! process group, answering input, and ended whole (no orphan, no zombie)
//! when closed or when the daemon shuts down.

use crate::support;

use support::*;

#[test]
fn three_agents_split_in_one_tab_are_live_processes_with_their_session_ids() {
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let c = h.split(&b, "horizontal");

    for id in [&a, &b, &c] {
        h.wait_state(id, "live");
    }
    let rows = h.ls();
    assert_eq!(rows.len(), 3, "ls shows exactly three sessions: {rows:?}");
    let tabs: Vec<_> = rows.iter().map(|r| r["tab"].clone()).collect();
    assert!(
        tabs.iter().all(|t| *t == tabs[0] && !t.is_null()),
        "one tab: {tabs:?}"
    );
    for row in &rows {
        assert_eq!(row["placement"], "pane");
        let pid = row["pid"].as_i64().expect("a live session has a pid") as i32;
        assert!(is_running(pid), "pid {pid} exists in /proc");
        let psid = row["provider_session_id"]
            .as_str()
            .expect("a claude session id");
        assert_eq!(
            arg_after(&cmdline(pid), "--session-id").as_deref(),
            Some(psid),
            "the process was started with --session-id {psid}: {:?}",
            cmdline(pid)
        );
        assert_eq!(
            pgid(pid),
            Some(pid),
            "each child leads its own process group"
        );
    }
    let mut pids: Vec<_> = rows.iter().map(|r| r["pid"].as_i64().unwrap()).collect();
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 3, "three distinct processes");
    assert_eq!(
        h.session_agent_pids().len(),
        3,
        "exactly three agents in /proc"
    );
}

#[test]
fn send_puts_the_answer_on_the_screen_and_in_the_transcript() {
    let h = Hangar::new();
    let id = h.new_pane();
    let row = h.wait_state(&id, "live");
    h.wait_screen(&id, "fake-agent claude session");

    h.ok(&["send", &id, "hello"]);
    h.wait_screen(&id, "answer: hello");

    let psid = row["provider_session_id"].as_str().expect("provider id");
    let transcript = h.claude_transcript(&h.work, psid);
    wait_until("the transcript holds the answer", DEADLINE, || {
        std::fs::read_to_string(&transcript).is_ok_and(|t| t.contains("answer: hello"))
    });
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        text.contains(r#""content":"hello""#),
        "user line recorded: {text}"
    );
}

#[test]
fn close_ends_the_whole_process_group_and_leaves_no_zombie() {
    let h = Hangar::new();
    let id = h.new_pane();
    h.wait_state(&id, "live");
    let pid = h.pid_of(&id);
    h.ok(&["send", &id, "spawn-child"]);
    let screen = h.wait_screen(&id, "child: ");
    let child: i32 = screen
        .lines()
        .find_map(|l| l.trim().strip_prefix("child: "))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("child pid on screen: {screen}"));
    assert_eq!(pgid(child), Some(pid), "the child is in the agent's group");
    // The group may also hold short-lived hook commands the agent runs.
    let group = processes_in_group(pid);
    assert!(
        group.contains(&pid) && group.contains(&child),
        "agent and its child share the group: {group:?}"
    );

    h.ok(&["close", &id]);
    wait_until("the session's group is gone", DEADLINE, || {
        processes_in_group(pid).is_empty()
    });
    assert!(!exists(pid), "the agent is reaped, not a zombie");
    let daemon = h.daemon_pid();
    assert!(
        children_of(daemon).iter().all(|&c| !is_zombie(c)),
        "no zombie child of the daemon"
    );
    assert!(h.ls().is_empty(), "the closed session is gone from ls");
}

#[test]
fn shutdown_leaves_no_child_of_the_daemon_alive() {
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    h.wait_state(&a, "live");
    h.wait_state(&b, "live");
    h.ok(&["send", &a, "spawn-child"]);
    h.wait_screen(&a, "child: ");
    let daemon = h.daemon_pid();
    let family = descendants_of(daemon);
    assert!(family.len() >= 3, "two agents and a child: {family:?}");

    h.shutdown();
    wait_until("every former descendant is gone", DEADLINE, || {
        family.iter().all(|&p| !is_running(p))
    });
    assert!(h.pids_for_home().is_empty(), "nothing of this home runs");
}

#[test]
fn a_missing_program_gives_a_failed_session_with_a_reason_and_the_daemon_keeps_serving() {
    let h = Hangar::with_env(&[("HANGAR_OPENCODE_BIN", "/nonexistent/opencode-missing")]);
    let id = h.new_agent(&["--provider", "opencode"]);
    let row = h.wait_state(&id, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("opencode") && reason.contains("HANGAR_OPENCODE_BIN"),
        "a readable reason: {reason:?}"
    );
    assert!(row["pid"].is_null());
    let status = h.status();
    assert_eq!(status["sessions"]["failed"], 1, "{status}");

    let ok = h.new_pane();
    h.wait_state(&ok, "live");
    assert_eq!(h.session_agent_pids().len(), 1);
}

#[test]
fn the_daemon_is_started_explicitly_once_per_home() {
    let h = Hangar::new();
    let pid = h.start_daemon();
    let err = h.fail(&["daemon"]);
    assert!(err.contains("already running"), "{err}");
    assert_eq!(h.daemon_pid(), pid, "the first daemon keeps serving");
    let id = h.new_pane();
    h.wait_state(&id, "live");
    h.shutdown();
    assert!(h.pids_for_home().is_empty());
}

#[test]
fn a_stale_socket_from_a_killed_daemon_is_cleaned_up_on_the_next_start() {
    let h = Hangar::new();
    let id = h.new_pane();
    h.wait_state(&id, "live");
    h.kill_everything();
    assert!(
        h.home.join("run/hangar.sock").exists(),
        "a stale socket is left"
    );

    // Any command auto-starts a fresh daemon that restores the pane.
    let row = h.wait_state(&id, "live");
    assert!(is_running(row["pid"].as_i64().unwrap() as i32));
}
