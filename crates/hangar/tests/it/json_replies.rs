//! Snapshots of every JSON reply DESIGN.md section 4 promises (`new`, `ls`,
//! `status`, `tab ls`, `screen`, `transcript`, `search`, `evict --dry-run`, `doctor`,
//! `export`, `close` and its confirmation error), taken from the real daemon
//! with the fake agent.
//!
//! They pin the shape scripts rely on (keys, value types, nesting, the order
//! of rows) so a reorganisation of the daemon is checked to change nothing a
//! user sees. What differs from run to run is redacted before comparing:
//! ids become `[id N]` in order of first sight (so links between rows stay
//! visible), the temp root becomes `[ROOT]`, and pids, times and versions
//! become their key's name in brackets.

use crate::support;

use std::collections::HashMap;

use hangar_core::claude_slug::claude_project_slug;
use serde_json::{Map, Value, json};
use support::mcp::Mcp;
use support::{DEADLINE, Hangar};

/// Keys whose values are pids, clocks, durations or versions.
fn volatile(key: &str) -> bool {
    matches!(
        key,
        "pid" | "version" | "ts" | "timestamp" | "port" | "memory_bytes" | "resident_bytes"
    ) || key.ends_with("_ms")
        || key.ends_with("_at")
        || key.ends_with("_since")
}

/// Replaces what differs between runs, keeping every key and type.
struct Redactor {
    /// Replaced in this order: the folder of the test's binaries, the temp
    /// root, and the temp root's Claude project slug.
    paths: Vec<(String, &'static str)>,
    ids: HashMap<String, String>,
}

impl Redactor {
    fn new(h: &Hangar) -> Redactor {
        let bin_dir = support::hangar_bin()
            .parent()
            .expect("the binaries' folder")
            .display()
            .to_string();
        let root = h.root.display().to_string();
        let slug = claude_project_slug(&root);
        Redactor {
            paths: vec![(bin_dir, "[BIN]"), (root, "[ROOT]"), (slug, "[ROOT-SLUG]")],
            ids: HashMap::new(),
        }
    }

    fn value(&mut self, v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, v) in m {
                    let v = if volatile(k) && !v.is_null() {
                        json!(format!("[{k}]"))
                    } else {
                        self.value(v)
                    };
                    out.insert(self.text(k), v);
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(|v| self.value(v)).collect()),
            Value::String(s) => Value::String(self.text(s)),
            other => other.clone(),
        }
    }

    /// A string with the test's paths and every uuid (and its 8-character short
    /// form) replaced.
    fn text(&mut self, s: &str) -> String {
        let mut s = s.to_owned();
        for (path, name) in &self.paths {
            s = s.replace(path.as_str(), name);
        }
        for uuid in uuids(&s) {
            let n = self.ids.len() + 1;
            let name = self
                .ids
                .entry(uuid.clone())
                .or_insert(format!("[id {n}]"))
                .clone();
            s = s.replace(&uuid, &name);
        }
        let mut known: Vec<(String, String)> = self
            .ids
            .iter()
            .map(|(id, name)| (id[..8].to_owned(), name.clone()))
            .collect();
        known.sort();
        for (short, name) in known {
            s = s.replace(&short, &name);
        }
        s
    }
}

/// Rows in the order of their placement and title: the daemon lists rows of
/// one placement in the order of their random ids.
fn rows_by_title(rows: Value) -> Value {
    let mut rows = rows.as_array().cloned().expect("an array of rows");
    rows.sort_by_key(|row| (row["placement"].to_string(), row["title"].to_string()));
    Value::Array(rows)
}

/// Every uuid-shaped token (8-4-4-4-12 hex digits) in `s`.
fn uuids(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 36 <= b.len() {
        let cand = &b[i..i + 36];
        let shaped = cand.iter().enumerate().all(|(j, c)| match j {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
        if shaped {
            out.push(String::from_utf8_lossy(cand).into_owned());
            i += 36;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn every_promised_json_reply_keeps_its_shape() {
    let h = Hangar::new();
    let mut r = Redactor::new(&h);

    let new = h.json(&["new", "--title", "first", "--json"]);
    let pane = new["id"].as_str().expect("new prints its id").to_owned();
    insta::assert_json_snapshot!("new", r.value(&new));
    h.wait_screen(&pane, "fake-agent claude session");
    let parked = h.json(&["new", "--parked", "--title", "later", "--json"]);
    let parked = parked["id"].as_str().expect("an id").to_owned();
    r.text(&parked);
    h.ok(&["tab", "new", "backend"]);

    // A turn, so the pane has a transcript and a screen with an answer.
    h.ok(&["send", &pane, "hello there"]);
    h.wait_screen(&pane, "answer: hello there");
    let psid = h.wait_transcript_id(&pane);
    r.text(&psid);
    // A linked child (hibernated, parked), so `close` needs confirming.
    let mcp = Mcp::launch(&h, &pane);
    let child = mcp.ok("create_agent", json!({"run": "r1", "role": "tester"}));
    let child = child["id"].as_str().expect("an id").to_owned();
    r.text(&child);
    drop(mcp);
    h.wait_until("the child is listed", DEADLINE, || {
        h.ls().iter().any(|row| row["id"] == child.as_str())
    });

    // Activity settles (the turn's end is seen) before the rows are taken.
    h.wait_until("the pane's turn has ended", DEADLINE, || {
        h.session(&pane)["activity"] == "idle"
    });
    insta::assert_json_snapshot!("ls", r.value(&rows_by_title(h.json(&["ls", "--json"]))));
    insta::assert_json_snapshot!("status", r.value(&h.json(&["status", "--json"])));
    let mut tabs = h.json(&["tab", "ls", "--json"]);
    for tab in tabs.as_array_mut().expect("tab ls is an array") {
        // The parked pool is a set; its order follows the random ids.
        let parked = r.value(&tab["parked"]);
        let mut parked: Vec<Value> = parked.as_array().cloned().unwrap_or_default();
        parked.sort_by_key(|v| v.to_string());
        tab["parked"] = Value::Array(parked);
    }
    insta::assert_json_snapshot!("tab_ls", r.value(&tabs));
    insta::assert_json_snapshot!("screen", r.value(&h.json(&["screen", &pane, "--json"])));
    insta::assert_json_snapshot!(
        "transcript",
        r.value(&h.json(&["transcript", &pane, "--json"]))
    );
    insta::assert_json_snapshot!(
        "search",
        r.value(&h.json(&["search", "hello there", "--json"]))
    );
    insta::assert_json_snapshot!(
        "evict_dry_run",
        r.value(&{
            let mut v = h.json(&["evict", "--parked-older-than", "0s", "--dry-run", "--json"]);
            v["evicted"] = rows_by_title(v["evicted"].take());
            v
        })
    );
    insta::assert_json_snapshot!("doctor", r.value(&h.json(&["doctor", "--json"])));
    insta::assert_json_snapshot!("export", r.value(&h.json(&["export", "--json"])));

    let refused = h.run(&["close", &pane, "--json"]);
    assert!(!refused.status.success(), "a cascading close needs --yes");
    let refused = json!({
        "exit_code": refused.status.code(),
        "stdout": String::from_utf8_lossy(&refused.stdout),
        "stderr": String::from_utf8_lossy(&refused.stderr),
    });
    insta::assert_json_snapshot!("close_needs_confirmation", r.value(&refused));
    insta::assert_json_snapshot!(
        "close",
        r.value(&h.json(&["close", &pane, "--yes", "--json"]))
    );
    insta::assert_json_snapshot!(
        "ls_after_close",
        r.value(&rows_by_title(h.json(&["ls", "--json"])))
    );
    assert!(h.ls().iter().any(|row| row["id"] == parked.as_str()));
}
