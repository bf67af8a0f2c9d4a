//! Process-level test of two panes sharing one provider session id when the
//! daemon restores them: one runs, the other is refused and says why, on
//! its pane, in `status` and in the human `hangar ls`.

use crate::support;

use serde_json::Value;
use support::{DEADLINE, Hangar};

#[test]
fn a_duplicate_refused_during_restore_is_a_failed_pane_with_the_reason_and_ls_marks_both() {
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let psid = h.session(&a)["provider_session_id"]
        .as_str()
        .expect("a fresh claude pane has its requested id")
        .to_owned();
    // Make B resume A's conversation: edit the export, load it back.
    let mut doc: Value = serde_json::from_str(&h.ok(&["export"])).unwrap();
    doc["workspace"]["sessions"][&b]["provider_session"]["id"] = Value::String(psid.clone());
    h.shutdown();
    // Import merges and refuses known ids: load it into a fresh home.
    let first = h;
    let h = Hangar::new();
    h.import(&doc);
    h.start_daemon();
    h.wait_restore_complete();

    let (winner, loser) = if h.state_of(&a) == "live" {
        (a.clone(), b.clone())
    } else {
        (b.clone(), a.clone())
    };
    assert_eq!(h.state_of(&winner), "live");
    let row = h.session(&loser);
    assert_eq!(row["state"], "failed", "{row}");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("two processes writing one conversation corrupt it")
            && reason.contains(winner.as_str()),
        "{reason}"
    );
    assert_eq!(h.processes_with_flag("--resume", &psid).len(), 1);

    let status = h.status();
    assert_eq!(status["restore"]["failed"], 1, "{status}");
    assert_eq!(status["sessions"]["failed"], 1, "{status}");
    let human = h.ok(&["status"]);
    // The sessions line, not only the restore line, counts it.
    assert!(human.contains("hibernated, 1 failed"), "{human}");

    h.wait_until("ls marks both as duplicates", DEADLINE, || {
        let ls = h.ok(&["ls"]);
        ls.contains(&format!("duplicate of {}", &winner[..8.min(winner.len())]))
            && ls.contains(&format!("duplicate of {}", &loser[..8.min(loser.len())]))
            && ls.contains("hangar doctor")
    });
    drop(first);
}
