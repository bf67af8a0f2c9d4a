//! Issue 10, part 5: children survive their clients and die with the daemon.
//! Killing an attach client or the TUI leaves sessions live; `shutdown` and
//! SIGTERM end every child's whole process group (stubborn agents and the
//! children agents started included); after a SIGKILL of the daemon the next
//! start ends what the killed daemon had started, and never a process that
//! merely reuses a recorded pid.

use crate::pty_screen;
use crate::reliability_support;
use crate::support;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use pty_screen::PtyApp;
use support::*;

/// Every process of `groups` (zombies included).
fn members(groups: &[i32]) -> Vec<i32> {
    groups.iter().flat_map(|&g| processes_in_group(g)).collect()
}

/// Two fake claude panes; the first has started a `sleep 1000` child in its
/// group. Returns (ids, pgids).
fn two_agents_one_with_a_child(h: &Hangar) -> (Vec<String>, Vec<i32>) {
    let a = h.new_pane();
    let b = h.new_pane();
    h.wait_state(&a, "live");
    h.wait_state(&b, "live");
    h.ok(&["send", &a, "spawn-child"]);
    h.wait_screen(&a, "child: ");
    let groups: Vec<i32> = [&a, &b]
        .iter()
        .map(|id| pgid(h.pid_of(id)).expect("pgid"))
        .collect();
    wait_until("the agent's child runs in its group", DEADLINE, || {
        processes_in_group(groups[0]).len() >= 2
    });
    (vec![a, b], groups)
}

#[test]
fn killing_an_attach_client_or_the_tui_leaves_every_session_live() {
    let h = Hangar::new();
    h.start_daemon();
    let a = h.new_pane();
    let pid = h.pid_of(&a);

    let mut attach = PtyApp::spawn(h.command(&["attach", &a]), 30, 100);
    attach.wait_text("fake-agent claude session");
    // SAFETY: kill has no memory effects; the pid is our PTY child.
    unsafe { libc::kill(attach.pid(), libc::SIGKILL) };
    attach.wait_exit();
    assert_eq!(
        h.state_of(&a),
        "live",
        "the session survives its attach client"
    );
    assert_eq!(h.pid_of(&a), pid, "and is the same process");

    let mut tui = PtyApp::spawn(h.command(&[]), 30, 100);
    tui.wait_for("the TUI drew the session", |t| t.contains("claude"));
    // SAFETY: as above.
    unsafe { libc::kill(tui.pid(), libc::SIGKILL) };
    tui.wait_exit();
    assert_eq!(h.state_of(&a), "live", "the session survives the TUI");
    assert_eq!(h.pid_of(&a), pid);
    assert!(is_running(pid));
    h.ok(&["send", &a, "still here"]);
    h.wait_screen(&a, "still here");
}

fn ends_every_group(stop: impl FnOnce(&Hangar, i32), how: &str) {
    // Agents that ignore SIGTERM: the daemon must escalate to SIGKILL.
    let h = Hangar::with_env(&[("FAKE_AGENT_IGNORE_SIGTERM", "1")]);
    let daemon = h.start_daemon();
    let (_, groups) = two_agents_one_with_a_child(&h);
    let before = members(&groups).len();
    stop(&h, daemon);
    wait_until(&format!("{how}: the daemon exited"), DEADLINE, || {
        h.daemon_pid_opt().is_none()
    });
    wait_until(
        &format!("{how}: every child's process group is gone"),
        DEADLINE,
        || members(&groups).is_empty(),
    );
    assert!(
        h.fake_agent_pids_for_home().is_empty(),
        "{how}: an agent outlived the daemon"
    );
    reliability_support::figures(
        "children",
        format!("{how}: processes in agent groups before={before} after=0"),
    );
}

#[test]
fn shutdown_ends_every_childs_process_group_even_stubborn_ones() {
    ends_every_group(|h, _| h.shutdown(), "shutdown");
}

#[test]
fn sigterm_to_the_daemon_ends_every_childs_process_group() {
    ends_every_group(
        // SAFETY: kill has no memory effects; `pid` is our daemon.
        |_, pid| unsafe {
            libc::kill(pid, libc::SIGTERM);
        },
        "SIGTERM",
    );
}

#[test]
fn after_a_daemon_sigkill_the_next_start_ends_the_orphans_it_left() {
    let h = Hangar::new();
    let daemon = h.start_daemon();
    // Two shells: one becomes a leader that ignores the hangup; the other
    // leaves a child that ignores it in its group and dies itself. (An agent
    // and its plain children die of the terminal hangup on their own.)
    let stubborn = h.new_agent(&["--provider", "shell", "--title", "stubborn leader"]);
    let parent = h.new_agent(&["--provider", "shell", "--title", "leaves a child"]);
    h.wait_state(&stubborn, "live");
    h.wait_state(&parent, "live");
    let groups = [
        pgid(h.pid_of(&stubborn)).expect("pgid"),
        pgid(h.pid_of(&parent)).expect("pgid"),
    ];
    h.ok(&["send", &stubborn, "trap '' HUP TERM; exec sleep 1000"]);
    h.ok(&[
        "send",
        &parent,
        "set +m; (trap '' HUP TERM; exec sleep 1001) &",
    ]);
    let sleeping = |group: i32, arg: &str| {
        processes_in_group(group)
            .into_iter()
            .any(|p| is_running(p) && cmdline(p).iter().any(|a| a == arg))
    };
    wait_until(
        "both stubborn sleeps run in their sessions' groups",
        DEADLINE,
        || sleeping(groups[0], "1000") && sleeping(groups[1], "1001"),
    );

    // SAFETY: as above.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
    wait_until("the daemon died", DEADLINE, || !is_running(daemon));
    wait_until("the second shell died of the hangup", DEADLINE, || {
        !is_running(groups[1])
    });
    let orphans: Vec<i32> = members(&groups)
        .into_iter()
        .filter(|&p| is_running(p))
        .collect();
    assert_eq!(
        orphans.len(),
        2,
        "a leader and a straggler outlived the daemon: {orphans:?}"
    );

    h.start_daemon();
    wait_until("the next start ended every orphan", DEADLINE, || {
        orphans.iter().all(|&p| !is_running(p))
    });
    // And restored the panes as new processes.
    for id in [&stubborn, &parent] {
        h.wait_state(id, "live");
        assert!(
            !groups.contains(&h.pid_of(id)),
            "a pane was restored as a new process"
        );
    }
    reliability_support::figures(
        "orphans",
        format!(
            "orphans_after_sigkill={} (a live leader, a straggler of a dead leader) \
             ended_at_next_start={}",
            orphans.len(),
            orphans.len()
        ),
    );
}

/// A `sleep` in a process group of its own, and its start time.
fn bystander() -> (std::process::Child, u32, u64) {
    let child = Command::new("sleep")
        .arg("1000")
        .process_group(0)
        .stdin(Stdio::null())
        .spawn()
        .expect("start sleep");
    let pid = child.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let start = hangar_daemon::os::parse_start_time(&stat).expect("start time");
    (child, pid, start)
}

#[test]
fn a_recorded_pid_reused_by_another_process_is_never_killed() {
    let h = Hangar::new();
    h.start_daemon();
    let reused = h.new_agent(&["--provider", "shell", "--parked", "--title", "reused"]);
    let real = h.new_agent(&["--provider", "shell", "--parked", "--title", "real"]);
    h.shutdown();

    let (mut innocent, innocent_pid, innocent_start) = bystander();
    let (mut orphan, orphan_pid, orphan_start) = bystander();
    {
        let mut opened =
            hangar_store::Store::open(&h.home.join("state.db")).expect("open the store");
        // Same pid, another start time: a process that reused the number.
        opened
            .store
            .record_process(
                &hangar_core::SessionId::new(reused),
                innocent_pid,
                innocent_pid,
                innocent_start + 7,
            )
            .expect("record");
        // Same pid and start time: what the killed daemon really started.
        opened
            .store
            .record_process(
                &hangar_core::SessionId::new(real),
                orphan_pid,
                orphan_pid,
                orphan_start,
            )
            .expect("record");
    }
    h.start_daemon();
    wait_until("the recorded orphan was ended", DEADLINE, || {
        matches!(orphan.try_wait(), Ok(Some(_)))
    });
    h.ok(&["status"]);
    assert!(
        matches!(innocent.try_wait(), Ok(None)),
        "a process that merely reuses a recorded pid was killed"
    );
    let _ = innocent.kill();
    let _ = innocent.wait();
}
