//! Issue 20, restore: a restore slot bounds how many agents are starting
//! (forked, no first output yet), not how many are settling (printed, and
//! watched for a moment to prove they do not exit at once). So the settles of
//! a 9-pane restore overlap instead of queueing behind the slots; and however
//! many sessions are persisted, only the visible panes get a process while
//! every other session stays hibernated and listable.
//!
//! Overlap is shown by the order of the journal's events, never by a
//! wall-clock figure: with one slot and a settle far longer than a fake
//! agent's start, every pane's `spawn-begin` comes before the first pane's
//! `spawn-end`. Were a slot held through the settle, each `spawn-begin` would
//! have to wait for the previous `spawn-end`.

use crate::support;

use std::collections::BTreeSet;

use support::workspace::{Recipe, craft};
use support::*;

#[test]
fn one_slot_forks_all_nine_panes_while_the_first_still_settles() {
    let h = Hangar::new();
    // One slot: at most one agent starting at a time. A settle far longer
    // than nine fake-agent starts, so "all nine forked before the first
    // settle ended" cannot happen by luck of timing, only by overlap.
    h.write_config("[restore]\nconcurrency = 1\nsettle_ms = 4000\n");
    let ws = craft(&Recipe::field(4), &h.work);
    h.import(&ws.json);
    h.start_daemon();
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert_eq!(status["restore"]["all_live"], true, "{status}");

    let panes: BTreeSet<&str> = ws.panes.iter().map(|p| p.id.as_str()).collect();
    let mut begun = Vec::new();
    let mut first_end = None;
    for entry in h.journal() {
        let session = entry["session"].as_str().unwrap_or_default();
        match entry["event"].as_str() {
            Some("spawn-begin") => {
                assert!(panes.contains(session), "only panes spawn: {entry}");
                begun.push(session.to_owned());
            }
            Some("spawn-end") => {
                first_end.get_or_insert_with(|| (begun.len(), entry.clone()));
            }
            Some("spawn-failed") => panic!("no pane fails: {entry}"),
            _ => {}
        }
    }
    assert_eq!(begun.len(), 9, "each pane forked once: {begun:?}");
    let (begun_before_first_end, end) = first_end.expect("the panes ended their spawns");
    assert_eq!(
        begun_before_first_end, 9,
        "every pane forked before the first settle ended ({end}): settles overlap"
    );
    assert_eq!(h.session_agent_pids().len(), 9);
    for pane in &ws.panes {
        assert_eq!(h.state_of(&pane.id), "live");
    }
}

#[test]
fn two_thousand_persisted_sessions_spawn_only_the_nine_panes_and_list_the_rest_hibernated() {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(1_991), &h.work);
    h.import(&ws.json);
    for round in 0..2 {
        if round == 1 {
            h.shutdown();
            h.start_daemon();
        }
        let status = h.wait_restore_complete();
        assert_eq!(
            status["sessions"]["total"], 2_000,
            "round {round}: {status}"
        );
        assert_eq!(status["restore"]["restored"], 9, "round {round}: {status}");
        assert_eq!(
            status["restore"]["hibernated"], 1_991,
            "round {round}: {status}"
        );
        assert_eq!(
            status["sessions"]["hibernated"], 1_991,
            "round {round}: {status}"
        );
        assert_eq!(
            h.session_agent_pids().len(),
            9,
            "round {round}: exactly the panes run"
        );
        let rows = h.ls();
        assert_eq!(rows.len(), 2_000, "round {round}: every session is listed");
        for parked in &ws.parked {
            let row = rows
                .iter()
                .find(|r| r["id"] == parked.id.as_str())
                .unwrap_or_else(|| panic!("round {round}: {} is listed", parked.id));
            assert_eq!(row["state"], "hibernated", "round {round}: {row}");
            assert_eq!(row["placement"], "parked", "round {round}: {row}");
            assert!(row["pid"].is_null(), "round {round}: {row}");
            assert_eq!(row["provider_session_id"], parked.psid.as_str());
            assert_eq!(row["title"], parked.title.as_str());
        }
        for pane in &ws.panes {
            assert_eq!(h.processes_with_flag("--resume", &pane.psid).len(), 1);
        }
    }

    // A hibernated one wakes on demand, resuming its own id, and alone.
    let agent = &ws.parked[1_500];
    h.ok(&["wake", &agent.id]);
    let pid = h.wait_state(&agent.id, "live")["pid"].as_i64().unwrap() as i32;
    assert_eq!(
        arg_after(&cmdline(pid), "--resume").as_deref(),
        Some(agent.psid.as_str())
    );
    assert_eq!(h.session_agent_pids().len(), 10);
}
