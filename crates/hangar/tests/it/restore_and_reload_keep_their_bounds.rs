//! DESIGN.md rules 4 and 7, counted from /proc while they happen: a restore
//! starts at most `[restore] concurrency` agents at once and shows the panes
//! waiting for a slot as `spawning`; a pane slower than the spawn timeout
//! fails alone with its retry; a reload restarts live agents one at a time
//! and a restart that fails keeps its pane `failed` where it was.
//!
//! "Starting" is observed, not assumed: a fake agent in its start delay
//! (FAKE_AGENT_START_DELAY_MS) is alive in /proc but has not yet written the
//! start record naming its pid to its transcript.

use crate::support;

use std::collections::BTreeSet;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::Value;
use support::workspace::{Recipe, craft};
use support::*;

/// Pids named by a start record in any Claude transcript of the fixture.
fn started_pids(h: &Hangar) -> BTreeSet<i64> {
    let mut pids = BTreeSet::new();
    let projects = fs::read_dir(h.claude_dir.join("projects"))
        .into_iter()
        .flatten();
    for project in projects.flatten() {
        for file in fs::read_dir(project.path()).into_iter().flatten().flatten() {
            let text = fs::read_to_string(file.path()).unwrap_or_default();
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if v["subtype"] == "fake-agent-start"
                    && let Some(pid) = v["pid"].as_i64()
                {
                    pids.insert(pid);
                }
            }
        }
    }
    pids
}

/// One look at the fleet: (agents alive but still in their start delay,
/// agents alive). Processes are listed before transcripts are read, so an
/// agent counted as starting really was starting when it was listed.
fn look(h: &Hangar) -> (usize, usize) {
    let alive = h.session_agent_pids();
    let started = started_pids(h);
    let starting = alive
        .iter()
        .filter(|&&p| !started.contains(&i64::from(p)))
        .count();
    (starting, alive.len())
}

/// The most agents seen starting at once and alive at once while `f` ran,
/// and how many looks were taken.
struct Peaks {
    starting: usize,
    alive: usize,
    looks: usize,
}

/// Runs `f` while another thread looks at /proc as fast as it can.
fn peaks_while<R>(h: &Hangar, f: impl FnOnce() -> R) -> (R, Peaks) {
    /// Stops the sampler even when `f` panics (the scope would wait forever).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peaks = Peaks {
                starting: 0,
                alive: 0,
                looks: 0,
            };
            while !stop.load(Ordering::SeqCst) {
                let (starting, alive) = look(h);
                peaks.starting = peaks.starting.max(starting);
                peaks.alive = peaks.alive.max(alive);
                peaks.looks += 1;
                thread::sleep(Duration::from_millis(5));
            }
            peaks
        });
        let result = {
            let _stop = Stop(&stop);
            f()
        };
        (result, sampler.join().expect("sampler thread"))
    })
}

#[test]
fn a_restore_starts_at_most_its_concurrency_of_agents_at_once_and_shows_waiting_panes_as_spawning()
{
    let h = Hangar::with_env(&[("FAKE_AGENT_START_DELAY_MS", "1500")]);
    h.write_config("[restore]\nconcurrency = 2\n");
    let recipe = Recipe {
        tabs: 2,
        panes_per_tab: 3,
        parked: 2,
        pane_provider: |_| "claude",
    };
    let ws = craft(&recipe, &h.work);
    h.import(&ws.json);

    let mut waiting_seen = false;
    let ((), peaks) = peaks_while(&h, || {
        h.start_daemon();
        wait_until("the restore is complete", DEADLINE, || {
            let rows = h.ls();
            for pane in &ws.panes {
                let row = rows.iter().find(|r| r["id"] == pane.id.as_str()).unwrap();
                assert_ne!(
                    row["state"], "hibernated",
                    "a pane waiting for its restore slot shows as spawning: {row}"
                );
                waiting_seen |= row["state"] == "spawning" && row["pid"].is_null();
            }
            for parked in &ws.parked {
                let row = rows.iter().find(|r| r["id"] == parked.id.as_str()).unwrap();
                assert_eq!(row["state"], "hibernated", "{row}");
            }
            h.status()["restore"]["complete"] == true
        });
    });
    assert!(peaks.looks > 0);
    assert_eq!(
        peaks.starting, 2,
        "never more than `concurrency = 2` agents starting at once, and the two slots were used"
    );
    assert!(
        waiting_seen,
        "panes waited for a slot (and showed spawning)"
    );

    let status = h.status();
    assert_eq!(status["restore"]["restored"], 6, "{status}");
    assert_eq!(status["restore"]["complete"], true, "{status}");
    assert_eq!(status["restore"]["all_live"], true, "{status}");
    assert_eq!(h.session_agent_pids().len(), 6);
}

#[test]
fn a_pane_slower_than_the_spawn_timeout_fails_with_its_retry_and_the_others_restore() {
    let h = Hangar::new();
    // Two seconds is plenty for a healthy fake agent even on a loaded CI
    // machine, and far below the slow one's delay.
    h.write_config("[restore]\nspawn_timeout_secs = 2\n");
    // Only codex starts slowly: its wrapper sets the start delay.
    fs::write(
        &h.codex_bin,
        format!(
            "#!/bin/sh\nFAKE_AGENT_START_DELAY_MS=10000 exec '{}' --style codex \"$@\"\n",
            fake_agent_bin().display()
        ),
    )
    .unwrap();
    let recipe = Recipe {
        tabs: 1,
        panes_per_tab: 4,
        parked: 1,
        pane_provider: |i| if i == 1 { "codex" } else { "claude" },
    };
    let ws = craft(&recipe, &h.work);
    h.import(&ws.json);
    let slow = &ws.panes[1];

    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["expected"], 4, "{status}");
    assert_eq!(status["restore"]["restored"], 3, "{status}");
    assert_eq!(status["restore"]["failed"], 1, "{status}");
    assert_eq!(status["restore"]["all_live"], false, "{status}");
    let row = h.session(&slow.id);
    assert_eq!(row["state"], "failed", "{row}");
    assert_eq!(row["placement"], "pane", "the pane stays: {row}");
    let reason = row["reason"].as_str().unwrap();
    assert!(
        reason.contains("spawn timeout"),
        "names the timeout: {reason}"
    );
    assert!(
        reason.contains(&format!("`hangar wake {}` retries", &slow.id[..8])),
        "names the retry: {reason}"
    );
    let failed = status["failed"]
        .as_array()
        .expect("status lists failed sessions");
    assert_eq!(failed.len(), 1, "{status}");
    assert_eq!(failed[0]["id"], slow.id.as_str());
    assert_eq!(failed[0]["reason"], reason);
    for pane in ws.panes.iter().filter(|p| p.id != slow.id) {
        assert_eq!(h.state_of(&pane.id), "live");
    }
    wait_until("the timed-out agent is stopped", DEADLINE, || {
        h.session_agent_pids().len() == 3
    });
}

#[test]
fn reload_restarts_live_agents_one_at_a_time() {
    let h = Hangar::with_env(&[("FAKE_AGENT_START_DELAY_MS", "600")]);
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let c = h.split(&b, "horizontal");
    let d = h.split(&a, "horizontal");
    let panes = [a, b, c, d];
    let old: Vec<i32> = panes
        .iter()
        .map(|id| h.wait_state(id, "live")["pid"].as_i64().unwrap() as i32)
        .collect();

    let (reply, peaks) = peaks_while(&h, || h.json(&["reload", "--dangerous", "on"]));
    assert_eq!(
        reply["restarted"].as_array().map(Vec::len),
        Some(4),
        "{reply}"
    );
    assert_eq!(
        peaks.starting, 1,
        "one agent restarting at a time, never two ({} looks)",
        peaks.looks
    );
    assert!(
        peaks.alive <= 4,
        "each old process is stopped before its new one starts: {} alive at once",
        peaks.alive
    );
    for (id, old) in panes.iter().zip(old) {
        let pid = h.wait_state(id, "live")["pid"].as_i64().unwrap() as i32;
        assert_ne!(pid, old, "{id} was restarted");
        assert!(
            cmdline(pid)
                .iter()
                .any(|a| a == "--dangerously-skip-permissions")
        );
    }
}

#[test]
fn a_restart_that_fails_during_reload_keeps_its_pane_failed_in_place() {
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.new_agent(&[
        "--provider",
        "codex",
        "--split",
        &a,
        "--direction",
        "vertical",
    ]);
    let c = h.split(&b, "horizontal");
    for id in [&a, &b, &c] {
        h.wait_state(id, "live");
    }
    let tabs_before = h.json(&["tab", "ls"]);
    let tab_before = h.session(&b)["tab"].clone();

    // The program goes away while it runs; the reload's restart cannot start it.
    fs::remove_file(&h.codex_bin).unwrap();
    let reply = h.json(&["reload", "--dangerous", "on"]);
    let failed = reply["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{reply}");
    assert_eq!(failed[0]["id"], b.as_str(), "{reply}");
    assert!(
        failed[0]["reason"].as_str().unwrap().contains("codex"),
        "{reply}"
    );
    let restarted: Vec<&str> = reply["restarted"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(restarted, vec![a.as_str(), c.as_str()], "{reply}");

    let row = h.session(&b);
    assert_eq!(row["state"], "failed", "{row}");
    assert_eq!(row["placement"], "pane", "{row}");
    assert_eq!(row["tab"], tab_before, "{row}");
    assert_eq!(
        h.json(&["tab", "ls"]),
        tabs_before,
        "the layout is untouched: the failed pane is where it was"
    );
    let status = h.status();
    assert_eq!(status["failed"][0]["id"], b.as_str(), "{status}");
    for id in [&a, &c] {
        let pid = h.wait_state(id, "live")["pid"].as_i64().unwrap() as i32;
        assert!(
            cmdline(pid)
                .iter()
                .any(|x| x == "--dangerously-skip-permissions")
        );
    }
    assert_eq!(h.session_agent_pids().len(), 2);
}
