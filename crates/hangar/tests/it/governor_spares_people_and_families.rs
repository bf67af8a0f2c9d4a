//! The governor never takes what a person or a family of agents still needs:
//! the budget spares attached sessions and learns recency from attaching,
//! evict and close-idle skip agents in use and never orphan children, a
//! paused wake queue answers a person at once, and the journal records each
//! lifecycle step with its real reason. Processes are counted from /proc.

use crate::pty_screen;
use crate::support;

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};

use pty_screen::PtyApp;
use serde_json::{Value, json};
use support::*;

fn with_config(h: &Hangar, config: &str) {
    fs::create_dir_all(&h.home).unwrap();
    fs::write(h.home.join("config.toml"), config).unwrap();
}

fn parked(h: &Hangar, title: &str) -> String {
    h.new_agent(&["--provider", "claude", "--parked", "--title", title])
}

/// Attach a real terminal to `id` and wait for the agent's screen.
fn attach(h: &Hangar, id: &str) -> PtyApp {
    let term = PtyApp::spawn(h.command(&["attach", id]), 24, 100);
    term.wait_text("fake-agent");
    term
}

/// Whether the journal holds an event with all of `fields`.
fn journaled(h: &Hangar, fields: Value) -> bool {
    let want = fields.as_object().unwrap();
    h.journal()
        .iter()
        .any(|e| want.iter().all(|(k, v)| &e[k] == v))
}

fn ids(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            e["id"]
                .as_str()
                .unwrap_or_else(|| e.as_str().unwrap())
                .to_owned()
        })
        .collect()
}

/// Rewrite the workspace with `child`'s orchestration parent set to
/// `parent` (an export edited and imported back, as a restart would load it).
fn link(h: &Hangar, links: &[(&str, &str)]) {
    let mut export: Value = serde_json::from_str(&h.ok(&["export"])).unwrap();
    for (child, parent) in links {
        export["workspace"]["sessions"][*child]["relationships"]["orchestration_parent"] =
            json!(parent);
    }
    h.shutdown();
    for f in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = fs::remove_file(h.home.join(f));
    }
    h.import(&export);
}

#[test]
fn the_budget_never_hibernates_a_session_a_person_is_attached_to() {
    let h = Hangar::new();
    with_config(&h, "[governor]\nmax_live = 1\ncheck_interval_ms = 600000\n");
    let a = parked(&h, "attached");
    let b = parked(&h, "woken");
    let term = attach(&h, &a);
    h.ok(&["wake", &b]);
    assert_eq!(h.state_of(&b), "live");
    assert_eq!(h.state_of(&a), "live", "the attached session stays");
    assert!(
        !term.text().contains("exited"),
        "the person was thrown out:\n{}",
        term.text()
    );
    let status = h.status();
    assert_eq!(status["budget"]["over_budget"], true, "{status}");
    assert_eq!(h.session_agent_pids().len(), 2);
}

#[test]
fn attaching_makes_a_session_the_most_recently_used_for_the_budget() {
    let h = Hangar::new();
    with_config(&h, "[governor]\nmax_live = 2\ncheck_interval_ms = 600000\n");
    let a = parked(&h, "a");
    let b = parked(&h, "b");
    let c = parked(&h, "c");
    h.ok(&["wake", &a]);
    h.ok(&["wake", &b]);
    // `a` was woken first, but a person has used it since.
    let mut term = attach(&h, &a);
    term.write(b"\x02d");
    assert_eq!(term.wait_exit(), Some(0), "detached");
    h.ok(&["wake", &c]);
    h.wait_until(
        "b, now the least recently used, is hibernated",
        DEADLINE,
        || h.state_of(&b) == "hibernated",
    );
    assert_eq!(h.state_of(&a), "live");
    assert_eq!(h.state_of(&c), "live");
}

#[test]
fn evict_skips_parked_agents_mid_turn_or_attached_and_says_why() {
    let h = Hangar::new();
    let busy = parked(&h, "busy");
    let viewed = parked(&h, "viewed");
    let idle = parked(&h, "idle");
    h.ok(&["send", &busy, "slow 600000 long job"]);
    h.wait_screen(&busy, "working");
    let _term = attach(&h, &viewed);
    let done = h.json(&["evict", "--parked-older-than", "0s"]);
    assert_eq!(
        ids(&done["evicted"]),
        BTreeSet::from([idle.clone()]),
        "{done}"
    );
    let skipped = done["skipped"].as_array().unwrap();
    let reason = |id: &str| {
        skipped
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["reason"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{id} not reported as skipped: {done}"))
    };
    assert!(reason(&busy).contains("working"), "{done}");
    assert!(reason(&viewed).contains("attached"), "{done}");
    assert_eq!(h.state_of(&busy), "live");
    assert_eq!(h.state_of(&viewed), "live");
    assert_eq!(h.ls().len(), 2);
}

#[test]
fn evicting_a_parent_takes_its_idle_children_and_never_orphans_a_busy_one() {
    let h = Hangar::new();
    let parent = parked(&h, "parent");
    let child = parked(&h, "child");
    let busy_parent = parked(&h, "busy parent");
    let busy_child = parked(&h, "busy child");
    link(&h, &[(&child, &parent), (&busy_child, &busy_parent)]);
    h.ok(&["wake", &child]);
    h.ok(&["wake", &busy_child]);
    h.ok(&["send", &busy_child, "slow 600000 long job"]);
    h.wait_screen(&busy_child, "working");
    let busy_pid = h.pid_of(&busy_child);

    let done = h.json(&["evict", "--parked-older-than", "0s"]);
    assert_eq!(
        ids(&done["evicted"]),
        BTreeSet::from([parent.clone(), child.clone()]),
        "the idle family goes whole: {done}"
    );
    let skipped = ids(&done["skipped"]);
    assert_eq!(
        skipped,
        BTreeSet::from([busy_parent.clone(), busy_child.clone()]),
        "{done}"
    );
    let why = done["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == busy_parent.as_str())
        .unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(why.contains(&busy_child[..8]), "{why}");
    let left: BTreeSet<String> = h
        .ls()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        left,
        BTreeSet::from([busy_parent.clone(), busy_child.clone()])
    );
    assert!(
        is_running(busy_pid),
        "the busy child keeps running, with its parent"
    );
    assert_eq!(h.session_agent_pids(), vec![busy_pid]);
    for id in [&parent, &child] {
        assert!(journaled(
            &h,
            json!({"event": "close", "session": id, "cause": "evicted"})
        ));
    }
}

#[test]
fn close_idle_closes_a_family_only_whole() {
    let h = Hangar::new();
    let parent = parked(&h, "parent");
    let child = parked(&h, "child");
    link(&h, &[(&child, &parent)]);
    h.ok(&["wake", &child]);
    h.ok(&["send", &child, "slow 600000 long job"]);
    h.wait_screen(&child, "working");
    let child_pid = h.pid_of(&child);
    let done = h.json(&[
        "close-idle",
        "--older-than",
        "0s",
        "--include-live",
        "--yes",
    ]);
    assert!(ids(&done["closed"]).is_empty(), "{done}");
    assert_eq!(
        ids(&done["skipped"]),
        BTreeSet::from([parent.clone(), child.clone()]),
        "{done}"
    );
    assert!(is_running(child_pid));
    assert_eq!(h.ls().len(), 2);
}

/// `hangar mcp --session ID` driven over stdio with raw JSON-RPC lines, as
/// an agent's MCP client would; killed on drop.
struct Mcp {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Mcp {
    fn launch(h: &Hangar, session: &str) -> Mcp {
        let config: Value = serde_json::from_slice(
            &fs::read(h.home.join("mcp").join(format!("{session}.json"))).unwrap(),
        )
        .unwrap();
        let token = config["mcpServers"]["hangar"]["env"]["HANGAR_MCP_TOKEN"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut cmd = h.command(&["mcp", "--session", session]);
        cmd.env("HANGAR_MCP_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            out,
            next: 1,
        };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2024-11-05", "capabilities": {},
                   "clientInfo": {"name": "governor-test", "version": "0"}}),
        );
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, v: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.out.read_line(&mut line).unwrap() > 0,
                "hangar mcp ended"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// A tool's structured result.
    fn call(&mut self, name: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        assert_ne!(r["result"]["isError"], true, "{name} refused: {r}");
        r["result"]["structuredContent"].clone()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_paused_queue_answers_a_person_at_once_and_holds_agent_wakes_until_resumed() {
    let h = Hangar::new();
    with_config(
        &h,
        "[governor]\nwake_concurrency = 1\nwake_spacing_ms = 0\nbreaker_threshold = 3\ncheck_interval_ms = 600000\n",
    );
    // A codex that fails its login while the marker file exists.
    let marker = h.root.join("logged-out");
    let script = format!(
        "#!/bin/sh\nif [ -e '{}' ]; then FAKE_AGENT_FAIL=auth; export FAKE_AGENT_FAIL; fi\nexec '{}' --style codex \"$@\"\n",
        marker.display(),
        fake_agent_bin().display()
    );
    fs::write(&h.codex_bin, script).unwrap();
    let parent = h.new_agent(&["--provider", "codex", "--title", "parent"]);
    h.wait_state(&parent, "live");
    let mut mcp = Mcp::launch(&h, &parent);
    let child = mcp.call(
        "create_agent",
        json!({"provider": "codex", "title": "child"}),
    );
    let child = child["id"].as_str().unwrap().to_owned();
    let ids: Vec<String> = (0..4)
        .map(|i| {
            h.new_agent(&[
                "--provider",
                "codex",
                "--parked",
                "--title",
                &format!("c{i}"),
            ])
        })
        .collect();

    fs::write(&marker, "").unwrap();
    for id in &ids[..2] {
        let err = h.fail(&["wake", id]);
        assert!(err.contains("exited with code 1"), "{err}");
    }
    let tripping = h.fail(&["wake", &ids[2]]);
    assert!(
        tripping.contains("now paused") && tripping.contains("hangar wake --resume-queue"),
        "the wake that trips the breaker says so: {tripping}"
    );
    assert_eq!(h.status()["wake_queue"]["breaker"], "open");

    // A person is answered at once, not left waiting.
    let refused = h.fail(&["wake", &ids[3]]);
    assert!(
        refused.contains("paused") && refused.contains("hangar wake --resume-queue"),
        "{refused}"
    );
    assert_eq!(h.state_of(&ids[3]), "hibernated");
    assert_eq!(h.status()["wake_queue"]["pending"], 0);

    // An agent's wake waits in the queue until a person resumes it.
    fs::remove_file(&marker).unwrap();
    let sender = std::thread::spawn(move || {
        let sent = mcp.call("send_prompt", json!({"session": child, "prompt": "hello"}));
        (sent, child)
    });
    h.wait_until("the agent's wake waits in the queue", DEADLINE, || {
        h.status()["wake_queue"]["pending"] == 1
    });
    assert!(!sender.is_finished(), "a queued agent wake waits");
    h.ok(&["wake", "--resume-queue"]);
    let (sent, child) = sender.join().unwrap();
    assert_eq!(h.state_of(&child), "live", "{sent}");
    assert_eq!(h.status()["wake_queue"]["breaker"], "closed");
    h.ok(&["wake", &ids[3]]);
}

#[test]
fn the_journal_records_a_persons_hibernate_a_reload_a_cascading_close_and_an_exit() {
    let h = Hangar::new();
    let parent = parked(&h, "parent");
    let child = parked(&h, "child");
    let idle_child = parked(&h, "idle child");
    let quitter = parked(&h, "quitter");
    link(&h, &[(&child, &parent), (&idle_child, &quitter)]);

    // A person hibernates a parent; its idle child goes with it, for the
    // same reason.
    h.ok(&["wake", &quitter]);
    h.ok(&["wake", &idle_child]);
    h.wait_screen(&idle_child, "fake-agent");
    h.ok(&["hibernate", &quitter]);
    h.wait_state(&idle_child, "hibernated");
    for id in [&quitter, &idle_child] {
        assert!(
            journaled(
                &h,
                json!({"event": "hibernate", "session": id, "reason": "user"})
            ),
            "{id}: {:?}",
            h.journal()
        );
    }

    // A reload restarts the live agent: hibernate(reload), then reload.
    h.ok(&["wake", &parent]);
    h.ok(&["reload"]);
    assert!(journaled(
        &h,
        json!({"event": "hibernate", "session": parent, "reason": "reload"})
    ));
    assert!(journaled(&h, json!({"event": "reload", "restarted": 1})));

    // An agent that exits on its own.
    h.ok(&["wake", &quitter]);
    h.ok(&["send", &quitter, "exit"]);
    h.wait_state(&quitter, "exited");
    assert!(journaled(
        &h,
        json!({"event": "exited", "session": quitter, "code": 0})
    ));

    // A person closes the parent; its linked child goes as the cascade.
    h.ok(&["close", &parent, "--yes"]);
    assert!(journaled(
        &h,
        json!({"event": "close", "session": parent, "cause": "user"})
    ));
    assert!(journaled(
        &h,
        json!({"event": "close", "session": child, "cause": "cascade"})
    ));
}

fn worktree_path(h: &Hangar, id: &str) -> std::path::PathBuf {
    let row = h.session(id);
    std::path::PathBuf::from(
        row["worktree"]["path"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} has no worktree: {row}")),
    )
}

#[test]
fn evict_and_close_idle_remove_clean_worktrees_and_keep_ones_holding_work() {
    let h = Hangar::new();
    support::git::make_repo(&h);
    let new = |title: &str| {
        h.new_agent(&[
            "--provider",
            "shell",
            "--worktree",
            "--parked",
            "--title",
            title,
        ])
    };
    let (clean, dirty, idle) = (new("clean"), new("dirty"), new("idle"));
    let (clean_path, dirty_path, idle_path) = (
        worktree_path(&h, &clean),
        worktree_path(&h, &dirty),
        worktree_path(&h, &idle),
    );
    fs::write(dirty_path.join("notes.txt"), "work\n").unwrap();

    let evicted = h.json(&["evict", "--parked-older-than", "0s"]);
    assert_eq!(ids(&evicted["evicted"]).len(), 3, "{evicted}");
    assert!(!clean_path.exists(), "a clean worktree is removed");
    assert!(!idle_path.exists(), "a clean worktree is removed");
    assert!(dirty_path.join("notes.txt").is_file(), "work is kept");
    let kept = evicted["kept_worktrees"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{evicted}");
    assert_eq!(kept[0]["id"], dirty.as_str());

    let later = new("later");
    let later_path = worktree_path(&h, &later);
    let closed = h.json(&["close-idle", "--older-than", "0s", "--yes"]);
    assert_eq!(
        ids(&closed["closed"]),
        BTreeSet::from([later.clone()]),
        "{closed}"
    );
    assert!(!later_path.exists(), "close-idle removes a clean worktree");
}

#[test]
fn evict_takes_a_stale_hibernated_record_whose_last_turn_asked_a_question() {
    // Nothing runs: the question waits in the transcript, kept for resuming.
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let asked = parked(&h, "asked");
    h.ok(&["send", &asked, "ask which branch"]);
    h.wait_until("the agent asks", DEADLINE, || {
        h.session(&asked)["activity"] == "waiting"
    });
    h.ok(&["hibernate", &asked]);
    let done = h.json(&["evict", "--parked-older-than", "0s"]);
    assert_eq!(
        ids(&done["evicted"]),
        BTreeSet::from([asked.clone()]),
        "{done}"
    );
    assert!(h.ls().is_empty());
}

#[test]
fn typing_into_an_attached_session_makes_it_the_most_recently_used() {
    let h = Hangar::new();
    with_config(&h, "[governor]\nmax_live = 2\ncheck_interval_ms = 600000\n");
    let a = parked(&h, "a");
    let b = parked(&h, "b");
    let c = parked(&h, "c");
    h.ok(&["wake", &a]);
    let mut term = attach(&h, &a);
    let attached_at = std::time::Instant::now();
    h.ok(&["wake", &b]);
    // Typed input is stored at most every 5 s per session: let that pass
    // since the attach stored it, so the next keystroke counts.
    while attached_at.elapsed() < std::time::Duration::from_millis(5_300) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    term.write(b"hello\r");
    term.wait_text("answer: hello");
    term.write(b"\x02d");
    assert_eq!(term.wait_exit(), Some(0), "detached");
    h.ok(&["wake", &c]);
    h.wait_until("b, used before the typing, is hibernated", DEADLINE, || {
        h.state_of(&b) == "hibernated"
    });
    assert_eq!(h.state_of(&a), "live");
}
