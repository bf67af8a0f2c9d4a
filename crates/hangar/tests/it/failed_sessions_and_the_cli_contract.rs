//! A failed session says what works and the advice works: config.toml is
//! read again by `hangar reload` and by `hangar wake` of a failed session.
//! And the contract lines of DESIGN.md section 4 around lifecycle: the
//! default provider, `send`/`attach` waking first, `status` listing failed
//! sessions, wake and `ls` saying "started fresh", a closed stdout ending a
//! report quietly, and an auto-started daemon passing no inherited fd on.

use crate::pty_screen;
use crate::support;

use std::fs;
use support::*;

fn fake() -> String {
    fake_agent_bin().display().to_string()
}

#[test]
fn a_missing_program_names_config_toml_and_wake_starts_it_once_config_names_it() {
    let mut h = Hangar::new();
    h.set_env("HANGAR_OPENCODE_BIN", "");
    h.set_env("PATH", "/nonexistent");
    let id = h.new_agent(&["--provider", "opencode"]);
    let row = h.wait_state(&id, "failed");
    let reason = row["reason"].as_str().unwrap();
    let config = h.home.join("config.toml");
    for part in [
        "program `opencode` not found".to_owned(),
        format!("set [providers.opencode] program in {}", config.display()),
        format!("run `hangar wake {}`", &id[..8]),
        "restart the daemon with HANGAR_OPENCODE_BIN set".to_owned(),
    ] {
        assert!(reason.contains(&part), "{part:?} missing from: {reason}");
    }
    // `status` says which session failed and why, in JSON and for people.
    let status = h.status();
    assert_eq!(
        status["failed"],
        serde_json::json!([{"id": id, "title": "opencode", "reason": reason}]),
        "{status}"
    );
    let human = h.ok(&["status"]);
    assert!(
        human.contains(&format!("failed   {} opencode: {reason}", &id[..8])),
        "{human}"
    );

    // Follow the advice, exactly.
    h.write_config(&format!(
        "[providers.opencode]\nprogram = \"{}\"\n",
        h.opencode_bin.display()
    ));
    h.ok(&["wake", &id]);
    let pid = h.wait_state(&id, "live")["pid"].as_i64().unwrap() as i32;
    assert_eq!(
        arg_after(&cmdline(pid), "--style").as_deref(),
        Some("opencode")
    );
    assert_eq!(h.status()["failed"], serde_json::json!([]));
}

#[test]
fn a_provider_added_to_config_toml_can_be_used_after_reload_and_a_broken_file_changes_nothing() {
    // A name no shipped CLI file has (aider is one since issue 45).
    let h = Hangar::new();
    h.ok(&["status"]);
    let err = h.fail(&["new", "--provider", "mytool"]);
    assert!(err.contains("providers.mytool"), "{err}");

    h.write_config("[providers.mytool\n");
    let err = h.fail(&["reload"]);
    assert!(
        err.contains("config.toml") && err.contains("keeps the settings it has"),
        "{err}"
    );
    h.ok(&["status"]);

    h.write_config(&format!(
        "[providers.mytool]\nprogram = \"{}\"\nargs = [\"--model\", \"mytool-model\"]\n",
        fake()
    ));
    let reply = h.json(&["reload"]);
    assert_eq!(reply["config"]["changed"], true, "{reply}");
    let id = h.new_agent(&["--provider", "mytool"]);
    let pid = h.wait_state(&id, "live")["pid"].as_i64().unwrap() as i32;
    assert_eq!(
        arg_after(&cmdline(pid), "--model").as_deref(),
        Some("mytool-model")
    );
}

#[test]
fn reload_with_dangerous_on_restarts_a_custom_provider_that_defines_dangerous_args() {
    let h = Hangar::new();
    h.write_config(&format!(
        "[providers.aider]\nprogram = \"{f}\"\ndangerous_args = [\"--dangerously-skip-permissions\"]\n\
         [providers.plain]\nprogram = \"{f}\"\n",
        f = fake()
    ));
    let aider = h.new_agent(&["--provider", "aider"]);
    let plain = h.new_agent(&["--provider", "plain"]);
    let aider_pid = h.wait_state(&aider, "live")["pid"].as_i64().unwrap() as i32;
    let plain_pid = h.wait_state(&plain, "live")["pid"].as_i64().unwrap() as i32;

    let reply = h.json(&["reload", "--dangerous", "on"]);
    assert_eq!(reply["restarted"], serde_json::json!([aider]), "{reply}");
    let pid = h.wait_state(&aider, "live")["pid"].as_i64().unwrap() as i32;
    assert_ne!(pid, aider_pid, "restarted");
    assert!(
        cmdline(pid)
            .iter()
            .any(|a| a == "--dangerously-skip-permissions"),
        "{:?}",
        cmdline(pid)
    );
    assert_eq!(
        h.pid_of(&plain),
        plain_pid,
        "no dangerous_args: not restarted"
    );
}

#[test]
fn wake_and_ls_say_when_a_session_started_fresh_and_not_when_it_resumed() {
    let h = Hangar::new();
    // Parked at birth: no provider session id yet, so its first wake is fresh.
    let id = h.new_agent(&["--provider", "claude", "--parked"]);
    let out = h.ok(&["wake", &id]);
    assert!(
        out.contains("started fresh: no provider session id to resume"),
        "{out}"
    );
    let ls = h.ok(&["ls"]);
    let line = ls.lines().find(|l| l.starts_with(&id[..8])).unwrap();
    assert!(line.contains("live fresh"), "{ls}");

    h.ok(&["hibernate", &id]);
    let out = h.ok(&["wake", &id]);
    assert!(!out.contains("fresh"), "it resumed: {out}");
    let ls = h.ok(&["ls"]);
    let line = ls.lines().find(|l| l.starts_with(&id[..8])).unwrap();
    assert!(!line.contains("fresh"), "{ls}");
}

#[test]
fn a_report_whose_reader_has_gone_ends_quietly() {
    let h = Hangar::new();
    h.new_pane();
    for args in [&["status"][..], &["ls"][..], &["--json", "ls"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = h.command(args).stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.is_empty(),
            "`hangar {}` said: {stderr}",
            args.join(" ")
        );
        assert_ne!(out.status.code(), Some(101), "no panic");
    }
}

/// The targets of `/proc/<pid>/fd`.
fn fd_targets(pid: i32) -> Vec<String> {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fs::read_link(e.path()).ok())
        .map(|t| t.display().to_string())
        .collect()
}

#[test]
fn an_auto_started_daemon_passes_no_inherited_fd_to_its_agents() {
    let h = Hangar::new();
    // A pipe without close-on-exec, as a careless launcher leaves one open.
    let mut ends = [0; 2];
    // SAFETY: pipe writes two fds into the array we own.
    assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: fstat fills a plain struct for an fd we own.
    let inode = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        assert_eq!(libc::fstat(ends[0], &mut st), 0);
        st.st_ino
    };
    let pipe = format!("pipe:[{inode}]");
    assert!(fd_targets(std::process::id() as i32).contains(&pipe));

    let id = h.new_pane();
    let agent = h.wait_state(&id, "live")["pid"].as_i64().unwrap() as i32;
    let daemon = h.daemon_pid();
    for (who, pid) in [("the daemon", daemon), ("its agent", agent)] {
        let fds = fd_targets(pid);
        assert!(!fds.is_empty(), "{who}'s fds are readable");
        assert!(!fds.contains(&pipe), "{who} holds the test's pipe: {fds:?}");
    }
    // SAFETY: closing the two fds this test opened.
    unsafe {
        libc::close(ends[0]);
        libc::close(ends[1]);
    }
}

/// The provider `new` picks with no `--provider`, on a daemon started with
/// `env` changes.
fn default_provider(change: impl FnOnce(&mut Hangar)) -> String {
    let mut h = Hangar::new();
    change(&mut h);
    let id = h.new_agent(&[]);
    h.session(&id)["provider"].as_str().unwrap().to_owned()
}

#[test]
fn new_without_a_provider_picks_claude_then_codex_then_opencode_else_the_shell() {
    assert_eq!(default_provider(|_| {}), "claude");
    // Programs found on PATH count as much as the variables.
    assert_eq!(
        default_provider(|h| {
            h.set_env("HANGAR_CLAUDE_BIN", "");
            h.set_env("HANGAR_CODEX_BIN", "");
            let bin = h.codex_bin.parent().unwrap().to_path_buf();
            h.set_env("PATH", bin);
        }),
        "codex"
    );
    assert_eq!(
        default_provider(|h| {
            h.set_env("HANGAR_CLAUDE_BIN", "");
            h.set_env("HANGAR_CODEX_BIN", "");
            h.set_env("PATH", "/nonexistent");
        }),
        "opencode"
    );
    assert_eq!(
        default_provider(|h| {
            for var in [
                "HANGAR_CLAUDE_BIN",
                "HANGAR_CODEX_BIN",
                "HANGAR_OPENCODE_BIN",
            ] {
                h.set_env(var, "");
            }
            h.set_env("PATH", "/nonexistent");
        }),
        "shell"
    );
}

#[test]
fn send_and_attach_wake_a_hibernated_session_first() {
    let h = Hangar::new();
    let id = h.new_pane();
    let first = h.wait_state(&id, "live")["pid"].as_i64().unwrap();
    h.ok(&["hibernate", &id]);
    assert_eq!(h.state_of(&id), "hibernated");

    h.ok(&["send", &id, "hello there"]);
    let row = h.session(&id);
    assert_eq!(row["state"], "live", "send woke it: {row}");
    assert_ne!(row["pid"].as_i64(), Some(first));
    h.wait_screen(&id, "answer: hello there");

    h.ok(&["hibernate", &id]);
    assert_eq!(h.state_of(&id), "hibernated");
    let app = pty_screen::PtyApp::spawn(h.command(&["attach", &id]), 30, 100);
    app.wait_text("fake-agent claude session");
    let row = h.session(&id);
    assert_eq!(row["state"], "live", "attach woke it: {row}");
    assert!(row["pid"].as_i64().is_some_and(|p| is_running(p as i32)));
    drop(app);
}
