//! Issue 18, fault: two daemons started on one home at the same instant.
//! Exactly one serves; the other exits at once with a message naming the
//! home and the daemon that holds it; the store is not corrupted; and only
//! one set of agents is spawned (the saved panes, once).

use crate::faults_support;
use crate::reliability_support;
use crate::support;

use std::process::Stdio;
use std::sync::{Arc, Barrier};

use support::*;

/// A home with two saved claude panes and one parked shell, then stopped.
fn saved_home() -> (Hangar, Vec<String>) {
    let h = Hangar::new();
    h.start_daemon();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let parked = h.new_agent(&["--provider", "shell", "--parked", "--title", "kept"]);
    h.wait_state(&a, "live");
    h.wait_state(&b, "live");
    h.shutdown();
    assert!(h.fake_agent_pids_for_home().is_empty());
    (h, vec![a, b, parked])
}

fn assert_one_daemon_one_fleet(h: &Hangar, ids: &[String], how: &str) {
    let daemons = || -> Vec<i32> {
        h.pids_for_home()
            .into_iter()
            .filter(|&p| {
                let c = cmdline(p);
                c.len() >= 2 && c[0].ends_with("hangar") && c[1] == "daemon" && !is_zombie(p)
            })
            .collect()
    };
    // A daemon that lost the lock may still be saying so (it waits a moment
    // for the winner's pid); it must be gone soon, and never serve.
    wait_until(&format!("{how}: exactly one daemon runs"), DEADLINE, || {
        daemons().len() == 1
    });
    h.wait_restore_complete();
    let agents = h.session_agent_pids();
    assert_eq!(
        agents.len(),
        2,
        "{how}: exactly the two saved panes run, once: {:?}",
        agents.iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
    let rows = h.ls();
    assert_eq!(
        rows.len(),
        3,
        "{how}: every saved session is there: {rows:?}"
    );
    for id in ids {
        assert!(
            rows.iter().any(|r| r["id"] == id.as_str()),
            "{how}: {id} is kept"
        );
    }
    let status = h.status();
    assert_eq!(
        status["notices"].as_array().map(Vec::len),
        Some(0),
        "{how}: the store opened without damage or repair: {status}"
    );
}

#[test]
fn two_daemons_started_at_the_same_instant_one_serves_the_other_says_why() {
    let (h, ids) = saved_home();
    let h = Arc::new(h);
    let barrier = Arc::new(Barrier::new(2));
    let starters: Vec<_> = (0..2)
        .map(|_| {
            let h = h.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut cmd = h.command(&["daemon"]);
                cmd.stdout(Stdio::null()).stderr(Stdio::piped());
                barrier.wait();
                cmd.spawn().expect("start hangar daemon")
            })
        })
        .collect();
    let mut children: Vec<std::process::Child> =
        starters.into_iter().map(|t| t.join().unwrap()).collect();
    // Exactly one of them exits, at once, with the reason.
    let mut exited = None;
    wait_until("one of the two daemons exited", DEADLINE, || {
        for (i, c) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = c.try_wait() {
                exited = Some((i, status));
                return true;
            }
        }
        false
    });
    let (loser, status) = exited.expect("one exited");
    assert!(!status.success(), "the second daemon fails: {status}");
    let mut stderr = String::new();
    use std::io::Read;
    children[loser]
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let winner_pid = children[1 - loser].id();
    assert!(
        stderr.contains("already running") && stderr.contains(&h.home.display().to_string()),
        "the loser says a daemon already runs for this home: {stderr}"
    );
    assert!(
        stderr.contains(&format!("pid {winner_pid}")),
        "and names the one that serves (pid {winner_pid}): {stderr}"
    );
    // Connect first: `hangar status` on a socket not bound yet would
    // auto-start a third daemon.
    wait_until("the winner serves", DEADLINE, || {
        std::os::unix::net::UnixStream::connect(h.home.join("run").join("hangar.sock")).is_ok()
            && h.run(&["status"]).status.success()
    });
    assert!(is_running(winner_pid as i32), "the winner is still running");
    assert_one_daemon_one_fleet(&h, &ids, "two `hangar daemon`");
    h.shutdown();
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    reliability_support::figures(
        "two daemons",
        format!(
            "started=2 serving=1 agents=2 loser_said={:?}",
            stderr.trim()
        ),
    );
}

#[test]
fn eight_commands_auto_starting_a_daemon_at_once_start_exactly_one() {
    let (h, ids) = saved_home();
    let h = Arc::new(h);
    let barrier = Arc::new(Barrier::new(8));
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let h = h.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let cmd = h.command(&["--json", "status"]);
                barrier.wait();
                faults_support::run_bounded(cmd, DEADLINE, "an auto-starting `hangar status`").0
            })
        })
        .collect();
    let outs: Vec<_> = runs.into_iter().map(|t| t.join().unwrap()).collect();
    let pids: std::collections::BTreeSet<u64> = outs
        .iter()
        .map(|o| {
            assert!(
                o.status.success(),
                "every command is answered: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status JSON");
            v["daemon"]["pid"].as_u64().expect("a daemon pid")
        })
        .collect();
    assert_eq!(
        pids.len(),
        1,
        "all eight were answered by one daemon: {pids:?}"
    );
    assert_one_daemon_one_fleet(&h, &ids, "eight auto-starts");
    reliability_support::figures(
        "auto-start race",
        format!("commands=8 daemons_serving={}", pids.len()),
    );
}
