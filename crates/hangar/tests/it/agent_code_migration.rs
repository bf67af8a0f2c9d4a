//! Process-level tests of the Agent Code migration through the real CLI and
//! daemon: what a running daemon starts after importing each shape (counted
//! from /proc), bad files refused with the daemon still serving, Agent Code's
//! file found where Agent Code keeps it, and tmux-backed terminals adopted
//! with a real tmux.
//!
//! Fixtures: hangar-store/tests/fixtures/agent-code (SOURCES.md names the
//! Agent Code source file each part follows).

use crate::support;

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::{DEADLINE, Hangar, fake_agent_bin};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../hangar-store/tests/fixtures/agent-code"
);

fn fixture(name: &str) -> Value {
    let text = fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn fixture_id(name: &str) -> String {
    fixture("ids.json")[name].as_str().unwrap().to_owned()
}

/// Every `cwd` of the document pointed at `dir`, so its agents can start.
fn retarget(v: &mut Value, dir: &str) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "cwd" && v.is_string() {
                    *v = Value::String(dir.to_owned());
                } else {
                    retarget(v, dir);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| retarget(i, dir)),
        _ => {}
    }
}

/// A hangar whose shell is the fake agent too, so every started pane is
/// countable as a hangar-fake-agent process.
fn hangar() -> Hangar {
    let fake = fake_agent_bin().display().to_string();
    Hangar::with_env(&[("HANGAR_SHELL", &fake)])
}

fn write_fixture(h: &Hangar, name: &str) -> String {
    let mut doc = fixture(name);
    retarget(&mut doc, &h.work.display().to_string());
    let file = h.root.join(name);
    fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    file.display().to_string()
}

#[test]
fn importing_each_shape_into_a_running_daemon_starts_only_what_agent_code_shows() {
    // (fixture, sessions, processes Agent Code itself starts at boot)
    for (name, sessions, started) in [
        ("v3-stage-september-2026.json", 7, 1),
        ("v2-windows-september-2026.json", 12, 5),
        ("v1-july-2026.json", 7, 4),
    ] {
        let h = hangar();
        h.start_daemon();
        let file = write_fixture(&h, name);
        let report = h.json(&["import", "agent-code", &file]);
        assert_eq!(report["imported"]["sessions"], sessions, "{name}: {report}");
        assert_eq!(report["restoring"], true, "{name}");
        h.wait_until("the import is restored", DEADLINE, || {
            let r = &h.status()["restore"];
            r["complete"] == true && r["expected"] == started
        });
        // An imported conversation the provider no longer has fails to
        // resume (the fake opencode, like the real one, refuses an unknown
        // session id): that pane is kept as failed with the provider's
        // reason and runs nothing (DESIGN.md rule 4).
        let failed: Vec<Value> = h
            .ls()
            .into_iter()
            .filter(|r| r["state"] == "failed")
            .collect();
        for f in &failed {
            assert_eq!(f["provider"], "opencode", "{name}: {f}");
            assert!(
                f["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("Session not found"),
                "{f}"
            );
        }
        let running = started - failed.len();
        h.wait_until("the panes' agents run", DEADLINE, || {
            h.session_agent_pids().len() == running
        });
        let rows = h.ls();
        assert_eq!(rows.len(), sessions, "{name}");
        let live = rows.iter().filter(|r| r["state"] == "live").count();
        assert_eq!(live, running, "{name}: {rows:?}");
        // Still exactly that many once everything settled.
        assert_eq!(h.session_agent_pids().len(), running, "{name}");
        if name.starts_with("v3") {
            let lead = h.session(&fixture_id("v3-lead"));
            assert_eq!(lead["placement"], "pane");
            let worker = h.session(&fixture_id("v3-worker"));
            assert_eq!(
                (&worker["placement"], &worker["state"]),
                (&json!("parked"), &json!("hibernated"))
            );
            assert_eq!(worker["parent"], fixture_id("v3-lead").as_str());
        }
        h.shutdown();
    }
}

#[test]
fn a_bad_file_is_refused_with_its_path_and_nothing_is_imported_and_the_daemon_keeps_serving() {
    let h = hangar();
    let pid = h.start_daemon();
    let dir = h.root.join("bad");
    fs::create_dir_all(dir.join("a-folder")).unwrap();
    let good = write_fixture(&h, "v1-may-2026.json");
    let text = fs::read_to_string(&good).unwrap();
    fs::write(dir.join("truncated.json"), &text[..text.len() / 2]).unwrap();
    fs::write(dir.join("not-json.json"), "this is not json\n").unwrap();
    let deep = format!(
        "{{\"workspace\": {}{}}}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    fs::write(dir.join("deep.json"), deep).unwrap();
    let mut bad_value: Value = serde_json::from_str(&text).unwrap();
    bad_value["workspace"]["tabs"][2]["root"]["a"]["ratio"] = json!("wide");
    fs::write(dir.join("bad-value.json"), bad_value.to_string()).unwrap();
    // 200 MB, sparse: costs no disk.
    let huge = fs::File::create(dir.join("huge.json")).unwrap();
    huge.set_len(200 * 1024 * 1024).unwrap();
    drop(huge);

    for (file, needle) in [
        ("truncated.json", "not valid JSON"),
        ("not-json.json", "not valid JSON"),
        ("deep.json", "recursion limit"),
        (
            "bad-value.json",
            "workspace.tabs[2].root.a.ratio: expected a number",
        ),
        ("a-folder", "is a folder"),
        ("huge.json", "larger than 64 MiB"),
    ] {
        let path = dir.join(file);
        let err = h.fail(&["import", "agent-code", path.to_str().unwrap()]);
        assert!(err.contains(needle), "{file}: {err}");
        assert!(
            err.contains("nothing was imported") || err.contains("Nothing was imported"),
            "{file}: {err}"
        );
        assert!(
            err.contains(path.to_str().unwrap()),
            "{file}: the error names the file: {err}"
        );
        // Nothing half-imported, and the same daemon still answers.
        assert!(h.ls().is_empty(), "{file}");
        assert_eq!(h.daemon_pid(), pid, "{file}");
    }
    // And a good import still works afterwards.
    let report = h.json(&["import", "agent-code", &good]);
    assert_eq!(report["imported"]["sessions"], 37);
    assert_eq!(h.daemon_pid(), pid);
}

#[test]
fn without_a_file_the_import_finds_agent_codes_file_and_lists_them_when_there_are_several() {
    let h = hangar();
    let config = h.user_home.join(".config");
    fs::create_dir_all(config.join("agent-code")).unwrap();
    fs::create_dir_all(config.join("cc-shell")).unwrap();

    let err = h.fail(&["import", "agent-code", "--dry-run"]);
    assert!(err.contains("no Agent Code workspace was found"), "{err}");

    // Only the old cc-shell file (before the 2026-05-12 rename).
    let old = config.join("cc-shell").join("workspace.json");
    let mut doc = fixture("v1-july-2026.json");
    retarget(&mut doc, &h.work.display().to_string());
    fs::write(&old, doc.to_string()).unwrap();
    let report = h.json(&["import", "agent-code", "--dry-run"]);
    assert_eq!(report["file"], old.display().to_string());
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["imported"]["sessions"], 7);
    // A dry run imports nothing and starts nothing.
    assert!(h.daemon_pid_opt().is_none());

    // The current file and a pre-v3 backup beside it: not a terminal, so a
    // clear error listing all three.
    let current = config.join("agent-code").join("workspace.json");
    let backup = config
        .join("agent-code")
        .join("workspace.json.pre-v3-1790000000000.bak");
    fs::write(
        &current,
        fixture("v3-stage-september-2026.json").to_string(),
    )
    .unwrap();
    fs::write(&backup, doc.to_string()).unwrap();
    let err = h.fail(&["import", "agent-code"]);
    assert!(err.contains("several Agent Code workspace files"), "{err}");
    for p in [&current, &backup, &old] {
        assert!(err.contains(&p.display().to_string()), "{err}");
    }
    assert!(h.daemon_pid_opt().is_none(), "nothing was imported");
}

#[test]
fn a_dry_run_shows_what_would_be_kept_and_dropped_with_each_conversation() {
    let h = hangar();
    let file = write_fixture(&h, "v3-stage-september-2026.json");
    let report = h.json(&["import", "agent-code", "--dry-run", &file]);
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["source"], "agent-code v3 (2 window(s))");
    let ghost = report["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == fixture_id("v3-ghost").as_str())
        .unwrap_or_else(|| panic!("the ghost is listed: {report}"));
    assert_eq!(ghost["provider"], "claude");
    assert_eq!(
        ghost["provider_session_id"],
        fixture_id("v3-conv-ghost").as_str()
    );
    assert_eq!(ghost["cwd"], h.work.display().to_string());
    assert!(
        report["kept"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["kind"] == "lane")
    );

    let human = h.ok(&["import", "agent-code", "--dry-run", &file]);
    assert!(human.contains("would import 7 session(s)"), "{human}");
    assert!(human.contains(&fixture_id("v3-conv-ghost")), "{human}");
    assert!(human.contains("nothing was imported (dry run)"), "{human}");
    assert!(h.daemon_pid_opt().is_none());
}

/// The tmux server of one test: its own socket folder, killed on drop even
/// when the test fails.
struct Tmux {
    dir: std::path::PathBuf,
}

impl Tmux {
    fn new(root: &Path) -> Tmux {
        let dir = root.join("tmux");
        fs::create_dir_all(&dir).unwrap();
        Tmux { dir }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(args)
            .env("TMUX_TMPDIR", &self.dir)
            .env_remove("TMUX")
            .output()
            .expect("tmux is installed (apt package tmux)")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

#[test]
fn a_live_agentcode_tmux_session_is_adopted_by_its_shell_pane_and_a_gone_one_is_reported() {
    let mut h = hangar();
    let tmux = Tmux::new(&h.root);
    h.set_env("TMUX_TMPDIR", tmux.dir.clone());
    let alive = "agentcode-0d6c3f7e-5b2a-4c19-9e8d-7f6a5b4c3d2e";
    let gone = "agentcode-9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
    // What Agent Code's TmuxRegistry does: a detached session running the
    // shell, here a marker and `cat` so the screen is recognizable.
    let out = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        alive,
        "-x",
        "80",
        "-y",
        "24",
        "sh -c 'echo adopted-from-agent-code; exec cat'",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let cwd = h.work.display().to_string();
    let doc = json!({"workspace": {
        "tabs": [{"id": "t1", "title": "shells", "focusedSessionId": "s-alive",
                  "root": {"type": "split", "direction": "vertical", "ratio": 0.5,
                           "a": {"type": "leaf", "sessionId": "s-alive"},
                           "b": {"type": "leaf", "sessionId": "s-gone"}}}],
        "activeTabId": "t1",
        "sessions": {
            "s-alive": {"cwd": cwd, "kind": "terminal", "tmuxName": alive},
            "s-gone": {"cwd": cwd, "kind": "terminal", "tmuxName": gone}
        }
    }});
    let file = h.root.join("tmux-workspace.json");
    fs::write(&file, doc.to_string()).unwrap();
    h.start_daemon();
    let report = h.json(&["import", "agent-code", file.to_str().unwrap()]);
    let tmux_notes: Vec<&Value> = report["kept"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kind"] == "tmux")
        .collect();
    assert_eq!(tmux_notes.len(), 2, "{report}");
    let note = |id: &str| {
        tmux_notes
            .iter()
            .find(|k| k["id"] == id)
            .map(|k| k["note"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert!(note("s-alive").contains("attaches to it"), "{report}");
    assert!(note("s-gone").contains("is gone"), "{report}");

    // The adopted pane shows the tmux session's screen; the other runs a
    // fresh shell (the fake agent).
    h.wait_screen("s-alive", "adopted-from-agent-code");
    h.wait_until("the gone terminal runs a fresh shell", DEADLINE, || {
        h.session_agent_pids().len() == 1
    });
    let client = h.pid_of("s-alive");
    let argv = support::cmdline(client);
    assert!(argv[0].ends_with("tmux"), "{argv:?}");
    assert_eq!(argv[1..], ["attach-session", "-t", &format!("={alive}")]);
    h.shutdown();
    // Closing hangar detached the client; the tmux session (and what runs in
    // it) lives on, as it did across Agent Code restarts.
    assert!(
        tmux.run(&["has-session", "-t", &format!("={alive}")])
            .status
            .success()
    );
}

#[test]
fn importing_while_agent_code_rewrites_its_file_reads_one_whole_version_and_never_writes_it() {
    let h = hangar();
    let config = h.user_home.join(".config").join("agent-code");
    fs::create_dir_all(&config).unwrap();
    let file = config.join("workspace.json");
    // Two versions Agent Code could have written, one after the other, each
    // the way it writes (a temp file, then a rename over the old one).
    let versions: Vec<String> = ["v1-july-2026.json", "v3-stage-september-2026.json"]
        .iter()
        .map(|n| serde_json::to_string_pretty(&fixture(n)).unwrap())
        .collect();
    fs::write(&file, &versions[0]).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, file, versions) = (stop.clone(), file.clone(), versions.clone());
        std::thread::spawn(move || {
            let tmp = file.with_extension("json.tmp");
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                fs::write(&tmp, &versions[n % 2]).unwrap();
                fs::rename(&tmp, &file).unwrap();
            }
            n
        })
    };
    let mut sources = std::collections::BTreeSet::new();
    for _ in 0..6 {
        let report = h.json(&["import", "agent-code", "--dry-run"]);
        // Both versions hold 7 sessions; a torn read would fail to parse.
        assert_eq!(report["imported"]["sessions"], 7, "{report}");
        sources.insert(report["source"].as_str().unwrap().to_owned());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rewrites = writer.join().unwrap();
    assert!(rewrites > 0);
    assert!(!sources.is_empty());
    // A real import leaves Agent Code's file exactly as it was.
    let before = (
        fs::read(&file).unwrap(),
        fs::metadata(&file).unwrap().modified().unwrap(),
    );
    let report = h.json(&["import", "agent-code"]);
    assert_eq!(report["imported"]["sessions"], 7, "{report}");
    let after = (
        fs::read(&file).unwrap(),
        fs::metadata(&file).unwrap().modified().unwrap(),
    );
    assert!(before == after, "hangar never writes Agent Code's file");
}
