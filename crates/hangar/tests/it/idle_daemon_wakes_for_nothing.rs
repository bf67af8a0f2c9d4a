//! Issue 20: an idle daemon polls nothing it does not own. With live agents
//! that print nothing, the daemon's threads sleep: transcripts, hook files
//! and the home are watched by notification, exits come by the child's own
//! signal, and the governor measures nothing without a budget.
//!
//! Measured as the daemon's context switches (every thread's voluntary and
//! involuntary switches in `/proc/<pid>/task/*/status`): each timer a
//! session's watcher sleeps on is a wake-up there. The yardstick is the same
//! daemon in the same run with one session printing a line every 50 ms, so
//! the test asserts a ratio of two windows, never a time.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use support::*;

/// Idle agents in the fleet: enough that one timer each would show.
const AGENTS: usize = 4;
/// The length of each measured window. A measurement, not a wait for a
/// condition: both windows last the same.
const WINDOW: Duration = Duration::from_secs(3);

/// Context switches so far of each thread of `pid`.
fn switches(pid: i32) -> HashMap<String, u64> {
    let mut by_thread = HashMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by_thread;
    };
    for t in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        let n: u64 = status
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
        by_thread.insert(t.file_name().to_string_lossy().into_owned(), n);
    }
    by_thread
}

/// The daemon's context switches during one window. A thread that ended
/// meanwhile is not counted; one that started counts in full.
fn switches_over_window(pid: i32) -> u64 {
    let before = switches(pid);
    std::thread::sleep(WINDOW);
    let after = switches(pid);
    after
        .iter()
        .map(|(tid, n)| n.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

/// The yardstick: the daemon's context switches during one window once a
/// shell session beside the others prints a line every 50 ms.
fn switches_beside_a_printing_session(h: &Hangar, daemon: i32) -> u64 {
    let shell = h.new_agent(&["--provider", "shell", "--title", "printer"]);
    h.wait_state(&shell, "live");
    h.ok(&["send", &shell, "while :; do echo tick; sleep 0.05; done"]);
    h.wait_screen(&shell, "tick\ntick\n");
    switches_over_window(daemon)
}

#[test]
fn live_agents_that_print_nothing_cost_the_daemon_no_wake_ups_beside_one_printing_session() {
    let h = Hangar::new();
    h.write_config("[activity]\ndebounce_ms = 200\n");
    let daemon = h.start_daemon();
    let agents: Vec<String> = (0..AGENTS).map(|_| h.new_pane()).collect();
    for a in &agents {
        h.wait_screen(a, "> ");
    }
    // Settled: every agent's start (its transcript, record and first
    // screen) has been looked at and its activity committed.
    h.wait_until("every agent's activity settled", DEADLINE, || {
        agents
            .iter()
            .all(|a| h.session(a)["activity"].as_str() != Some("working"))
    });
    let status = h.status();
    assert!(
        status["budget"]["max_live"].is_null(),
        "no budget: {status}"
    );

    let idle = switches_over_window(daemon);

    let busy = switches_beside_a_printing_session(&h, daemon);
    eprintln!(
        "daemon context switches per window: {AGENTS} idle agents {idle}, plus one printing session {busy}"
    );

    assert!(
        idle * 3 < busy,
        "{AGENTS} idle agents woke the daemon {idle} times in a window in which one \
         printing session (beside them) woke it {busy} times: something still polls"
    );
    for a in &agents {
        assert_eq!(h.state_of(a), "live", "the agents stayed live");
    }
}

#[test]
fn an_opencode_session_idle_after_its_prompt_costs_the_daemon_no_wake_ups_beside_one_printing_session()
 {
    let h = Hangar::new();
    let daemon = h.start_daemon();
    let agent = h.new_agent(&["--provider", "opencode"]);
    h.wait_screen(&agent, "> ");
    // The prompt is what makes the daemon read OpenCode's database (it
    // matches the conversation holding it): once its answer is in and the
    // conversation is learned, nothing changes there any more.
    h.ok(&["send", &agent, "one question"]);
    h.wait_screen(&agent, "answer: one question");
    h.wait_until("the opencode id is learned", DEADLINE, || {
        h.provider_id(&agent).0.is_some()
    });
    h.wait_until("the agent's activity settled", DEADLINE, || {
        h.session(&agent)["activity"].as_str() != Some("working")
    });

    let idle = switches_over_window(daemon);

    let busy = switches_beside_a_printing_session(&h, daemon);
    eprintln!(
        "daemon context switches per window: an idle opencode {idle}, plus one printing session {busy}"
    );
    assert!(
        idle * 3 < busy,
        "an idle opencode session woke the daemon {idle} times in a window in which one \
         printing session (beside it) woke it {busy} times: its database is read in a loop"
    );
}
