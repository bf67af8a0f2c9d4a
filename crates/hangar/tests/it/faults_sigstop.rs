//! Issue 18, fault: an agent stopped with SIGSTOP. Nothing the daemon does
//! waits on it without a bound: reads answer, a send that fills its
//! terminal's input buffer fails after the write-stall bound with a reason,
//! other sessions keep answering meanwhile, and hibernate, close, wake and
//! shutdown end a stopped group (SIGCONT lets it see the SIGTERM; SIGKILL
//! follows regardless), leaving no process behind.

use crate::faults_support;
use crate::reliability_support;
use crate::support;

use std::time::Duration;

use faults_support::run_bounded;
use support::*;

/// Longer than every bound the daemon applies (a 10 s write stall, 6 s + 6 s
/// of stop grace), with room for a busy machine; a hang fails the test.
const BOUND: Duration = Duration::from_secs(60);

fn stop(pid: i32) {
    // SAFETY: kill has no memory effects; `pid` is our fixture's agent.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    wait_until("the agent is stopped", DEADLINE, || {
        proc_state(pid) == Some('T')
    });
}

#[test]
fn a_stopped_agent_blocks_no_request_and_every_stop_path_ends_it() {
    let h = Hangar::new();
    h.start_daemon();
    let stopped = h.new_pane();
    let other = h.new_pane();
    let parked = h.new_agent(&["--provider", "claude", "--parked", "--title", "later"]);
    h.wait_state(&stopped, "live");
    h.wait_state(&other, "live");
    let pid = h.pid_of(&stopped);
    stop(pid);

    // Reads and a short send (it fits the terminal's buffer) answer at once.
    let (out, _) = run_bounded(
        h.command(&["screen", &stopped]),
        BOUND,
        "screen of a stopped agent",
    );
    assert!(out.status.success());
    let (out, _) = run_bounded(h.command(&["ls"]), BOUND, "ls");
    assert!(out.status.success());
    let (out, _) = run_bounded(
        h.command(&["wake", &stopped]),
        BOUND,
        "wake of a stopped agent",
    );
    assert!(out.status.success(), "it is live: wake has nothing to do");
    // A stopped agent cannot start a turn: the send answers within the
    // bound, and says the prompt was typed but not taken (issue 16 defect 6)
    // rather than claiming a delivery.
    let (out, _) = run_bounded(h.command(&["send", &stopped, "short"]), BOUND, "short send");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || err.contains("no turn started"),
        "{err}"
    );

    // A send larger than the terminal's input buffer cannot be typed: it
    // fails after the stall bound, and says why.
    let big = "y".repeat(100_000);
    let mut cmd = h.command(&["send", &stopped, &big]);
    cmd.stdin(std::process::Stdio::null());
    let sender =
        std::thread::spawn(move || run_bounded(cmd, BOUND, "a big send to a stopped agent"));
    // Meanwhile another session answers.
    h.ok(&["send", &other, "meanwhile"]);
    h.wait_screen(&other, "meanwhile");
    let (out, send_took) = sender.join().unwrap();
    assert!(
        !out.status.success(),
        "a send a stopped agent never reads fails"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("has not read its input") && stderr.contains("stopped"),
        "and says why: {stderr}"
    );
    // The session's typing is free again: the next send is not stuck behind it.
    let (out, _) = run_bounded(
        h.command(&["send", &stopped, "again"]),
        BOUND,
        "send after a stall",
    );
    let _ = out; // may fail (the buffer is still full) but must answer

    // Hibernate ends the stopped group and keeps the session.
    let (out, hibernate_took) = run_bounded(
        h.command(&["hibernate", &stopped]),
        BOUND,
        "hibernate of a stopped agent",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("the stopped agent is gone", DEADLINE, || {
        !exists(pid) || is_zombie(pid)
    });
    assert_eq!(h.state_of(&stopped), "hibernated");
    // The group was sent SIGKILL before hibernate answered; its last members
    // may take a moment to be reaped (seen once in a full run at load).
    wait_until("nothing of its group is left", DEADLINE, || {
        processes_in_group(pid).is_empty()
    });

    // Wake it again, stop it, close it.
    h.ok(&["wake", &stopped]);
    let pid2 = h.pid_of(&stopped);
    stop(pid2);
    let (out, close_took) = run_bounded(
        h.command(&["close", &stopped]),
        BOUND,
        "close of a stopped agent",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(processes_in_group(pid2).iter().all(|&p| !is_running(p)));
    assert!(h.ls().iter().all(|r| r["id"] != stopped.as_str()), "closed");

    // Shutdown with a stopped agent (and one stopped parked-then-woken).
    h.ok(&["wake", &parked]);
    let pids = [h.pid_of(&other), h.pid_of(&parked)];
    for &p in &pids {
        stop(p);
    }
    let (out, shutdown_took) = run_bounded(
        h.command(&["shutdown"]),
        BOUND,
        "shutdown with stopped agents",
    );
    assert!(out.status.success());
    wait_until("the daemon exited", BOUND, || h.daemon_pid_opt().is_none());
    wait_until("every stopped agent is gone", DEADLINE, || {
        h.fake_agent_pids_for_home().is_empty()
    });
    for p in pids {
        assert!(processes_in_group(p).iter().all(|&q| !is_running(q)));
    }
    // The saved state still has the sessions.
    h.start_daemon();
    let ids: Vec<String> = h
        .ls()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.contains(&other) && ids.contains(&parked));
    reliability_support::figures(
        "sigstop",
        format!(
            "big_send_failed_after_ms={} hibernate_ms={} close_ms={} shutdown_ms={} left=0",
            send_took.as_millis(),
            hibernate_took.as_millis(),
            close_took.as_millis(),
            shutdown_took.as_millis()
        ),
    );
}
