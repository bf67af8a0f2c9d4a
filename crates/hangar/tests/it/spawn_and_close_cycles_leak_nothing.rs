//! Issue 3 acceptance (DESIGN.md rule 8, no orphans): hundreds of
//! new/close cycles leave the daemon's open fd count and child count where
//! they started, with no zombie and no leaked PTY.

use crate::support;

use support::*;

const CYCLES: usize = 200;

/// The PTY masters the daemon holds open.
fn open_ptys(daemon: i32) -> usize {
    std::fs::read_dir(format!("/proc/{daemon}/fd"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|t| t.to_string_lossy().contains("ptmx"))
                .count()
        })
        .unwrap_or(0)
}

/// The daemon's children that are still running (zombies counted apart).
fn running_children(daemon: i32) -> usize {
    children_of(daemon)
        .into_iter()
        .filter(|&c| !is_zombie(c))
        .count()
}

#[test]
fn two_hundred_new_close_cycles_leave_fds_and_children_where_they_started() {
    let h = Hangar::new();
    // One pane that stays, so the tab and the daemon are in a steady state.
    let keep = h.new_pane();
    h.wait_state(&keep, "live");
    // A warm-up cycle: first-use allocations (store, runtime threads) are
    // not leaks.
    let warm = h.new_pane();
    h.ok(&["close", &warm]);
    let daemon = h.daemon_pid();
    // A closed session's PTY master is released once its agent has exited
    // and its watchers have seen that, a moment after `close` answers: the
    // baseline is taken after that, so a lingering one is not counted in it.
    wait_until("the warm-up session is gone", DEADLINE, || {
        running_children(daemon) == 1 && open_ptys(daemon) == 1
    });
    let fds_before = open_fds(daemon);
    let children_before = children_of(daemon).len();

    for i in 0..CYCLES {
        let id = h.new_pane();
        let out = h.run(&["close", &id]);
        assert!(
            out.status.success(),
            "cycle {i}: close failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    wait_until(
        "the daemon's children are back to the one kept pane",
        DEADLINE,
        || children_of(daemon).len() == children_before,
    );
    wait_until(
        "the daemon's fd count is back where it started",
        DEADLINE,
        || open_fds(daemon) <= fds_before,
    );
    assert!(
        children_of(daemon).iter().all(|&c| !is_zombie(c)),
        "no zombie left"
    );
    assert_eq!(h.session_agent_pids().len(), 1, "only the kept pane runs");
    wait_until("one PTY master open, the kept pane's", DEADLINE, || {
        open_ptys(daemon) == 1
    });
    assert_eq!(h.ls().len(), 1);
}
