//! Issue 3 acceptance for the command-line contract: session ids by unique
//! prefix, clear errors for ambiguous and unknown ids, confirmation before a
//! close cascades to linked children, tab commands, and park / unpark / bury
//! / unbury / pin / unpin moving sessions as DESIGN.md section 1 says.

use crate::support;

use serde_json::{Value, json};
use support::workspace::{Recipe, craft};
use support::*;

#[test]
fn a_unique_prefix_names_a_session_and_ambiguous_or_unknown_ids_are_refused_clearly() {
    let h = Hangar::new();
    // Crafted ids share long prefixes: 0000000a-0000-4000-8000-00000000000N.
    let ws = craft(&Recipe::field(2), &h.work);
    h.import(&ws.json);
    h.wait_restore_complete();
    let first = &ws.panes[0].id;

    let fresh = h.new_pane();
    h.wait_state(&fresh, "live");
    let screen = h.ok(&["screen", &fresh[..8]]);
    assert!(screen.contains("fake-agent claude session"), "{screen}");
    h.ok(&["pin", &fresh[..6]]);
    assert_eq!(h.session(&fresh)["pinned"], true);

    let err = h.fail(&["screen", "0000000a"]);
    assert!(err.contains("ambiguous"), "{err}");
    assert!(err.contains(first.as_str()), "names the candidates: {err}");

    let err = h.fail(&["wake", "zzzz-no-such"]);
    assert!(err.contains("zzzz-no-such"), "names the id: {err}");
    assert!(
        err.to_lowercase().contains("no session") || err.contains("not found"),
        "{err}"
    );
    assert_eq!(h.session_agent_pids().len(), 10, "refusals change nothing");
}

#[test]
fn closing_a_session_with_linked_children_asks_for_yes_and_lists_them() {
    let h = Hangar::new();
    let mut ws = craft(&Recipe::field(4), &h.work);
    let parent = ws.panes[0].id.clone();
    let children = [ws.panes[1].id.clone(), ws.parked[1].id.clone()];
    for child in &children {
        ws.json["workspace"]["sessions"][child]["relationships"]["linked_parent"] = json!(parent);
    }
    h.import(&ws.json);
    h.wait_restore_complete();
    assert_eq!(h.session(&children[0])["linked_parent"], parent.as_str());
    let parent_pid = h.pid_of(&parent);
    let child_pid = h.pid_of(&children[0]);

    let err = h.fail(&["close", &parent]);
    assert!(err.contains("--yes"), "asks for --yes: {err}");
    for child in &children {
        assert!(err.contains(&child[..8]), "lists child {child}: {err}");
    }
    assert_eq!(h.ls().len(), 13, "nothing closed without --yes");
    assert!(is_running(parent_pid));

    h.ok(&["close", &parent, "--yes"]);
    let ids: Vec<String> = h
        .ls()
        .iter()
        .map(|r| r["id"].as_str().unwrap().into())
        .collect();
    assert_eq!(
        ids.len(),
        10,
        "parent and its two linked children closed: {ids:?}"
    );
    assert!(!ids.contains(&parent) && children.iter().all(|c| !ids.contains(c)));
    wait_until("the parent's and child's groups are gone", DEADLINE, || {
        processes_in_group(parent_pid).is_empty() && processes_in_group(child_pid).is_empty()
    });

    // A session without linked children closes without --yes.
    h.ok(&["close", &ws.panes[2].id]);
}

fn tab<'a>(tabs: &'a Value, title: &str) -> &'a Value {
    tabs.as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == title)
        .unwrap_or_else(|| panic!("no tab {title:?} in {tabs}"))
}

#[test]
fn tab_new_ls_rename_and_close_manage_tabs() {
    let h = Hangar::new();
    h.ok(&["tab", "new", "alpha"]);
    let a = h.new_pane();
    h.ok(&["tab", "new", "beta"]);
    let tabs = h.json(&["tab", "ls"]);
    assert_eq!(tabs.as_array().unwrap().len(), 2, "{tabs}");
    assert_eq!(
        tab(&tabs, "beta")["active"],
        true,
        "a new tab is active: {tabs}"
    );
    assert_eq!(tab(&tabs, "alpha")["panes"], json!([a]), "{tabs}");

    let b = h.new_pane();
    assert_eq!(
        h.session(&b)["tab"],
        tab(&tabs, "beta")["id"],
        "new goes to the active tab"
    );

    h.ok(&["tab", "rename", "beta", "gamma"]);
    let tabs = h.json(&["tab", "ls"]);
    assert_eq!(tab(&tabs, "gamma")["panes"], json!([b]), "{tabs}");
    assert!(
        tabs.as_array()
            .unwrap()
            .iter()
            .all(|t| t["title"] != "beta")
    );

    // By id prefix as well as by title.
    let alpha_id = tab(&tabs, "alpha")["id"].as_str().unwrap().to_owned();
    h.ok(&["tab", "rename", &alpha_id[..8], "delta"]);

    let b_pid = h.wait_state(&b, "live")["pid"].as_i64().unwrap() as i32;
    let err = h.fail(&["tab", "close", "gamma"]);
    assert!(err.contains("--yes"), "{err}");
    h.ok(&["tab", "close", "gamma", "--yes"]);
    let tabs = h.json(&["tab", "ls"]);
    assert_eq!(tabs.as_array().unwrap().len(), 1, "{tabs}");
    assert_eq!(tabs[0]["title"], "delta");
    wait_until("the closed tab's pane is gone", DEADLINE, || {
        processes_in_group(b_pid).is_empty()
    });
    let err = h.fail(&["tab", "close", "no-such-tab"]);
    assert!(err.contains("no-such-tab"), "{err}");
}

#[test]
fn park_unpark_bury_unbury_pin_and_unpin_move_sessions_as_designed() {
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    h.wait_state(&a, "live");
    let b_pid = h.wait_state(&b, "live")["pid"].as_i64().unwrap() as i32;
    let tab_id = h.session(&a)["tab"].clone();

    h.ok(&["park", &b]);
    let row = h.session(&b);
    assert_eq!(
        (row["placement"].clone(), row["state"].clone()),
        (json!("parked"), json!("live"))
    );
    assert_eq!(row["pid"], b_pid, "parked stays live, same process");
    let tabs = h.json(&["tab", "ls"]);
    assert_eq!(tabs[0]["parked"], json!([b]));
    assert_eq!(tabs[0]["panes"], json!([a]));

    h.ok(&["unpark", &b]);
    let row = h.session(&b);
    assert_eq!(row["placement"], "pane");
    assert_eq!(
        row["pid"], b_pid,
        "unpark of a live agent keeps its process"
    );
    assert_eq!(row["tab"], tab_id);

    h.ok(&["bury", &b]);
    assert_eq!(h.session(&b)["placement"], "buried");
    assert_eq!(h.json(&["tab", "ls"])[0]["panes"], json!([a]));

    h.ok(&["pin", &b]);
    assert_eq!(h.session(&b)["pinned"], true);

    // After a restart the buried session is hibernated (not in the live
    // set); unbury puts it back next to its sibling and wakes it.
    h.shutdown();
    h.start_daemon();
    h.wait_restore_complete();
    let row = h.session(&b);
    assert_eq!(
        (row["placement"].clone(), row["state"].clone()),
        (json!("buried"), json!("hibernated"))
    );
    assert_eq!(row["pinned"], true, "the pin survives");
    assert_eq!(h.session_agent_pids().len(), 1);

    h.ok(&["unbury", &b]);
    let row = h.wait_state(&b, "live");
    assert_eq!(row["placement"], "pane");
    assert_eq!(row["tab"], tab_id);
    let panes = h.json(&["tab", "ls"])[0]["panes"].clone();
    assert_eq!(panes.as_array().unwrap().len(), 2, "{panes}");
    assert_eq!(h.session_agent_pids().len(), 2);

    h.ok(&["unpin", &b]);
    assert_eq!(h.session(&b)["pinned"], false);

    // Unparking a hibernated agent wakes it.
    h.ok(&["park", &b]);
    h.ok(&["hibernate", &b]);
    assert_eq!(h.state_of(&b), "hibernated");
    h.ok(&["unpark", &b]);
    assert_eq!(h.wait_state(&b, "live")["placement"], "pane");
}
