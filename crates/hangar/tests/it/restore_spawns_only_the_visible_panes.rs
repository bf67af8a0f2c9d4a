//! Issue 4 acceptance, counted from /proc: a restart spawns exactly the panes
//! on screen, each resuming its own provider session, and keeps every other
//! agent hibernated with everything it had; wake, hibernate, reload and
//! failed panes behave as DESIGN.md section 2 says.

use crate::support;

use std::collections::BTreeMap;
use std::thread;

use serde_json::Value;
use support::workspace::{Recipe, craft, orchestration_parent_index};
use support::*;

/// The parts of an ls row that must survive any number of restarts.
fn durable(row: &Value) -> Value {
    let mut keep = serde_json::Map::new();
    for key in [
        "id",
        "provider",
        "cwd",
        "title",
        "placement",
        "tab",
        "provider_session_id",
        "pinned",
        "parent",
        "root",
        "run",
        "linked_parent",
    ] {
        keep.insert(key.into(), row[key].clone());
    }
    Value::Object(keep)
}

fn durable_rows(h: &Hangar) -> BTreeMap<String, Value> {
    h.ls()
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_owned(), durable(r)))
        .collect()
}

/// Asserts the restored fleet: exactly the panes run, each resuming its own
/// provider id, and every parked agent is hibernated.
fn assert_only_panes_run(h: &Hangar, ws: &support::workspace::CraftedWorkspace) {
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["expected"], ws.panes.len(), "{status}");
    assert_eq!(status["restore"]["restored"], ws.panes.len(), "{status}");
    assert_eq!(status["restore"]["failed"], 0, "{status}");
    assert_eq!(status["restore"]["all_live"], true, "{status}");
    let agents = h.session_agent_pids();
    assert_eq!(
        agents.len(),
        ws.panes.len(),
        "exactly the panes run: {:?}",
        agents.iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
    for pane in &ws.panes {
        let row = h.session(&pane.id);
        assert_eq!(row["state"], "live", "{row}");
        let pid = row["pid"].as_i64().unwrap() as i32;
        assert_eq!(
            arg_after(&cmdline(pid), "--resume").as_deref(),
            Some(pane.psid.as_str()),
            "pane {} resumes its own provider session: {:?}",
            pane.title,
            cmdline(pid)
        );
        assert_eq!(h.processes_with_flag("--resume", &pane.psid), vec![pid]);
    }
    for parked in &ws.parked {
        let row = h.session(&parked.id);
        assert_eq!(row["state"], "hibernated", "{row}");
        assert_eq!(row["provider_session_id"], parked.psid.as_str());
        assert_eq!(row["title"], parked.title.as_str());
        assert!(row["pid"].is_null());
    }
}

/// A fixture holding the field case (9 panes over 3 tabs, 40 parked),
/// restored by a first start.
fn field_case() -> (Hangar, support::workspace::CraftedWorkspace) {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(40), &h.work);
    h.import(&ws.json);
    assert_only_panes_run(&h, &ws);
    (h, ws)
}

#[test]
fn a_restart_spawns_exactly_the_nine_panes_and_hibernates_the_forty_parked_agents() {
    let (h, ws) = field_case();
    let before = durable_rows(&h);
    assert_eq!(before.len(), 49);

    h.shutdown();
    assert!(
        h.fake_agent_pids_for_home().is_empty(),
        "shutdown ends every agent"
    );
    h.start_daemon();
    assert_only_panes_run(&h, &ws);
    let status = h.status();
    assert_eq!(status["restore"]["hibernated"], 40, "{status}");
    assert_eq!(status["sessions"]["hibernated"], 40, "{status}");
    assert_eq!(status["sessions"]["live"], 9, "{status}");
    assert_eq!(
        durable_rows(&h),
        before,
        "ids, titles, relationships and pins survive"
    );
}

#[test]
fn hibernated_parent_and_child_agents_keep_their_links_across_two_restarts() {
    let (h, ws) = field_case();
    for round in 0..2 {
        h.shutdown();
        h.start_daemon();
        h.wait_restore_complete();
        for (i, agent) in ws.parked.iter().enumerate() {
            let row = h.session(&agent.id);
            assert_eq!(row["state"], "hibernated", "round {round}: {row}");
            match orchestration_parent_index(i) {
                Some(p) => {
                    assert_eq!(
                        row["parent"],
                        ws.parked[p].id.as_str(),
                        "round {round}: {row}"
                    );
                    assert_eq!(
                        row["root"],
                        ws.parked[0].id.as_str(),
                        "round {round}: {row}"
                    );
                    assert_eq!(row["run"], format!("run-{}", i / 4), "round {round}: {row}");
                }
                None => assert!(row["parent"].is_null(), "round {round}: {row}"),
            }
            assert_eq!(
                row["pinned"],
                i % 10 == 0,
                "round {round}: pins kept: {row}"
            );
        }
    }
}

#[test]
fn waking_one_parked_agent_adds_exactly_one_process_resuming_its_id() {
    let (h, ws) = field_case();
    let agent = &ws.parked[7];
    h.ok(&["wake", &agent.id]);
    let row = h.wait_state(&agent.id, "live");
    assert_eq!(row["placement"], "parked", "waking does not unpark");
    let pid = row["pid"].as_i64().unwrap() as i32;
    assert_eq!(
        arg_after(&cmdline(pid), "--resume").as_deref(),
        Some(agent.psid.as_str())
    );
    assert_eq!(h.session_agent_pids().len(), 10);

    // Waking a live session is a no-op.
    h.ok(&["wake", &agent.id]);
    assert_eq!(h.pid_of(&agent.id), pid);
    assert_eq!(h.session_agent_pids().len(), 10);
}

#[test]
fn twenty_concurrent_wakes_of_one_hibernated_agent_start_exactly_one_process() {
    let (h, ws) = field_case();
    let agent = &ws.parked[3];
    thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|_| s.spawn(|| h.run(&["wake", &agent.id])))
            .collect();
        for handle in handles {
            let out = handle.join().unwrap();
            assert!(
                out.status.success(),
                "every wake answers: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    h.wait_state(&agent.id, "live");
    assert_eq!(
        h.processes_with_flag("--resume", &agent.psid).len(),
        1,
        "one process for the woken agent"
    );
    assert_eq!(h.session_agent_pids().len(), 10, "nine panes plus one");
}

#[test]
fn reload_with_dangerous_on_restarts_only_the_live_panes_and_hibernated_agents_pick_it_up_on_wake()
{
    let (h, ws) = field_case();
    let old: BTreeMap<String, i32> = ws
        .panes
        .iter()
        .map(|p| (p.id.clone(), h.pid_of(&p.id)))
        .collect();

    h.ok(&["reload", "--dangerous", "on"]);
    wait_until("every pane runs dangerous", DEADLINE, || {
        ws.panes.iter().all(|p| {
            let row = h.session(&p.id);
            row["state"] == "live"
                && row["pid"].as_i64().is_some_and(|pid| {
                    cmdline(pid as i32)
                        .iter()
                        .any(|a| a == "--dangerously-skip-permissions")
                })
        })
    });
    for pane in &ws.panes {
        let pid = h.pid_of(&pane.id);
        assert_ne!(pid, old[&pane.id], "pane {} was restarted", pane.title);
        assert!(!is_running(old[&pane.id]), "its old process is gone");
        assert_eq!(
            arg_after(&cmdline(pid), "--resume").as_deref(),
            Some(pane.psid.as_str()),
            "same provider session after reload"
        );
    }
    assert_eq!(
        h.session_agent_pids().len(),
        9,
        "no hibernated agent was started"
    );
    for parked in &ws.parked {
        assert_eq!(h.state_of(&parked.id), "hibernated");
    }

    let agent = &ws.parked[12];
    h.ok(&["wake", &agent.id]);
    let pid = h.wait_state(&agent.id, "live")["pid"].as_i64().unwrap() as i32;
    let args = cmdline(pid);
    assert!(
        args.iter().any(|a| a == "--dangerously-skip-permissions"),
        "the next wake carries the flag: {args:?}"
    );
    assert_eq!(
        arg_after(&args, "--resume").as_deref(),
        Some(agent.psid.as_str())
    );
}

#[test]
fn a_pane_whose_program_is_missing_fails_alone_and_every_record_survives_two_restarts() {
    let h = Hangar::new();
    let mut recipe = Recipe::field(40);
    recipe.pane_provider = |i| if i == 4 { "codex" } else { "claude" };
    let ws = craft(&recipe, &h.work);
    h.import(&ws.json);
    std::fs::remove_file(&h.codex_bin).unwrap();
    let broken = &ws.panes[4];

    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["expected"], 9, "{status}");
    assert_eq!(status["restore"]["restored"], 8, "{status}");
    assert_eq!(status["restore"]["failed"], 1, "{status}");
    // Honest: every planned spawn finished, but not all of them are live.
    assert_eq!(status["restore"]["complete"], true, "{status}");
    assert_eq!(status["restore"]["all_live"], false, "{status}");
    assert_eq!(status["sessions"]["failed"], 1, "{status}");
    assert_eq!(status["failed"][0]["id"], broken.id.as_str(), "{status}");
    let row = h.session(&broken.id);
    assert_eq!(row["state"], "failed", "{row}");
    assert!(
        row["reason"].as_str().is_some_and(|r| r.contains("codex")),
        "a readable reason: {row}"
    );
    assert_eq!(h.session_agent_pids().len(), 8, "the other 8 run");
    let before = durable_rows(&h);
    assert_eq!(before.len(), 49);

    for _ in 0..2 {
        h.shutdown();
        h.start_daemon();
        h.wait_restore_complete();
        assert_eq!(durable_rows(&h), before, "every record is still there");
        assert_eq!(h.state_of(&broken.id), "failed");
    }
}

#[test]
fn wake_retries_a_failed_pane_once_its_program_is_back() {
    let h = Hangar::new();
    let mut recipe = Recipe::field(4);
    recipe.pane_provider = |i| if i == 0 { "codex" } else { "claude" };
    let ws = craft(&recipe, &h.work);
    h.import(&ws.json);
    let wrapper = std::fs::read(&h.codex_bin).unwrap();
    std::fs::remove_file(&h.codex_bin).unwrap();
    h.wait_restore_complete();
    let pane = &ws.panes[0];
    assert_eq!(h.state_of(&pane.id), "failed");

    std::fs::write(&h.codex_bin, wrapper).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&h.codex_bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    h.ok(&["wake", &pane.id]);
    let pid = h.wait_state(&pane.id, "live")["pid"].as_i64().unwrap() as i32;
    let args = cmdline(pid);
    assert_eq!(
        args[args.len() - 2..],
        ["resume".to_owned(), pane.psid.clone()],
        "codex resumes with a trailing `resume <id>`: {args:?}"
    );
    assert_eq!(h.session_agent_pids().len(), 9);
}

#[test]
fn hibernate_stops_the_process_and_keeps_the_record_for_the_next_wake() {
    let h = Hangar::new();
    let id = h.new_pane();
    let row = h.wait_state(&id, "live");
    let pid = row["pid"].as_i64().unwrap() as i32;
    let psid = row["provider_session_id"].as_str().unwrap().to_owned();

    h.ok(&["hibernate", &id]);
    wait_until("the hibernated agent's group is gone", DEADLINE, || {
        processes_in_group(pid).is_empty()
    });
    let row = h.session(&id);
    assert_eq!(row["state"], "hibernated", "{row}");
    assert_eq!(row["placement"], "pane", "{row}");
    assert_eq!(row["provider_session_id"], psid.as_str());
    assert!(h.fake_agent_pids_for_home().is_empty());

    h.ok(&["wake", &id]);
    let pid = h.wait_state(&id, "live")["pid"].as_i64().unwrap() as i32;
    assert_eq!(arg_after(&cmdline(pid), "--resume"), Some(psid));
}

#[test]
fn park_keeps_a_running_agent_running() {
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    h.wait_state(&a, "live");
    h.wait_state(&b, "live");
    let pid = h.pid_of(&b);

    h.ok(&["park", &b]);
    let row = h.session(&b);
    assert_eq!(row["placement"], "parked", "{row}");
    assert_eq!(row["state"], "live", "{row}");
    assert_eq!(row["pid"], pid, "same process");
    assert!(is_running(pid));
    assert_eq!(h.session_agent_pids().len(), 2);
}

#[test]
fn closing_a_tab_asks_for_yes_then_closes_its_panes_and_parked_agents() {
    let h = Hangar::new();
    let keep = h.new_pane();
    h.ok(&["tab", "new", "doomed"]);
    let pane = h.new_agent(&["--provider", "claude", "--tab", "doomed"]);
    let live_parked = h.split(&pane, "vertical");
    h.wait_state(&live_parked, "live");
    h.ok(&["park", &live_parked]);
    let cold_parked = h.new_agent(&["--provider", "claude", "--tab", "doomed", "--parked"]);
    let parked_pid = h.pid_of(&live_parked);
    let pane_pid = h.wait_state(&pane, "live")["pid"].as_i64().unwrap() as i32;

    let err = h.fail(&["tab", "close", "doomed"]);
    assert!(err.contains("--yes"), "asks for --yes: {err}");
    for id in [&live_parked, &cold_parked] {
        assert!(err.contains(&id[..8]), "lists parked agent {id}: {err}");
    }
    assert_eq!(h.ls().len(), 4, "nothing closed without --yes");

    h.ok(&["tab", "close", "doomed", "--yes"]);
    let ids: Vec<_> = h.ls().iter().map(|r| r["id"].clone()).collect();
    assert_eq!(
        ids,
        vec![Value::from(keep.clone())],
        "only the other tab's pane is left"
    );
    wait_until("the closed tab's processes are gone", DEADLINE, || {
        processes_in_group(parked_pid).is_empty() && processes_in_group(pane_pid).is_empty()
    });
    assert_eq!(h.session_agent_pids().len(), 1);
}

#[test]
fn ten_thousand_persisted_sessions_with_nine_panes_restore_with_exactly_nine_processes() {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(9_991), &h.work);
    h.import(&ws.json);
    let status = h.wait_restore_complete();
    assert_eq!(status["sessions"]["total"], 10_000, "{status}");
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert_eq!(status["restore"]["hibernated"], 9_991, "{status}");
    assert_eq!(h.session_agent_pids().len(), 9);
    for pane in &ws.panes {
        assert_eq!(h.processes_with_flag("--resume", &pane.psid).len(), 1);
    }
}
