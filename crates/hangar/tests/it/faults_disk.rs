//! Issue 18, faults of the disk under a running daemon: `HANGAR_HOME` on a
//! small tmpfs that fills up while the store writes, and the same tmpfs
//! remounted read-only. Each change the daemon cannot persist is refused with
//! a clear error and is not shown either (the daemon's model goes back to
//! the last save); every change it acknowledged is on disk; the daemon keeps
//! answering; and once space (or write access) returns, changes persist
//! again and a restart shows exactly the acknowledged state.
//!
//! Both tests mount a tmpfs, which needs root (CI runs as root); elsewhere
//! they print one SKIPPED line.

use crate::faults_support;
use crate::reliability_support;
use crate::support;

use std::collections::BTreeSet;

use faults_support::{ReadOnlyBind, Tmpfs};
use support::*;

/// Size of the tmpfs home: room for the store, its WAL, the socket and the
/// logs of a short test, little enough to fill in a moment.
const HOME_KIB: u64 = 4096;

/// A fixture whose home is a fresh tmpfs, or `None` (after a SKIPPED line)
/// where mounting is not permitted.
fn home_on_tmpfs(test: &str) -> Option<(Tmpfs, Hangar)> {
    let h = Hangar::new();
    match Tmpfs::mount(&h.home, HOME_KIB) {
        Ok(t) => Some((t, h)),
        Err(why) => {
            faults_support::skip(test, &format!("{why} (needs root)"));
            None
        }
    }
}

fn titles(h: &Hangar) -> BTreeSet<String> {
    h.ls()
        .iter()
        .filter_map(|r| r["title"].as_str().map(str::to_owned))
        .collect()
}

/// The titles saved in the store file, read without a daemon; also checks
/// the store opens without recovery or repair.
fn titles_on_disk(h: &Hangar) -> BTreeSet<String> {
    let opened = hangar_store::Store::open(&h.home.join("state.db")).expect("open the store");
    assert!(opened.recovered.is_none(), "the store needed no recovery");
    assert!(opened.pruned.is_empty(), "the store needed no repair");
    opened
        .workspace
        .sessions
        .values()
        .map(|m| m.title.clone())
        .collect()
}

/// Shows the daemon still serves: reads, and typing into a live shell.
fn still_serves(h: &Hangar, shell: &str, marker: &str) {
    h.ok(&["status"]);
    h.ok(&["tab", "ls"]);
    h.ok(&["send", shell, &format!("echo {marker}")]);
    h.wait_screen(shell, &format!("\n{marker}"));
}

#[test]
fn a_full_disk_refuses_the_change_keeps_the_last_good_state_and_recovers() {
    let Some((tmpfs, h)) = home_on_tmpfs("full disk") else {
        return;
    };
    h.start_daemon();
    let shell = h.new_agent(&["--provider", "shell", "--title", "pane"]);
    h.wait_state(&shell, "live");
    let mut acknowledged: BTreeSet<String> = ["pane".to_owned()].into();
    for i in 0..3 {
        let t = format!("kept-{i}");
        h.new_agent(&["--provider", "shell", "--parked", "--title", &t]);
        acknowledged.insert(t);
    }

    let ballast = tmpfs.fill();
    // Changes until one is refused: SQLite may fit a few into space it
    // already holds (its WAL), and those are acknowledged and durable.
    let padding = "x".repeat(3000);
    let mut refusal = None;
    for i in 0..400 {
        let t = format!("full-{i}-{padding}");
        let out = h.run(&["new", "--provider", "shell", "--parked", "--title", &t]);
        if out.status.success() {
            acknowledged.insert(t);
        } else {
            refusal = Some((t, String::from_utf8_lossy(&out.stderr).into_owned()));
            break;
        }
    }
    let (refused_title, stderr) = refusal.expect("a change on a full disk is refused");
    assert!(
        stderr.contains("full") && stderr.contains("state.db"),
        "the refusal says the disk is full and which file: {stderr}"
    );
    assert!(
        stderr.contains("nothing was changed"),
        "and that the change was not made: {stderr}"
    );
    assert!(
        !titles(&h).contains(&refused_title),
        "a refused change is not shown as if it had happened"
    );
    assert_eq!(
        titles(&h),
        acknowledged,
        "ls shows exactly what was acknowledged"
    );
    // Other changes are refused the same way, and the daemon serves.
    let park = h.run(&["bury", &shell]);
    assert!(!park.status.success(), "a bury on a full disk is refused");
    assert_eq!(h.session(&shell)["placement"], "pane", "and not applied");
    still_serves(&h, &shell, "served-while-full");

    // Space returns: changes persist again.
    std::fs::remove_file(&ballast).expect("remove ballast");
    h.new_agent(&["--provider", "shell", "--parked", "--title", "after"]);
    acknowledged.insert("after".to_owned());
    still_serves(&h, &shell, "served-after");
    let free_after = tmpfs.free_bytes();
    h.shutdown();
    assert_eq!(
        titles_on_disk(&h),
        acknowledged,
        "the store holds every acknowledged change and no refused one"
    );
    h.start_daemon();
    assert_eq!(titles(&h), acknowledged, "a restart shows the same");
    reliability_support::figures(
        "full disk",
        format!(
            "home_tmpfs_kib={HOME_KIB} acknowledged={} refused_after={} free_after_kib={} stderr={:?}",
            acknowledged.len(),
            acknowledged.len() - 5,
            free_after / 1024,
            stderr.trim()
        ),
    );
}

#[test]
fn a_read_only_home_keeps_serving_says_what_it_cannot_write_and_loses_nothing() {
    let h = Hangar::new();
    h.start_daemon();
    let shell = h.new_agent(&["--provider", "shell", "--title", "pane"]);
    h.wait_state(&shell, "live");
    h.new_agent(&["--provider", "shell", "--parked", "--title", "kept"]);
    let mut acknowledged = titles(&h);

    let ro = match ReadOnlyBind::over(&h.home) {
        Ok(ro) => ro,
        Err(why) => {
            faults_support::skip("read-only home", &format!("{why} (needs root)"));
            return;
        }
    };
    assert!(
        std::fs::write(h.home.join("probe"), b"x").is_err(),
        "the home is read-only for new writes"
    );
    // The store's file is already open: its changes still go to disk and
    // are acknowledged only once they did.
    let out = h.run(&[
        "new",
        "--provider",
        "shell",
        "--parked",
        "--title",
        "while-ro",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        acknowledged.insert("while-ro".to_owned());
    } else {
        assert!(stderr.contains("read-only"), "a refusal says why: {stderr}");
    }
    assert_eq!(
        titles(&h),
        acknowledged,
        "ls shows exactly what was acknowledged"
    );
    // An agent needs new files (its MCP config, its hook settings): it
    // fails with the reason, or starts; either way the daemon serves.
    let agent = h.run(&[
        "--json",
        "new",
        "--provider",
        "claude",
        "--title",
        "agent-ro",
    ]);
    let agent_err = String::from_utf8_lossy(&agent.stderr).into_owned();
    let agent_out = String::from_utf8_lossy(&agent.stdout).into_owned();
    eprintln!("agent while read-only: {agent_out} {agent_err}");
    if titles(&h).contains("agent-ro") {
        acknowledged.insert("agent-ro".to_owned());
    }
    still_serves(&h, &shell, "served-read-only");

    drop(ro);
    h.new_agent(&["--provider", "shell", "--parked", "--title", "after"]);
    acknowledged.insert("after".to_owned());
    assert_eq!(titles(&h), acknowledged);
    h.shutdown();
    assert_eq!(
        titles_on_disk(&h),
        acknowledged,
        "the store holds what was acknowledged"
    );
    h.start_daemon();
    assert_eq!(titles(&h), acknowledged, "a restart shows the same");
    reliability_support::figures(
        "read-only home",
        format!(
            "store_change_while_ro={} agent_while_ro={:?}",
            if out.status.success() {
                "acknowledged and durable"
            } else {
                "refused"
            },
            (agent_out.trim(), agent_err.trim())
        ),
    );
}
