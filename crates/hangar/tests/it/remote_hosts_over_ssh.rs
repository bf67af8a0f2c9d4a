//! Issue 22 acceptance: agents on another machine, through `--host`, over a
//! real OpenSSH server on loopback (see `support/sshd.rs`). The "remote"
//! machine is a second hangar home on this one, reached only through
//! `ssh ... hangar bridge`: a session is created, listed, sent to, screened,
//! attached (keys through, detach) and closed there; an attach in a
//! terminal is one `ssh -t` running the remote attach, as tmux is reached;
//! a killed SSH link leaves it running and attach reconnects without
//! replaying typing; a
//! wrong key, an unreachable host and a hangar of another protocol version
//! are clear errors; the bridge refuses a socket it does not own.
//!
//! Every test skips with one line when sshd is not installed.

use crate::pty_screen;
use crate::support;

use pty_screen::PtyApp;
use serde_json::Value;
use support::sshd::{self, Sshd};
use support::*;

/// This machine, the "remote" one, and the SSH server between them.
/// Dropped in this order: the local side, then the remote daemon, then sshd.
struct Pair {
    local: Hangar,
    remote: Hangar,
    sshd: Sshd,
}

fn pair_with(extra_hosts: impl FnOnce(&Sshd, &Hangar) -> String) -> Option<Pair> {
    if !sshd::available() {
        return None;
    }
    let sshd = Sshd::start();
    let remote = Hangar::new();
    let mut local = Hangar::new();
    local.set_env("PATH", sshd.path_for(&local));
    let remote_hangar = sshd::remote_hangar(&remote);
    let extra = extra_hosts(&sshd, &remote);
    local.write_config(&format!(
        "# `box`: an alias of the test's ssh config (as ~/.ssh/config gives one)\n\
         [hosts.box]\nssh = \"box-alias\"\nhangar = \"{hangar}\"\nhome = \"{home}\"\n\n\
         # `direct`: user@host with port and key given here\n\
         [hosts.direct]\nssh = \"{user}@127.0.0.1\"\nport = {port}\nidentity_file = \"{key}\"\n\
         hangar = \"{hangar}\"\nhome = \"{home}\"\n\n{extra}\n\n\
         # These tests count the client's own ssh connections: the daemon's\n\
         # watch of the hosts (tested in remote_all_hosts_over_ssh) is off.\n\
         [notify]\nfar_hosts = false\n",
        hangar = remote_hangar.display(),
        home = remote.home.display(),
        user = sshd.user,
        port = sshd.port,
        key = sshd.user_key.display(),
    ));
    Some(Pair {
        local,
        remote,
        sshd,
    })
}

fn pair() -> Option<Pair> {
    pair_with(|_, _| String::new())
}

fn ids(ls: &Value) -> Vec<String> {
    ls.as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_session_is_created_listed_sent_to_and_closed_on_the_remote_home_through_host() {
    let Some(p) = pair() else { return };
    let created = p.local.json(&[
        "--host",
        "box",
        "new",
        "--provider",
        "claude",
        "--title",
        "far away",
    ]);
    let id = created["id"].as_str().expect("new prints an id").to_owned();

    // The session lives in the remote home; this machine never started a
    // daemon of its own.
    let row = p.remote.wait_state(&id, "live");
    assert_eq!(row["title"], "far away");
    assert!(
        p.local.daemon_pid_opt().is_none(),
        "--host must not start a local daemon"
    );

    // `ls --json` through --host is the remote machine's own document.
    let mut last = (Value::Null, Value::Null);
    p.local
        .wait_until("ls through --host equals ls there", DEADLINE, || {
            last = (
                p.local.json(&["--host", "box", "ls"]),
                p.remote.json(&["ls"]),
            );
            last.0 == last.1
        });
    assert_eq!(ids(&last.0), vec![id.clone()]);

    // HANGAR_HOST does what --host does; the `direct` host (user@host, port
    // and key from config.toml) reaches the same daemon as the alias.
    let remote_pid = p.remote.daemon_pid();
    let mut by_env = p.local.command(&["--json", "status"]);
    by_env.env("HANGAR_HOST", "box");
    let out = by_env.output().expect("run hangar");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert_eq!(status["daemon"]["pid"], remote_pid);
    let direct = p.local.json(&["--host", "direct", "status"]);
    assert_eq!(direct["daemon"]["pid"], remote_pid);

    // Typing reaches the remote agent.
    p.local
        .ok(&["--host", "box", "send", &id, "hello from afar"]);
    p.remote.wait_screen(&id, "answer: hello from afar");
    let screen = p.local.ok(&["--host", "box", "screen", &id]);
    assert!(
        screen.contains("answer: hello from afar"),
        "screen through --host:\n{screen}"
    );

    // A command that reads the remote home's files (the journal) prints
    // what it prints there.
    let far = p
        .local
        .ok(&["--host", "box", "journal", "--json", "summarize"]);
    let there = p.remote.ok(&["journal", "--json", "summarize"]);
    assert_eq!(far, there);

    // Close through --host: the remote agent's process is gone.
    let agent = p.remote.pid_of(&id);
    p.local.ok(&["--host", "box", "close", &id]);
    p.local
        .wait_until("the remote agent is gone", DEADLINE, || !is_running(agent));
    assert!(ids(&p.remote.json(&["ls"])).is_empty());
    drop(p);
}

/// A live claude session on the remote home, attached from this one
/// through host `box` (its screen shown).
fn attached_through_box(p: &Pair) -> (String, PtyApp) {
    let id = p.remote.new_agent(&["--provider", "claude"]);
    p.remote.wait_state(&id, "live");
    let app = PtyApp::spawn(p.local.command(&["--host", "box", "attach", &id]), 24, 80);
    app.wait_text("fake-agent claude session");
    (id, app)
}

#[test]
fn attach_through_host_passes_keys_and_detaches_leaving_the_session_live() {
    let Some(p) = pair() else { return };
    let (id, mut app) = attached_through_box(&p);
    app.write(b"over the link\r");
    app.wait_text("answer: over the link");
    app.write(b"\x02d");
    app.wait_text("keeps running");
    assert_eq!(app.wait_exit(), Some(0));
    assert!(app.is_cooked(), "detach must restore the terminal");
    assert_eq!(p.remote.state_of(&id), "live");
    p.remote.wait_screen(&id, "answer: over the link");
}

/// The `ssh -t` an attach in a terminal runs, once it runs and is the only
/// ssh under it: its pid, its arguments checked (a terminal for the remote
/// `hangar attach -- ID`, not the link's `-T ... bridge --mux`).
fn the_attach_ssh(p: &Pair, app: &PtyApp, id: &str) -> i32 {
    let mut found = Vec::new();
    p.local.wait_until("attach runs one ssh", DEADLINE, || {
        found = ssh_children(app.pid());
        found.len() == 1
    });
    let argv = cmdline(found[0]);
    assert!(argv.iter().any(|a| a == "-t"), "ssh without -t: {argv:?}");
    assert!(!argv.iter().any(|a| a == "-T"), "{argv:?}");
    let remote = argv.last().expect("a remote command");
    assert!(
        remote.ends_with(&format!("hangar attach -- {id}")),
        "the remote command is not attach: {argv:?}"
    );
    found[0]
}

#[test]
fn attach_through_host_in_a_terminal_is_one_ssh_t_running_the_remote_attach() {
    let Some(p) = pair() else { return };
    let (id, mut app) = attached_through_box(&p);
    // One ssh, with a terminal, running `hangar attach` there; no link (no
    // bridge) anywhere: the keys go from ssh to the remote attach.
    let ssh = the_attach_ssh(&p, &app, &id);
    let remote: Vec<Vec<String>> = p.sshd.connection_pids().into_iter().map(cmdline).collect();
    assert!(
        remote.iter().any(|argv| argv.iter().any(|a| a == "attach")),
        "sshd runs the remote attach: {remote:?}"
    );
    assert!(
        !remote.iter().any(|argv| argv.iter().any(|a| a == "bridge")),
        "no link: {remote:?}"
    );
    // The remote attach hands sshd's terminal to the remote daemon, which
    // reads and writes it itself: tmux's path over ssh, no relay process.
    let remote_attach = p
        .sshd
        .connection_pids()
        .into_iter()
        .find(|&pid| cmdline(pid).iter().any(|a| a == "attach"))
        .expect("the remote attach");
    let terminal = std::fs::read_link(format!("/proc/{remote_attach}/fd/0"))
        .expect("the remote attach's terminal")
        .display()
        .to_string();
    let remote_daemon = p.remote.daemon_pid();
    p.local
        .wait_until("the remote daemon holds sshd's terminal", DEADLINE, || {
            fd_targets(remote_daemon).contains(&terminal)
        });

    app.write(b"typed into ssh\r");
    app.wait_text("answer: typed into ssh");
    p.remote.wait_screen(&id, "answer: typed into ssh");
    assert_eq!(ssh_children(app.pid()), vec![ssh], "still the one ssh");

    app.write(b"\x02d");
    app.wait_text("keeps running");
    assert_eq!(app.wait_exit(), Some(0));
    assert!(app.is_cooked(), "detach must restore the terminal");
    assert_eq!(p.remote.state_of(&id), "live");
    p.local
        .wait_until("the ssh ended", DEADLINE, || !is_running(ssh));
}

/// A host `nowhere` whose port nothing listens on.
fn nowhere_host(sshd: &Sshd) -> String {
    format!(
        "[hosts.nowhere]\nssh = \"{}@127.0.0.1\"\nport = {}\nconnect_timeout_secs = 3\n",
        sshd.user,
        sshd::closed_port()
    )
}

#[test]
fn an_attach_in_a_terminal_to_an_unknown_id_or_an_unreachable_host_ends_with_why() {
    let Some(p) = pair_with(|sshd, _| nowhere_host(sshd)) else {
        return;
    };
    // A session id is untrusted text: the remote shell hands it to the
    // remote hangar as one word, which says there is no such session.
    let planted = p.remote.root.join("planted");
    let id = format!("x; touch {}", planted.display());
    let mut app = PtyApp::spawn(p.local.command(&["--host", "box", "attach", &id]), 24, 80);
    app.wait_text("no session");
    assert_eq!(app.wait_exit(), Some(1), "the remote attach's code");
    assert!(
        String::from_utf8_lossy(&app.raw_output()).contains(&format!("no session {id:?}")),
        "{}",
        String::from_utf8_lossy(&app.raw_output())
    );
    assert!(!planted.exists(), "the id ran as a command");
    assert!(app.is_cooked());
    assert!(
        !String::from_utf8_lossy(&app.raw_output()).contains("lost the connection"),
        "an ended remote attach is not a drop"
    );

    // A host that never answers is an error at once, with ssh's words,
    // not a reconnect loop.
    let mut app = PtyApp::spawn(
        p.local.command(&["--host", "nowhere", "attach", "x"]),
        24,
        80,
    );
    app.wait_for("why attach ended", |t| {
        t.contains("cannot reach host \"nowhere\"") && t.contains("Connection refused")
    });
    assert_eq!(app.wait_exit(), Some(1));
    let said = String::from_utf8_lossy(&app.raw_output()).into_owned();
    assert!(!said.contains("reconnecting"), "{said}");
    assert!(app.is_cooked());
}

/// The `ssh` processes a local hangar process started.
fn ssh_children(pid: i32) -> Vec<i32> {
    descendants_of(pid)
        .into_iter()
        .filter(|&c| {
            cmdline(c)
                .first()
                .is_some_and(|a| a.ends_with("/ssh") || a == "ssh")
        })
        .collect()
}

fn kill(pid: i32) {
    // SAFETY: a pid this test found among its own children.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Waits until attach has printed `needle` `times` times.
fn wait_said(p: &Pair, app: &PtyApp, needle: &str, times: usize) {
    p.local.wait_until(
        &format!("attach said {needle:?} {times}x"),
        DEADLINE,
        || {
            String::from_utf8_lossy(&app.raw_output())
                .matches(needle)
                .count()
                >= times
        },
    );
}

#[test]
fn a_killed_ssh_link_leaves_the_remote_session_live_and_attach_reconnects_without_replaying() {
    let Some(p) = pair() else { return };
    let (id, mut app) = attached_through_box(&p);
    let agent = p.remote.session(&id)["pid"].clone();
    app.write(b"before\r");
    app.wait_text("answer: before");

    // Kill the ssh client under the attach: the `ssh -t` that owns the
    // terminal.
    let ssh = the_attach_ssh(&p, &app, &id);
    kill(ssh);
    // Read from the raw output: the screen the daemon sends on reattach
    // repaints the terminal over these lines.
    wait_said(&p, &app, "lost the connection to host \"box\"", 1);
    // The remote agent did not notice: same process, still live.
    assert_eq!(p.remote.session(&id)["pid"], agent);
    assert_eq!(p.remote.state_of(&id), "live");
    wait_said(&p, &app, "reconnected to host \"box\"", 1);
    // A new ssh -t, and the session's screen drawn again after the words.
    let again = the_attach_ssh(&p, &app, &id);
    assert_ne!(again, ssh, "a new ssh, not the killed one");
    p.local.wait_until(
        "the screen comes back after the reconnect",
        DEADLINE,
        || {
            let raw = String::from_utf8_lossy(&app.raw_output()).into_owned();
            raw.rsplit("reconnected to host")
                .next()
                .is_some_and(|after| after.contains("answer: before"))
        },
    );
    app.write(b"between\r");
    p.remote.wait_screen(&id, "answer: between");

    // Now the sshd side of the new link: kill its per-connection process.
    let before = p.sshd.connection_pids();
    assert!(!before.is_empty(), "sshd serves the attach");
    for pid in before {
        kill(pid);
    }
    wait_said(&p, &app, "lost the connection to host \"box\"", 2);
    wait_said(&p, &app, "reconnected to host \"box\"", 2);
    assert_eq!(p.remote.session(&id)["pid"], agent);

    // Typing after the reconnect arrives once, and nothing typed earlier is
    // replayed.
    app.write(b"after\r");
    p.remote.wait_screen(&id, "answer: after");
    let screen = p.remote.screen(&id);
    for typed in ["answer: before", "answer: between"] {
        assert_eq!(
            screen.matches(typed).count(),
            1,
            "typing was replayed:\n{screen}"
        );
    }
    assert_eq!(
        screen.matches("answer: after").count(),
        1,
        "typing was doubled:\n{screen}"
    );
    app.write(b"\x02d");
    assert_eq!(app.wait_exit(), Some(0));
    assert_eq!(p.remote.state_of(&id), "live");
}

#[test]
fn while_the_host_is_down_typing_is_dropped_and_the_detach_key_leaves() {
    let Some(p) = pair() else { return };
    // An ssh that fails as for a host that went away once `down` exists,
    // counting its tries; first on this attach's PATH.
    let dir = p.local.root.join("flaky-ssh");
    std::fs::create_dir_all(&dir).expect("flaky-ssh");
    let (down, tries) = (dir.join("down"), dir.join("tries"));
    let flaky = dir.join("ssh");
    std::fs::write(
        &flaky,
        format!(
            "#!/bin/sh
if [ -e '{down}' ]; then
  echo try >> '{tries}'
               echo 'ssh: connect to host box-alias: Connection refused' >&2
  exit 255
fi
             exec '{real}' \"$@\"
",
            down = down.display(),
            tries = tries.display(),
            real = p.sshd.bin.join("ssh").display(),
        ),
    )
    .expect("flaky ssh");
    std::fs::set_permissions(&flaky, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let id = p.remote.new_agent(&["--provider", "claude"]);
    p.remote.wait_state(&id, "live");
    let mut attach = p.local.command(&["--host", "box", "attach", &id]);
    attach.env(
        "PATH",
        format!(
            "{}:{}",
            dir.display(),
            p.local.env_var("PATH").unwrap_or_default()
        ),
    );
    let mut app = PtyApp::spawn(attach, 24, 80);
    app.wait_text("fake-agent claude session");
    let ssh = the_attach_ssh(&p, &app, &id);
    app.write(b"before\r");
    p.remote.wait_screen(&id, "answer: before");

    std::fs::write(&down, "").expect("down");
    kill(ssh);
    wait_said(&p, &app, "lost the connection to host \"box\"", 1);
    let tried = || {
        std::fs::read_to_string(&tries)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    p.local
        .wait_until("attach tried the host again twice", DEADLINE, || {
            tried() >= 2
        });
    // Typed while the host is down: dropped, never queued for later. A try
    // after the typing means a wait read it (the waits come between tries).
    app.write(b"while down\r");
    let seen = tried();
    p.local
        .wait_until("attach tried once more", DEADLINE, || tried() > seen);
    std::fs::remove_file(&down).expect("up again");
    wait_said(&p, &app, "reconnected to host \"box\"", 1);
    let ssh = the_attach_ssh(&p, &app, &id);
    app.write(b"after\r");
    p.remote.wait_screen(&id, "answer: after");
    let screen = p.remote.screen(&id);
    assert!(
        !screen.contains("while down"),
        "typing was queued:\n{screen}"
    );
    assert_eq!(screen.matches("answer: before").count(), 1, "{screen}");
    assert_eq!(screen.matches("answer: after").count(), 1, "{screen}");

    // Down again: the detach key leaves while it is.
    std::fs::write(&down, "").expect("down");
    kill(ssh);
    wait_said(&p, &app, "lost the connection to host \"box\"", 2);
    let seen = tried();
    p.local
        .wait_until("attach tries the host again", DEADLINE, || tried() > seen);
    app.write(b"\x02d");
    app.wait_text("keeps running");
    assert_eq!(app.wait_exit(), Some(0));
    assert!(app.is_cooked(), "leaving must restore the terminal");
    let raw = String::from_utf8_lossy(&app.raw_output()).into_owned();
    assert_eq!(
        raw.matches("lost the connection").count(),
        2,
        "the tries while down are quiet:\n{raw}"
    );
    assert_eq!(raw.matches("reconnected to host").count(), 1, "{raw}");
    assert!(
        !raw.contains("Connection refused"),
        "ssh's words while down: {raw}"
    );
    assert_eq!(p.remote.state_of(&id), "live");
}

/// What a process's descriptors are open on (`pipe:[N]`, `socket:[N]`,
/// paths), by descriptor number.
fn open_files(pid: i32) -> Vec<(String, String)> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| {
                let e = e.ok()?;
                let target = std::fs::read_link(e.path()).ok()?;
                Some((
                    e.file_name().to_string_lossy().into_owned(),
                    target.to_string_lossy().into_owned(),
                ))
            })
            .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` has a descriptor open on `file`.
fn holds(pid: i32, file: &str) -> bool {
    open_files(pid).iter().any(|(_, f)| f == file)
}

/// A live claude session on the remote home, attached from this one
/// through host `box` over the shared link: attach's stdout is a pipe (to
/// `cat`, on to the terminal), so it relays over `hangar bridge --mux`
/// instead of handing the terminal to `ssh -t`.
fn attached_over_the_link(p: &Pair) -> (String, PtyApp) {
    let id = p.remote.new_agent(&["--provider", "claude"]);
    p.remote.wait_state(&id, "live");
    let attach = p.local.command(&["--host", "box", "attach", &id]);
    let mut piped = std::process::Command::new("/bin/sh");
    piped
        .arg("-c")
        .arg("\"$0\" \"$@\" | cat")
        .arg(attach.get_program())
        .args(attach.get_args())
        .env_clear()
        .envs(attach.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))));
    if let Some(dir) = attach.get_current_dir() {
        piped.current_dir(dir);
    }
    let app = PtyApp::spawn(piped, 24, 80);
    app.wait_text("fake-agent claude session");
    (id, app)
}

#[test]
fn the_remote_daemon_reads_and_writes_the_ssh_link_itself_and_a_killed_bridge_ends_it() {
    let Some(p) = pair() else { return };
    let (id, mut app) = attached_over_the_link(&p);

    // The bridge sshd runs for the link, and what ssh gave it as stdin and
    // stdout.
    let mut bridge = 0;
    p.local.wait_until("sshd runs the bridge", DEADLINE, || {
        bridge = p
            .sshd
            .connection_pids()
            .into_iter()
            .find(|&pid| cmdline(pid).iter().any(|a| a == "bridge"))
            .unwrap_or(0);
        bridge != 0
    });
    let ends: Vec<String> = open_files(bridge)
        .into_iter()
        .filter(|(fd, _)| fd == "0" || fd == "1")
        .map(|(_, f)| f)
        .collect();
    assert_eq!(ends.len(), 2, "the bridge's stdin and stdout: {ends:?}");
    // The daemon holds both: keys and echo go between ssh and the daemon
    // with no relay process between (as tmux's server writes to the ssh
    // session's terminal itself).
    let daemon = p.remote.daemon_pid();
    p.local
        .wait_until("the remote daemon holds the link", DEADLINE, || {
            ends.iter().all(|f| holds(daemon, f))
        });
    app.write(b"through the daemon\r");
    app.wait_text("answer: through the daemon");
    // ssh's pipes are the daemon's alone: an agent started after the link
    // was taken does not inherit them (they would keep a dead link open).
    let later = p.remote.new_agent(&["--provider", "claude"]);
    p.remote.wait_state(&later, "live");
    let agent = p.remote.pid_of(&later);
    assert!(
        !ends.iter().any(|f| holds(agent, f)),
        "the agent holds the link: {:?}",
        open_files(agent)
    );

    // A killed bridge ends the link: the daemon lets go of ssh's pipes (no
    // sshd session is kept open by it) and the attach reconnects.
    kill(bridge);
    p.local
        .wait_until("the remote daemon let go of the link", DEADLINE, || {
            !ends.iter().any(|f| holds(daemon, f))
        });
    wait_said(&p, &app, "reconnected to host \"box\"", 1);
    app.write(b"after\r");
    p.remote.wait_screen(&id, "answer: after");
    app.write(b"\x02d");
    // (The exit code is cat's: attach says it detached.)
    wait_said(&p, &app, "keeps running", 1);
    assert_eq!(app.wait_exit(), Some(0));
    assert_eq!(p.remote.state_of(&id), "live");
    assert_eq!(p.remote.daemon_pid(), daemon, "the daemon stayed up");
}

#[test]
fn a_wrong_key_an_unreachable_host_and_another_protocol_are_clear_errors() {
    let Some(p) = pair_with(|sshd, remote| {
        // A hangar that answers the handshake as a daemon of protocol 2
        // would: the refusal frame the daemon sends (server.rs), built with
        // the protocol crate.
        let refusal = serde_json::json!({
            "id": 1, "ok": false,
            "error": {"code": "version_mismatch",
                      "message": "client speaks protocol 1 but this daemon speaks 2; restart the daemon with `hangar shutdown`"}
        });
        let refusal = hangar_protocol::frame::encode(
            hangar_protocol::frame::TAG_MESSAGE,
            refusal.to_string().as_bytes(),
        );
        // Its bridge speaks the shared link (`bridge --mux`): ready, then
        // the refusal on the first channel.
        use hangar_protocol::mux::{MUX_VERSION, MuxFrame};
        let mut frame = MuxFrame::Ready(MUX_VERSION).encode();
        frame.extend(MuxFrame::Data(1, refusal).encode());
        let frame_file = remote.root.join("refusal.frame");
        std::fs::write(&frame_file, frame).expect("write frame");
        let newer = remote.root.join("newer-hangar");
        std::fs::write(
            &newer,
            format!(
                "#!/bin/sh\ncat '{}'\nexec cat >/dev/null\n",
                frame_file.display()
            ),
        )
        .expect("newer hangar");
        std::fs::set_permissions(&newer, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        // A hangar from before the shared link: its `bridge` has no
        // `--mux`, and clap says so (the real binary's words for a flag it
        // does not know, with the flag's name put in).
        let said = support::Hangar::new().run(&["bridge", "--no-such-flag"]);
        assert_eq!(said.status.code(), Some(2));
        let words = String::from_utf8_lossy(&said.stderr).replace("--no-such-flag", "--mux");
        let words_file = remote.root.join("older.stderr");
        std::fs::write(&words_file, words).expect("older words");
        let older = remote.root.join("older-hangar");
        std::fs::write(
            &older,
            format!("#!/bin/sh\ncat '{}' >&2\nexit 2\n", words_file.display()),
        )
        .expect("older hangar");
        std::fs::set_permissions(&older, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        format!(
            "[hosts.older]\nssh = \"box-alias\"\nhangar = \"{older}\"\n\n\
             [hosts.badkey]\nssh = \"{user}@127.0.0.1\"\nport = {port}\nidentity_file = \"{wrong}\"\n\n\
             [hosts.nowhere]\nssh = \"{user}@127.0.0.1\"\nport = {closed}\nconnect_timeout_secs = 3\n\n\
             [hosts.newer]\nssh = \"box-alias\"\nhangar = \"{newer}\"\n",
            user = sshd.user,
            port = sshd.port,
            wrong = sshd.wrong_key.display(),
            closed = sshd::closed_port(),
            newer = newer.display(),
            older = older.display(),
        )
    }) else {
        return;
    };

    let err = p.local.fail(&["--host", "badkey", "ls"]);
    assert!(
        err.contains("cannot reach host \"badkey\"") && err.contains("Permission denied"),
        "wrong key: {err}"
    );
    let err = p.local.fail(&["--host", "nowhere", "ls"]);
    assert!(
        err.contains("cannot reach host \"nowhere\"") && err.contains("Connection refused"),
        "unreachable: {err}"
    );
    let err = p.local.fail(&["--host", "newer", "ls"]);
    assert!(
        err.contains("protocol version 2") && err.contains("protocol version 1"),
        "another protocol must name both versions: {err}"
    );
    let err = p.local.fail(&["--host", "older", "ls"]);
    assert!(
        err.contains("older hangar") && err.contains("same hangar release"),
        "a remote hangar without the shared link: {err}"
    );
    let err = p.local.fail(&["--host", "nosuch", "ls"]);
    assert!(
        err.contains("no host named \"nosuch\"") && err.contains("box"),
        "unknown host: {err}"
    );

    // `hangar hosts` shows each one, reachable or not, and never stops at
    // the first that is down.
    let rows = p.local.json(&["hosts"]);
    let row = |name: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no row for {name}: {rows}"))
    };
    assert_eq!(row("local")["reachable"], true);
    let good = row("box");
    assert_eq!(good["reachable"], true, "{good}");
    assert_eq!(good["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(good["sessions"], 0);
    assert_eq!(good["live"], 0);
    for bad in ["badkey", "nowhere", "newer", "older"] {
        let r = row(bad);
        assert_eq!(r["reachable"], false, "{r}");
        assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
    }
    let human = p.local.ok(&["hosts"]);
    assert!(
        human.contains("unreachable") && human.contains("box"),
        "{human}"
    );
}

#[test]
fn the_bridge_refuses_a_socket_it_does_not_own() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        hangar_testkit::required::missing(
            module_path!(),
            "giving a socket to another user needs root",
        );
        return;
    }
    let h = Hangar::new();
    h.ok(&["status"]);
    let socket = std::fs::read_dir(&h.home)
        .expect("home")
        .filter_map(|e| e.ok())
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() {
                std::fs::read_dir(&p)
                    .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
                    .unwrap_or_default()
            } else {
                vec![p]
            }
        })
        .find(|p| {
            std::os::unix::fs::FileTypeExt::is_socket(
                &std::fs::symlink_metadata(p).expect("meta").file_type(),
            )
        })
        .expect("the daemon's socket");
    let c = std::ffi::CString::new(socket.display().to_string()).expect("path");
    // SAFETY: chown of a file this test's daemon created.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), 65534, 65534) }, 0);
    let out = h.run(&["bridge"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to relay") && err.contains("uid 65534"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing may be relayed");
}

#[test]
fn the_tui_shows_every_host_switches_between_them_survives_a_dropped_link_and_an_unreachable_one_blocks_nothing()
 {
    let Some(p) = pair_with(|sshd, _| nowhere_host(sshd)) else {
        return;
    };
    let far = p
        .remote
        .new_agent(&["--provider", "claude", "--title", "far-agent"]);
    let near = p
        .local
        .new_agent(&["--provider", "claude", "--title", "near-agent"]);
    p.remote.wait_state(&far, "live");
    p.local.wait_state(&near, "live");

    let mut app = PtyApp::spawn(p.local.command(&[]), 30, 140);
    // Every host in the switcher; the one that is down says so.
    app.wait_for("the host bar with all three hosts", |t| {
        t.contains(" local ")
            && t.contains(" box ")
            && t.contains(" direct ")
            && t.contains(" nowhere unreachable ")
    });
    app.wait_for("this machine's agent", |t| {
        t.contains("near-agent") && t.contains("fake-agent claude session")
    });

    // The next host: box's own workspace, its tab labelled with it.
    app.write(b"}");
    app.wait_for("box's view", |t| {
        t.contains("@box") && t.contains("far-agent") && t.contains("fake-agent claude session")
    });
    assert!(
        !app.text().contains("near-agent"),
        "box's view shows only box's sessions:\n{}",
        app.text()
    );
    // Keys go through to the remote agent with the same keys as locally.
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"typed in the tui\r");
    p.remote.wait_screen(&far, "answer: typed in the tui");
    app.write(b"\x02");
    app.wait_text("COMMAND");

    // The links under the TUI drop: it says so, the remote agent runs on,
    // and the view comes back by itself, typing arriving once.
    let agent = p.remote.session(&far)["pid"].clone();
    let links = ssh_children(app.pid());
    assert!(!links.is_empty(), "the TUI reaches box over ssh");
    for pid in links {
        kill(pid);
    }
    p.local
        .wait_until("the TUI says the link dropped", DEADLINE, || {
            let raw = String::from_utf8_lossy(&app.raw_output()).into_owned();
            raw.contains("connection lost") || raw.contains("reconnecting")
        });
    app.wait_for("box's agent on screen again", |t| {
        t.contains("far-agent · live") && t.contains("answer: typed in the tui")
    });
    assert_eq!(p.remote.session(&far)["pid"], agent);
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"after the drop\r");
    p.remote.wait_screen(&far, "answer: after the drop");
    let screen = p.remote.screen(&far);
    assert_eq!(
        screen.matches("answer: typed in the tui").count(),
        1,
        "{screen}"
    );
    assert_eq!(
        screen.matches("answer: after the drop").count(),
        1,
        "{screen}"
    );
    app.write(b"\x02");
    app.wait_text("COMMAND");

    // `direct` is the same machine by user@host and port: the same agent.
    app.write(b"}");
    app.wait_for("direct's view", |t| {
        t.contains("@direct") && t.contains("far-agent")
    });

    // The host that is down: shown as such, at once, with why.
    app.write(b"}");
    app.wait_for("nowhere's view says it is unreachable", |t| {
        t.contains("host nowhere is unreachable") && t.contains("Connection refused")
    });
    // And it never holds the others: straight back to this machine.
    app.write(b"}");
    app.wait_for("this machine's view again", |t| {
        t.contains("near-agent") && !t.contains("far-agent")
    });
    app.write(b"q");
    assert_eq!(app.wait_exit(), Some(0));
    assert_eq!(p.remote.state_of(&far), "live");
    assert_eq!(p.local.state_of(&near), "live");
}

/// Established TCP connections to `port` on this machine, counted on the
/// client's side (`/proc/net/tcp` and `tcp6`: remote port `port`, state
/// 01 ESTABLISHED).
fn tcp_connections_to(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| text.lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let remote_port = cols
                .get(2)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            remote_port == Some(port) && cols.get(3) == Some(&"01")
        })
        .count()
}

/// The `ssh` processes under `pid` that go to `destination`.
fn ssh_links_to(pid: i32, destination: &str) -> Vec<i32> {
    ssh_children(pid)
        .into_iter()
        .filter(|&c| cmdline(c).iter().any(|a| a == destination))
        .collect()
}

#[test]
fn every_pane_and_command_of_a_host_shares_one_ssh_connection_and_it_comes_back_when_killed() {
    let Some(p) = pair() else { return };
    // Only `box`, and not the daemon's watch of it: nothing else may log
    // in to this sshd while we count.
    let remote_hangar = sshd::remote_hangar(&p.remote);
    p.local.write_config(&format!(
        "[hosts.box]\nssh = \"box-alias\"\nhangar = \"{}\"\nhome = \"{}\"\n\
         [notify]\nfar_hosts = false\n",
        remote_hangar.display(),
        p.remote.home.display()
    ));
    let first = p
        .remote
        .new_agent(&["--provider", "claude", "--title", "pane-one"]);
    let second = p.remote.new_agent(&[
        "--provider",
        "claude",
        "--title",
        "pane-two",
        "--split",
        &first,
        "--direction",
        "vertical",
    ]);
    let third = p.remote.new_agent(&[
        "--provider",
        "claude",
        "--title",
        "pane-three",
        "--split",
        &second,
        "--direction",
        "horizontal",
    ]);
    for id in [&first, &second, &third] {
        p.remote.wait_state(id, "live");
    }

    // The TUI on box: a control connection polling the workspace, an
    // attach per pane, and the host probe, all to one machine.
    let mut app = PtyApp::spawn(p.local.command(&["--host", "box"]), 40, 160);
    let all_live = |t: &str| {
        ["pane-one", "pane-two", "pane-three"]
            .iter()
            .all(|title| t.contains(&format!("{title} · live")))
    };
    app.wait_for("three live panes of box", all_live);
    let one_link = |p: &Pair, app: &PtyApp, what: &str| {
        let mut seen = (0, 0);
        p.local.wait_until(what, DEADLINE, || {
            seen = (
                ssh_links_to(app.pid(), "box-alias").len(),
                tcp_connections_to(p.sshd.port),
            );
            seen == (1, 1)
        });
        seen
    };
    one_link(&p, &app, "one ssh process and one TCP connection to box");

    // Typing goes over it too (and the control connection's polling all
    // along).
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"shared link\r");
    p.remote
        .wait_until("an answer over the shared link", DEADLINE, || {
            [&first, &second, &third]
                .iter()
                .any(|id| p.remote.screen(id).contains("answer: shared link"))
        });
    app.write(b"\x02");
    app.wait_text("COMMAND");
    let links = ssh_links_to(app.pid(), "box-alias");
    assert_eq!(links.len(), 1, "still one ssh after typing and commands");
    assert_eq!(tcp_connections_to(p.sshd.port), 1);
    let agents: Vec<Value> = [&first, &second, &third]
        .iter()
        .map(|id| p.remote.session(id)["pid"].clone())
        .collect();

    // Killed: every pane says so, the agents run on, and the TUI comes
    // back on one new connection.
    kill(links[0]);
    p.local
        .wait_until("the TUI says the link dropped", DEADLINE, || {
            let raw = String::from_utf8_lossy(&app.raw_output()).into_owned();
            raw.contains("connection lost") || raw.contains("reconnecting")
        });
    app.wait_for("three live panes of box again", all_live);
    one_link(&p, &app, "one new ssh process and TCP connection to box");
    let relinked = ssh_links_to(app.pid(), "box-alias");
    assert_ne!(relinked, links, "a new ssh, not the killed one");
    for (id, pid) in [&first, &second, &third].iter().zip(&agents) {
        assert_eq!(&p.remote.session(id)["pid"], pid, "{id} kept its process");
    }
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"after relink\r");
    p.remote
        .wait_until("an answer after the relink", DEADLINE, || {
            [&first, &second, &third]
                .iter()
                .any(|id| p.remote.screen(id).contains("answer: after relink"))
        });
    app.write(b"\x02");
    app.wait_text("COMMAND");
    app.write(b"q");
    assert_eq!(app.wait_exit(), Some(0));
    p.local
        .wait_until("the link ends with the TUI", DEADLINE, || {
            tcp_connections_to(p.sshd.port) == 0
        });
}
