//! Issue 32, the sandbox, end to end: real bubblewrap around
//! `hangar-fake-agent` (as claude) or `/bin/sh`, started by the real daemon
//! in its own HANGAR_HOME. Every escape an agent could try is tried from
//! inside and must be refused; the same attempt outside the sandbox shows
//! the test can tell (TIOCSTI, a write, a read).
//!
//! A machine without `bwrap` skips the suite with one line, unless
//! `HANGAR_TESTS_REQUIRED=1` (CI sets it in .ci/run).

use crate::proxy_support;
use crate::support;

use std::fs;
use std::net::TcpListener;
use std::path::Path;

use proxy_support::{ApiServer, env_of, write_proxy_config};
use support::{DEADLINE, Hangar};

/// Whether the suite can run here; panics on CI when it cannot.
fn have_bwrap() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()));
    if !found {
        hangar_testkit::required::missing(
            "sandbox_escapes",
            "bwrap is not installed (Debian package bubblewrap)",
        );
    }
    found
}

/// Types `cmd` into a shell session, then a marker line `TAG=<status>=.`
/// (typed as `"TAG $? ."`, so the typed line itself never matches), and
/// waits for it; returns the screen and the status of `cmd`'s last command.
fn run(h: &Hangar, id: &str, cmd: &str, tag: &str) -> (String, i32) {
    h.ok(&[
        "send",
        id,
        &format!("{cmd}; echo \"{tag} $? .\" | tr ' ' '='"),
    ]);
    let screen = h.wait_screen(id, &format!("{tag}="));
    let status = screen
        .split(&format!("{tag}="))
        .nth(1)
        .and_then(|rest| rest.split('=').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1);
    (screen, status)
}

/// Secrets planted where an agent outside a sandbox would find them.
fn plant_secrets(h: &Hangar) -> Vec<(std::path::PathBuf, &'static str)> {
    let planted = vec![
        (h.user_home.join(".ssh/id_ed25519"), "SSH-KEY-PLANTED-7f3a"),
        (
            h.user_home.join(".claude/.credentials.json"),
            "OAUTH-PLANTED-91c2",
        ),
        (
            h.claude_dir.join(".credentials.json"),
            "OAUTH-DIR-PLANTED-5b7e",
        ),
        (h.user_home.join(".aws/credentials"), "AWS-PLANTED-2d4f"),
    ];
    for (path, secret) in &planted {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, secret).unwrap();
    }
    planted
}

#[test]
fn a_sandboxed_shell_writes_only_its_folder_and_sees_no_secret_of_the_home() {
    if !have_bwrap() {
        return;
    }
    // A variable named like a credential: filtered out of the agent's
    // environment, so it is only findable in the daemon's own.
    let h = Hangar::with_env(&[("SANDBOX_TEST_TOKEN", "DAEMON-ENV-PLANTED-e81d")]);
    let planted = plant_secrets(&h);
    let outside = h.root.join("outside.txt");
    let id = h.new_agent(&["--provider", "shell", "--sandbox"]);
    let plain = h.new_agent(&["--provider", "shell"]);
    h.wait_state(&id, "live");

    // `hangar ls --json` says what the walls are.
    let row = h.session(&id);
    assert_eq!(row["sandbox"]["kind"], "bubblewrap", "{row}");
    assert_eq!(
        row["sandbox"]["network"], "none",
        "a shell has no proxy: {row}"
    );
    assert_eq!(
        row["sandbox"]["writable"][0],
        h.work.display().to_string(),
        "{row}"
    );
    assert!(h.session(&plain)["sandbox"].is_null());

    // Its folder is writable (the control: writes do work in there).
    let (_, status) = run(&h, &id, "echo inside > inside.txt", "W0");
    assert_eq!(status, 0);
    assert_eq!(
        fs::read_to_string(h.work.join("inside.txt")).unwrap(),
        "inside\n"
    );

    // Nothing else is. The system is read-only: the write fails.
    for (i, dir) in ["/etc", "/usr", "/opt"].iter().enumerate() {
        let cmd = format!("echo x > {dir}/hangar-escape 2>/dev/null");
        let (screen, status) = run(&h, &id, &cmd, &format!("S{i}"));
        assert_ne!(status, 0, "{screen}");
        assert!(!Path::new(dir).join("hangar-escape").exists());
    }
    // `/tmp` and `$HOME` are private tmpfs: a write there succeeds inside
    // and never reaches the host's files (a file next to the folder, the
    // person's home).
    let cmd = format!("echo x > {} 2>/dev/null", outside.display());
    run(&h, &id, &cmd, "W1");
    assert!(!outside.exists(), "the sandbox wrote {}", outside.display());
    let cmd = format!("echo x > {}/new 2>/dev/null", h.user_home.display());
    run(&h, &id, &cmd, "W2");
    assert!(!h.user_home.join("new").exists());
    // The same write from the plain shell lands: the check can fail.
    let (_, status) = run(&h, &plain, &format!("echo x > {}", outside.display()), "P1");
    assert_eq!(status, 0);
    assert!(outside.exists());

    // The planted secrets are not there at all, by path or through $HOME.
    for (i, (path, secret)) in planted.iter().enumerate() {
        let cmd = format!(
            "cat {} ~/.ssh/id_ed25519 2>&1 | head -c 300",
            path.display()
        );
        let (screen, _) = run(&h, &id, &cmd, &format!("R{i}"));
        assert!(
            !screen.contains(secret),
            "{} was read:\n{screen}",
            path.display()
        );
    }
    let (path, secret) = &planted[0];
    let (screen, _) = run(&h, &plain, &format!("cat {}", path.display()), "P2");
    assert!(
        screen.contains(secret),
        "the plain shell reads it: {screen}"
    );

    // hangar's own process environment: not reachable from inside.
    let daemon = h.daemon_pid();
    let cmd = format!(
        "cat /proc/{daemon}/environ 2>&1 | tr '\\0' ' ' | head -c 600; env | grep -c PLANTED"
    );
    let (screen, _) = run(&h, &id, &cmd, "E1");
    assert!(!screen.contains("DAEMON-ENV-PLANTED"), "{screen}");

    // Direct connections: to a port on the host's loopback, and outside.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null");
    let (screen, status) = run(&h, &id, &cmd, "C1");
    assert_ne!(status, 0, "{screen}");
    let (screen, status) = run(
        &h,
        &id,
        "bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' 2>/dev/null",
        "C2",
    );
    assert_ne!(status, 0, "{screen}");
    assert!(
        listener.accept().is_err(),
        "the host's loopback port got a connection from the sandbox"
    );
    // The control: the plain shell does reach that port.
    let (_, status) = run(&h, &plain, &cmd, "P3");
    assert_eq!(status, 0);
    h.shutdown();
}

#[test]
fn tiocsti_into_the_pty_is_refused_inside_and_works_outside() {
    if !have_bwrap() {
        return;
    }
    let h = Hangar::new();
    let boxed = h.new_agent(&["--provider", "claude", "--sandbox"]);
    let plain = h.new_agent(&["--provider", "claude"]);
    h.wait_state(&boxed, "live");
    h.wait_state(&plain, "live");
    h.ok(&["send", &boxed, "tiocsti echo PUSHED"]);
    let screen = h.wait_screen(&boxed, "tiocsti: ");
    assert!(screen.contains("tiocsti: refused"), "{screen}");
    assert!(!screen.contains("tiocsti: injected"), "{screen}");
    // The control: outside the sandbox the same ioctl goes through (the
    // kernel here allows TIOCSTI), so the refusal above is the filter's.
    h.ok(&["send", &plain, "tiocsti x"]);
    let screen = h.wait_screen(&plain, "tiocsti: ");
    assert!(screen.contains("tiocsti: injected"), "{screen}");
    h.shutdown();
}

#[test]
fn the_proxy_is_the_only_way_out_and_the_real_key_never_enters() {
    if !have_bwrap() {
        return;
    }
    const REAL: &str = "sk-ant-api03-REAL-KEY-NEVER-INSIDE-4c1d9e";
    let h = Hangar::with_env(&[
        ("ANTHROPIC_API_KEY", REAL),
        ("FAKE_AGENT_APIKEY_FROM", "ANTHROPIC_API_KEY"),
    ]);
    let server = ApiServer::start(&h.root, 2, std::time::Duration::from_millis(10));
    write_proxy_config(&h.home, &server, "[sandbox]\nallow_hosts = []\n");
    let id = h.new_agent(&["--provider", "claude", "--sandbox"]);
    h.wait_state(&id, "live");
    assert_eq!(h.session(&id)["sandbox"]["network"], "proxy");

    // The provider's API, through the relay and the proxy: the request
    // arrives with the real key the agent never had.
    let url = format!("https://localhost:{}/v1/messages", server.port);
    h.ok(&["send", &id, &format!("api {url} hello-box")]);
    // Its streamed chunks (`api-chunk:`) come before the end of the call.
    let mut screen = String::new();
    h.wait_until("the API call ends", DEADLINE, || {
        screen = h.screen(&id);
        screen.contains("api-done") || screen.contains("api-error")
    });
    assert!(screen.contains("api-done 200"), "{screen}");
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let key = seen[0].headers.iter().find(|(k, _)| k == "x-api-key");
    assert_eq!(key.map(|(_, v)| v.as_str()), Some(REAL));

    // Its environment holds a placeholder, never the key.
    let pids = h.session_agent_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let inside = env_of(pids[0], "ANTHROPIC_API_KEY").expect("a placeholder key");
    assert_ne!(inside, REAL);
    let environ = fs::read(format!("/proc/{}/environ", pids[0])).unwrap();
    assert!(!String::from_utf8_lossy(&environ).contains(REAL));
    // Nor any file it can see that hangar wrote: its state folder and folder.
    for dir in [h.home.join("sandbox"), h.work.clone()] {
        assert!(
            !contains_text(&dir, REAL),
            "{} holds the key",
            dir.display()
        );
    }

    // Any other host through the proxy is refused, loopback included.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    for host in [format!("127.0.0.1:{port}"), "example.com:443".to_owned()] {
        h.ok(&["send", &id, &format!("api https://{host}/v1/messages hi")]);
    }
    let answers = |s: &str| s.matches("api-done").count() + s.matches("api-error").count();
    h.wait_until("both calls answered", DEADLINE, || {
        answers(&h.screen(&id)) >= 3
    });
    let screen = h.screen(&id);
    assert_eq!(screen.matches("api-done 200").count(), 1, "{screen}");
    assert!(
        listener.accept().is_err(),
        "the host's loopback port was reached"
    );
    assert_eq!(server.seen().len(), 1);
    h.shutdown();
}

#[test]
fn a_sandboxed_agent_resumes_its_conversation_after_hibernate_and_wake() {
    if !have_bwrap() {
        return;
    }
    let h = Hangar::new();
    let id = h.new_agent(&["--provider", "claude", "--sandbox"]);
    h.wait_state(&id, "live");
    h.ok(&["send", &id, "remember-the-walls"]);
    let psid = h.wait_transcript_id(&id);
    // The transcript is in the session's own sandbox folder, not the
    // person's claude folder.
    let sandbox_claude = h.home.join("sandbox").join(&id).join("claude");
    assert!(contains_text(&sandbox_claude, "remember-the-walls"));
    assert!(!contains_text(&h.claude_dir, "remember-the-walls"));

    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    h.ok(&["wake", &id]);
    let row = h.wait_state(&id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    assert_eq!(row["provider_session_id"], psid.as_str());
    assert!(!row["sandbox"].is_null());
    // Started again inside its walls with `--resume` of the same id.
    h.wait_screen(&id, &format!("{psid} (resumed)"));
    h.shutdown();
}

#[test]
fn without_bwrap_a_sandboxed_session_fails_and_nothing_runs_unsandboxed() {
    // PATH without bwrap (the agents are named by absolute paths).
    let empty = tempfile::tempdir().unwrap();
    let h = Hangar::with_env(&[("PATH", empty.path().to_str().unwrap())]);
    let id = h.new_agent(&["--provider", "claude", "--sandbox"]);
    let row = h.wait_state(&id, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("bubblewrap"), "{row}");
    assert!(
        h.session_agent_pids().is_empty(),
        "an agent ran without its walls"
    );
    h.shutdown();
}

#[test]
fn with_the_proxy_down_a_sandboxed_agent_fails_naming_it_and_never_starts() {
    if !have_bwrap() {
        return;
    }
    // The proxy's port is taken: the proxy cannot start.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let h = Hangar::new();
    h.write_config(&format!("[proxy]\nport = {port}\n"));
    let id = h.new_agent(&["--provider", "claude", "--sandbox"]);
    let row = h.wait_state(&id, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("proxy") && reason.contains(&format!("127.0.0.1:{port}")),
        "the reason does not name the proxy and its fault: {row}"
    );
    // The control: the same agent outside a sandbox starts (without capture).
    let plain = h.new_agent(&["--provider", "claude"]);
    h.wait_state(&plain, "live");
    assert_eq!(
        h.session_agent_pids().len(),
        1,
        "only the unsandboxed agent runs"
    );
    drop(taken);
    h.shutdown();

    // With the proxy turned off, the same: failed, saying so.
    let h = Hangar::new();
    h.write_config("[proxy]\nenabled = false\n");
    let off = h.new_agent(&["--provider", "claude", "--sandbox"]);
    let row = h.wait_state(&off, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("[proxy] enabled = false"), "{row}");
    assert!(h.session_agent_pids().is_empty(), "an agent ran");
    h.shutdown();
}

/// Whether any file under `dir` contains `needle`.
fn contains_text(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            contains_text(&p, needle)
        } else {
            fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        }
    })
}

#[test]
fn a_sandbox_on_a_container_engine_is_refused_and_makes_no_session() {
    // No bwrap and no engine are needed: the request is refused before
    // either is looked at (an engine's container is its walls).
    let h = Hangar::new();
    h.write_config(
        "[engines.pod]\nkind = \"podman\"\nsocket = \"/nonexistent/podman.sock\"\nimage = \"localhost/none\"\n",
    );
    let err = h.fail(&[
        "new",
        "--provider",
        "claude",
        "--sandbox",
        "--engine",
        "pod",
    ]);
    assert!(
        err.contains("--sandbox and --engine cannot be combined"),
        "{err}"
    );
    let rows = h.json(&["ls"]);
    assert_eq!(rows.as_array().map(Vec::len), Some(0), "{rows}");
    assert!(h.session_agent_pids().is_empty());
    h.shutdown();
}

/// The file named `name` under `dir`, if any.
fn find_file(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(found) = find_file(&p, name) {
                return Some(found);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

#[test]
fn a_fork_of_a_sandboxed_agent_is_sandboxed_and_forks_from_a_copy_of_its_state() {
    if !have_bwrap() {
        return;
    }
    let h = Hangar::new();
    let repo = support::git::make_repo(&h);
    let parent = h.new_agent(&[
        "--provider",
        "claude",
        "--sandbox",
        "--cwd",
        repo.to_str().unwrap(),
    ]);
    h.wait_state(&parent, "live");
    h.ok(&["send", &parent, "parent-one"]);
    h.wait_screen(&parent, "answer: parent-one");
    let psid = h.wait_transcript_id(&parent);
    let parent_state = h.home.join("sandbox").join(&parent).join("claude");
    let parent_file = find_file(&parent_state, &format!("{psid}.jsonl"))
        .expect("the parent's transcript in its state folder");
    let before = fs::read(&parent_file).unwrap();

    let forked = h.json(&["fork", &parent]);
    let id = forked["id"].as_str().expect("id").to_owned();
    let row = h.wait_state(&id, "live");
    // The same walls: bubblewrap, its own state folder writable.
    assert_eq!(row["sandbox"]["kind"], "bubblewrap", "{row}");
    let own_state = h.home.join("sandbox").join(&id).join("claude");
    let writable: Vec<&str> = row["sandbox"]["writable"]
        .as_array()
        .expect("writable")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    assert!(
        writable.contains(&own_state.to_str().unwrap()),
        "{writable:?}"
    );
    assert!(
        !writable.contains(&parent_state.to_str().unwrap()),
        "{writable:?}"
    );
    // Its CLI found the parent's conversation inside its walls (the fake
    // exits with "No conversation found" when it cannot).
    h.wait_screen(&id, &format!("(forked from {psid})"));
    h.ok(&["send", &id, "fork-two"]);
    h.wait_screen(&id, "answer: fork-two");
    let own = h.wait_transcript_id(&id);
    assert_ne!(own, psid);
    let own_file = find_file(&own_state, &format!("{own}.jsonl"))
        .expect("the fork's transcript in its own state folder");
    let own_text = fs::read_to_string(&own_file).unwrap();
    assert!(own_text.contains("parent-one"), "{own_text}");
    assert!(own_text.contains("fork-two"), "{own_text}");
    // The parent's transcript is as it was, and the fork's turn is nowhere
    // in the parent's state.
    assert_eq!(fs::read(&parent_file).unwrap(), before);
    assert!(!contains_text(&parent_state, "fork-two"));
    // The parent carries on with its own conversation.
    h.ok(&["send", &parent, "parent-three"]);
    h.wait_screen(&parent, "answer: parent-three");
    assert!(!contains_text(&own_state, "parent-three"));

    // A fork into a worktree (another folder: claude is given the parent's
    // transcript by path, its copy in the fork's state) is sandboxed too.
    let forked = h.json(&["fork", &parent, "--worktree", "boxed-two"]);
    let id2 = forked["id"].as_str().expect("id").to_owned();
    let path = forked["worktree"]["path"]
        .as_str()
        .expect("path")
        .to_owned();
    let row = h.wait_state(&id2, "live");
    assert_eq!(row["sandbox"]["kind"], "bubblewrap", "{row}");
    assert_eq!(row["cwd"], path.as_str());
    h.wait_screen(&id2, &format!("(forked from {psid})"));
    h.ok(&["send", &id2, "worktree-fork"]);
    h.wait_screen(&id2, "answer: worktree-fork");
    let own2 = h.wait_transcript_id(&id2);
    let own2_state = h.home.join("sandbox").join(&id2).join("claude");
    let text =
        fs::read_to_string(find_file(&own2_state, &format!("{own2}.jsonl")).unwrap()).unwrap();
    assert!(text.contains("parent-one"), "{text}");
    assert!(!contains_text(&parent_state, "worktree-fork"));
    h.shutdown();
}
