//! Issue 47 part 1 acceptance, "one list": `ls`, `search`, `usage` and
//! `wait` with `--all-hosts`, the TUI's overview, and far agents' notifications
//! on this machine, over three real OpenSSH servers on loopback
//! (`support/sshd.rs`), one of them stopped midway.
//!
//! Each far host is its own sshd, its own hangar home, and (when the tests
//! run as root, as CI's Debian container does) its own user of this
//! machine, made with `useradd` and deleted after the test: its hangar runs
//! as that user, as a person's would on another machine. Without root no
//! user can be made; the hosts are then this user's separate homes, and
//! everything else is the same.
//!
//! Every test fails under CI (`HANGAR_TESTS_REQUIRED=1`) and skips with one
//! line elsewhere when sshd is not installed, as the `--host` tests do.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::pty_screen;
use crate::support;

use serde_json::Value;
use support::sshd::{self, HostUser, Sshd};
use support::*;

/// One far machine: its hangar, its sshd, its user. Dropped in this order.
struct Far {
    name: String,
    remote: Hangar,
    sshd: Sshd,
    user: Option<HostUser>,
}

/// This machine and three far ones, `h1`, `h2`, `h3`.
struct Fleet {
    local: Hangar,
    far: Vec<Far>,
    _client: tempfile::TempDir,
}

/// The config every home gets: activity settles fast enough for `wait`.
const ACTIVITY: &str = "[activity]\ndebounce_ms = 200\n";

fn far_host(name: &str) -> Far {
    let remote = Hangar::new();
    remote.write_config(ACTIVITY);
    sshd::remote_hangar(&remote);
    let user = HostUser::possible().then(|| HostUser::create(&remote.user_home));
    if let Some(u) = &user {
        u.own(&remote.root);
    }
    let sshd = match &user {
        Some(u) => Sshd::start_allowing(u.name.clone()),
        None => Sshd::start(),
    };
    Far {
        name: name.to_owned(),
        remote,
        sshd,
        user,
    }
}

/// The `ssh` the local hangar runs: the real one with a config that knows
/// every far server's host key (one known_hosts for the three).
fn client_side(dir: &Path, far: &[Far]) -> PathBuf {
    let known: String = far
        .iter()
        .map(|f| fs::read_to_string(f.sshd.dir.join("known_hosts")).expect("known_hosts"))
        .collect();
    fs::write(dir.join("known_hosts"), known).expect("known_hosts");
    fs::write(
        dir.join("ssh_config"),
        format!(
            "Host *\n  UserKnownHostsFile {dir}/known_hosts\n  GlobalKnownHostsFile /dev/null\n\
             \x20 StrictHostKeyChecking yes\n  IdentitiesOnly yes\n  LogLevel ERROR\n",
            dir = dir.display()
        ),
    )
    .expect("ssh_config");
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).expect("bin");
    let ssh = bin.join("ssh");
    fs::write(
        &ssh,
        format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F '{}' \"$@\"\n",
            dir.join("ssh_config").display()
        ),
    )
    .expect("ssh wrapper");
    fs::set_permissions(&ssh, fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

fn fleet() -> Option<Fleet> {
    fleet_with("")
}

/// A fleet whose local config.toml ends with `extra`.
fn fleet_with(extra: &str) -> Option<Fleet> {
    if !sshd::available() {
        return None;
    }
    let far: Vec<Far> = ["h1", "h2", "h3"].into_iter().map(far_host).collect();
    let client = tempfile::tempdir().expect("client dir");
    let bin = client_side(client.path(), &far);
    let mut local = Hangar::new();
    local.set_env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            local.env_var("PATH").unwrap_or_default()
        ),
    );
    let mut config = String::from(ACTIVITY);
    for f in &far {
        let user = f
            .user
            .as_ref()
            .map_or(f.sshd.user.clone(), |u| u.name.clone());
        config.push_str(&format!(
            "\n[hosts.{name}]\nssh = \"{user}@127.0.0.1\"\nport = {port}\nidentity_file = \"{key}\"\n\
             hangar = \"{hangar}\"\nhome = \"{home}\"\nconnect_timeout_secs = 5\n",
            name = f.name,
            port = f.sshd.port,
            key = f.sshd.user_key.display(),
            hangar = f.remote.root.join("remote-bin").join("hangar").display(),
            home = f.remote.home.display(),
        ));
    }
    config.push_str(extra);
    local.write_config(&config);
    Some(Fleet {
        local,
        far,
        _client: client,
    })
}

/// The uid a process runs as.
fn uid_of(pid: i32) -> u32 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|u| u.parse().ok())
        .expect("a Uid line")
}

/// `hangar --host NAME new` on a far host: the new session's id.
fn far_session(f: &Fleet, host: &str, title: &str) -> String {
    let v = f.local.json(&[
        "--host",
        host,
        "new",
        "--provider",
        "claude",
        "--title",
        title,
    ]);
    v["id"].as_str().expect("new prints an id").to_owned()
}

/// Each host's session ids in an `ls --all-hosts --json` document.
fn ids_by_host(ls: &Value) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = ls["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|r| {
            (
                r["host"].as_str().expect("host").to_owned(),
                r["id"].as_str().expect("id").to_owned(),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn down_hosts(doc: &Value) -> Vec<String> {
    doc["down"]
        .as_array()
        .expect("down")
        .iter()
        .map(|d| d["host"].as_str().expect("host").to_owned())
        .collect()
}

#[test]
fn every_machine_is_in_one_list_and_a_stopped_one_is_named_down_while_the_others_answer() {
    let Some(mut f) = fleet() else { return };
    let here = f
        .local
        .new_agent(&["--provider", "claude", "--title", "here"]);
    let mut expected = vec![("local".to_owned(), here.clone())];
    for host in ["h1", "h2", "h3"] {
        expected.push((
            host.to_owned(),
            far_session(&f, host, &format!("on {host}")),
        ));
    }
    expected.sort();
    let id_on = |host: &str| {
        expected
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, id)| id.clone())
            .expect("a session there")
    };

    // Each far hangar runs as its own user, in its own home.
    for far in &f.far {
        let pid = far.remote.daemon_pid();
        if let Some(user) = &far.user {
            assert_eq!(
                uid_of(pid),
                user.uid,
                "{}'s daemon runs as its user",
                far.name
            );
        }
    }

    let ls = f.local.json(&["ls", "--all-hosts"]);
    assert_eq!(ids_by_host(&ls), expected, "{ls}");
    assert!(down_hosts(&ls).is_empty(), "{ls}");
    let row = ls["sessions"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["host"] == "h2"))
        .expect("h2's row");
    assert_eq!(
        row["title"], "on h2",
        "a far row is the row `ls --json` prints there"
    );

    // Plain `ls --json` is unchanged: this machine's array.
    let plain = f.local.json(&["ls"]);
    assert_eq!(plain.as_array().map(Vec::len), Some(1), "{plain}");
    assert!(plain[0].get("host").is_none(), "{plain}");

    // For a person: a HOST column, and how to reach a far row.
    let table = f.local.ok(&["ls", "--all-hosts"]);
    assert!(table.starts_with("HOST"), "{table}");
    for host in ["local", "h1", "h2", "h3"] {
        assert!(
            table.lines().any(|l| l.starts_with(&format!("{host} "))),
            "no row of {host}:\n{table}"
        );
    }
    assert!(table.contains("hangar --host"), "{table}");

    // A far row is actionable as HOST:ID.
    let on_h1 = id_on("h1");
    f.local
        .ok(&["send", &format!("h1:{}", &on_h1[..8]), "needle from here"]);
    f.far[0]
        .remote
        .wait_until("h1's agent answered", DEADLINE, || {
            f.local
                .ok(&["screen", &format!("h1:{on_h1}")])
                .contains("answer: needle from here")
        });

    // Search and wait across hosts, every host answering.
    let found = f.local.json(&["search", "--all-hosts", "needle from here"]);
    let hosts_found: Vec<&str> = found["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .filter_map(|m| m["host"].as_str())
        .collect();
    assert!(hosts_found.contains(&"h1"), "{found}");
    assert!(hosts_found.iter().all(|h| *h == "h1"), "{found}");
    let on_h3 = id_on("h3");
    f.local
        .ok(&["send", &format!("h3:{on_h3}"), "slow 500 think"]);
    let waited = f.local.json(&[
        "wait",
        "--all-hosts",
        &format!("h3:{on_h3}"),
        &here,
        "--until",
        "idle",
        "--timeout",
        "60s",
    ]);
    assert_eq!(waited["done"], true, "{waited}");
    let waited_hosts: Vec<&str> = waited["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["host"].as_str())
        .collect();
    assert_eq!(waited_hosts, vec!["local", "h3"], "{waited}");

    // h2 goes away midway: its sshd and every connection of it killed.
    f.far[1].sshd.kill();
    let ls = f.local.json(&["ls", "--all-hosts"]);
    let on_h2 = id_on("h2");
    let mut expected = expected.clone();
    expected.retain(|(h, _)| h != "h2");
    assert_eq!(ids_by_host(&ls), expected, "the others still answer: {ls}");
    assert_eq!(down_hosts(&ls), vec!["h2"], "{ls}");
    let reason = ls["down"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("cannot reach host \"h2\"") && reason.contains("Connection refused"),
        "the reason is ssh's: {reason}"
    );
    let table = f.local.ok(&["ls", "--all-hosts"]);
    assert!(
        table.contains("host h2 is down: cannot reach host"),
        "{table}"
    );

    // The other commands name it too, and still answer with the rest.
    let usage = f.local.json(&["usage", "--all-hosts"]);
    assert_eq!(down_hosts(&usage), vec!["h2"], "{usage}");
    let totals: Vec<&str> = usage["totals"]
        .as_array()
        .expect("totals")
        .iter()
        .filter_map(|t| t["host"].as_str())
        .collect();
    assert_eq!(totals, vec!["local", "h1", "h3"], "{usage}");
    let found = f.local.json(&["search", "--all-hosts", "needle from here"]);
    assert_eq!(down_hosts(&found), vec!["h2"], "{found}");
    assert!(
        found["matches"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["host"] == "h1")),
        "{found}"
    );
    // An id on the stopped host is refused naming it.
    let out = f.local.run(&["wait", "--all-hosts", &on_h2[..8]]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("h2"), "{said}");
}

#[test]
fn a_daemon_that_hangs_is_given_up_at_its_bound_and_only_this_machines_fails_the_command() {
    let Some(f) = fleet() else { return };
    let here = f.local.new_agent(&["--provider", "claude"]);
    let on_h1 = far_session(&f, "h1", "far");
    // This machine's daemon stopped (SIGSTOP): it accepts the connection
    // and never answers, the slowest a host can be.
    let daemon = f.local.daemon_pid();
    signal(daemon, libc::SIGSTOP);
    let out = f.local.run(&["--json", "ls", "--all-hosts"]);
    signal(daemon, libc::SIGCONT);
    assert_eq!(
        out.status.code(),
        Some(1),
        "this machine did not answer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ls: Value = serde_json::from_slice(&out.stdout).expect("the others' answers as JSON");
    let rows = ids_by_host(&ls);
    assert!(rows.contains(&("h1".to_owned(), on_h1)), "{ls}");
    assert!(!rows.iter().any(|(h, _)| h == "local"), "{ls}");
    assert_eq!(down_hosts(&ls), vec!["local"], "{ls}");
    assert_eq!(
        ls["down"][0]["reason"], "did not answer within 20 s",
        "the bound (connect timeout 10 s + 10 s) named: {ls}"
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("this machine's daemon did not answer"),
        "{said}"
    );
    // Woken again, it answers as before.
    let ls = f.local.json(&["ls", "--all-hosts"]);
    assert!(
        ids_by_host(&ls).contains(&("local".to_owned(), here)),
        "{ls}"
    );
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: a daemon this test started.
    unsafe {
        libc::kill(pid, sig);
    }
}

#[test]
fn the_tui_overview_lists_every_hosts_agents_waiting_first_and_enter_goes_to_one_on_its_host() {
    let Some(mut f) = fleet() else { return };
    let near = f
        .local
        .new_agent(&["--provider", "claude", "--title", "near-agent"]);
    let on_h3 = far_session(&f, "h3", "asks-on-h3");
    let on_h1 = far_session(&f, "h1", "idle-on-h1");
    far_session(&f, "h2", "idle-on-h2");
    f.local.wait_state(&near, "live");
    // h3's agent asks a question: it waits for a person.
    f.local
        .ok(&["send", &format!("h3:{on_h3}"), "ask which branch"]);
    f.local
        .wait_until("h3's agent waits for a person", DEADLINE, || {
            f.local.json(&["--host", "h3", "ls"])[0]["activity"] == "waiting"
        });
    // h2 stops before the overview is asked.
    f.far[1].sshd.kill();

    let mut app = pty_screen::PtyApp::spawn(f.local.command(&[]), 30, 140);
    app.wait_for("this machine's agent", |t| {
        t.contains("near-agent") && t.contains("fake-agent claude session")
    });
    app.write(b"A");
    app.wait_for(
        "every host's agents, h3's waiting one first, h2 down",
        |t| {
            t.contains("every host's agents")
                && t.contains("idle-on-h1")
                && t.contains("near-agent")
                && t.contains("h2 is down: cannot reach host")
                && t.lines().any(|l| l.contains("h3") && l.contains("waiting"))
        },
    );
    let text = app.text();
    let first_row = |needle: &str| text.lines().position(|l| l.contains(needle));
    // Rows by id (a title also shows in its pane's border).
    let (waiting, here) = (first_row(&on_h3[..8]), first_row(&near[..8]));
    assert!(
        waiting.is_some() && waiting < here && waiting < first_row("idle-on-h1"),
        "the waiting agent comes first:\n{text}"
    );
    assert!(!text.contains("idle-on-h2"), "h2 did not answer:\n{text}");
    // The open list follows the fleet: h1's agent starts waiting and moves
    // up by itself, the chosen row (h3's) staying chosen.
    f.local
        .ok(&["send", &format!("h1:{on_h1}"), "ask which branch"]);
    app.wait_for("h1's agent waiting in the list", |t| {
        t.lines()
            .any(|l| l.contains(&on_h1[..8]) && l.contains("waiting"))
    });
    // Enter: the view switches to h3 and shows its agent.
    app.write(b"\r");
    app.wait_for("h3's view with its agent", |t| {
        t.contains("@h3") && t.contains("asks-on-h3") && !t.contains("near-agent")
    });
    app.write(b"q");
    assert_eq!(app.wait_exit(), Some(0));
}

/// This machine's notify lines: "HOST ID ACTIVITY" (`local` for its own).
fn notified(file: &Path) -> Vec<String> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_far_agent_that_starts_waiting_or_ends_its_turn_notifies_this_machine_once_and_a_stopped_host_blocks_nothing()
 {
    let notes = tempfile::tempdir().expect("notes dir");
    let log = notes.path().join("notified.log");
    let Some(mut f) = fleet_with(&format!(
        "\n[notify]\ndesktop = false\ncommand = 'echo \"${{HANGAR_HOST:-local}} $HANGAR_SESSION_ID $HANGAR_ACTIVITY\" >> {}'\n",
        log.display()
    )) else {
        return;
    };
    let on_h1 = far_session(&f, "h1", "asks-on-h1");
    let on_h3 = far_session(&f, "h3", "asks-on-h3");
    far_session(&f, "h2", "on-h2");
    // This machine's daemon starts, and with it the watch of every host.
    let here = f
        .local
        .new_agent(&["--provider", "claude", "--title", "here"]);
    f.local.wait_state(&here, "live");
    let daemon_log = f.local.home.join("daemon.log");
    f.local.wait_until("every host is watched", DEADLINE, || {
        let said = fs::read_to_string(&daemon_log).unwrap_or_default();
        ["h1", "h2", "h3"]
            .iter()
            .all(|h| said.contains(&format!("host \"{h}\" watched")))
    });

    // h1's agent asks a question: this machine is told once, naming h1.
    f.local
        .ok(&["send", &format!("h1:{on_h1}"), "ask which branch"]);
    f.local.wait_until("h1's wait told here", DEADLINE, || {
        !notified(&log).is_empty()
    });
    // Answered, its turn ends: told once more, and the wait was not told
    // again in between.
    f.local
        .ok(&["send", &format!("h1:{on_h1}"), "slow 300 main"]);
    f.local.wait_until("h1's turn end told here", DEADLINE, || {
        notified(&log).len() >= 2
    });
    assert_eq!(
        notified(&log),
        vec![format!("h1 {on_h1} waiting"), format!("h1 {on_h1} idle")]
    );

    // The daemon's link to h1 dies (its ssh killed); the watch connects
    // again and tells nothing old: the next line is h1's next change.
    let daemon = f.local.daemon_pid();
    let port = f.far[0].sshd.port.to_string();
    let links: Vec<i32> = support::descendants_of(daemon)
        .into_iter()
        .filter(|&p| {
            let c = support::cmdline(p);
            c.iter().any(|a| a.contains(" bridge --mux")) && c.contains(&port)
        })
        .collect();
    assert_eq!(links.len(), 1, "one ssh link from the daemon to h1");
    signal(links[0], libc::SIGKILL);
    f.local.wait_until("the watch of h1 is back", DEADLINE, || {
        fs::read_to_string(&daemon_log)
            .unwrap_or_default()
            .contains("host \"h1\" answers again")
    });
    f.local
        .ok(&["send", &format!("h1:{on_h1}"), "ask which tag"]);
    f.local.wait_until("h1's new wait told here", DEADLINE, || {
        notified(&log).len() >= 3
    });
    assert_eq!(
        notified(&log),
        vec![
            format!("h1 {on_h1} waiting"),
            format!("h1 {on_h1} idle"),
            format!("h1 {on_h1} waiting")
        ],
        "nothing replayed when the link came back"
    );
    f.local.ok(&["send", &format!("h1:{on_h1}"), "slow 100 v1"]);
    f.local.wait_until("h1's turn end told here", DEADLINE, || {
        notified(&log).len() >= 4
    });

    // h2 goes away: neither this machine's notifications nor h3's wait.
    f.far[1].sshd.kill();
    f.local.ok(&["send", &here, "ask which branch"]);
    f.local
        .ok(&["send", &format!("h3:{on_h3}"), "ask which branch"]);
    f.local
        .wait_until("this machine's and h3's waits told", DEADLINE, || {
            notified(&log).len() >= 6
        });
    let mut last_two = notified(&log)[4..].to_vec();
    last_two.sort();
    assert_eq!(
        last_two,
        vec![
            format!("h3 {on_h3} waiting"),
            format!("local {here} waiting")
        ]
    );
}

#[test]
fn the_web_api_lists_every_hosts_agents_and_a_far_terminal_comes_over_the_ssh_link() {
    use crate::web_support::{self, WebServer, WsClient};
    let Some(mut f) = fleet() else { return };
    let here = f
        .local
        .new_agent(&["--provider", "claude", "--title", "here"]);
    let on_h1 = far_session(&f, "h1", "web-on-h1");
    let on_h2 = far_session(&f, "h2", "on-h2");
    f.local
        .ok(&["send", &format!("h1:{on_h1}"), "web-needle-1"]);
    f.local.wait_until("h1's agent answered", DEADLINE, || {
        f.local
            .ok(&["screen", &format!("h1:{on_h1}")])
            .contains("answer: web-needle-1")
    });
    // h2 stops before the page asks.
    f.far[1].sshd.kill();
    let web = WebServer::start(&f.local, &[]);

    // Behind the page's token, as every route.
    let bare = web_support::http(
        "GET",
        &format!("{}/api/all-hosts/sessions", web.base),
        &[],
        None,
    );
    assert_eq!(bare.status, 401, "{}", bare.text());

    // The every-host list: `ls --all-hosts --json`, h2 named down.
    let r = web.get("/api/all-hosts/sessions");
    assert_eq!(r.status, 200, "{}", r.text());
    let doc = r.json();
    let rows = ids_by_host(&doc);
    assert!(rows.contains(&("local".to_owned(), here.clone())), "{doc}");
    assert!(rows.contains(&("h1".to_owned(), on_h1.clone())), "{doc}");
    assert!(!rows.iter().any(|(h, _)| h == "h2"), "{doc}");
    assert_eq!(down_hosts(&doc), vec!["h2"], "{doc}");
    let reason = doc["down"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("cannot reach host \"h2\""), "{reason}");

    // h1's agent's terminal, through this server's ssh link to h1: its
    // screen comes first, and typing reaches it.
    let bearer = format!("Bearer {}", web.token);
    let path = format!("/api/hosts/h1/sessions/{on_h1}/attach?cols=100&rows=30");
    let mut ws = WsClient::connect(web.host(), &path, &[("Authorization", &bearer)]);
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("web-needle-1") {
        let (op, payload) = ws.read_frame();
        assert_ne!(op, 0x8, "closed: {}", String::from_utf8_lossy(&payload));
        if op == 0x2 {
            seen.extend_from_slice(&payload);
        }
    }
    ws.send_binary(b"typed-over-web\r");
    f.local
        .wait_until("h1's agent answered the web", DEADLINE, || {
            f.local
                .ok(&["screen", &format!("h1:{on_h1}")])
                .contains("answer: typed-over-web")
        });
    // Its history pages come the same way.
    let page = web.get(&format!("/api/hosts/h1/sessions/{on_h1}/history?lines=50"));
    assert_eq!(page.status, 200, "{}", page.text());

    // A host that is down and one that is not configured are clear errors.
    let down = web.get(&format!("/api/hosts/h2/sessions/{on_h2}/history"));
    assert_eq!(down.status, 502, "{}", down.text());
    assert_eq!(down.json()["error"]["code"], "host_down");
    let unknown = web.get(&format!("/api/hosts/nowhere/sessions/{on_h1}/history"));
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert_eq!(unknown.json()["error"]["code"], "no_such_host");

    // Nothing listens on h1 for this: its daemon has no TCP listener
    // beyond loopback (its recording proxy is on 127.0.0.1 for its agents).
    let far_pid = f.far[0].remote.daemon_pid();
    assert!(
        !listens_beyond_loopback(far_pid),
        "h1's daemon opened no network listener"
    );
}

/// Whether `pid` holds a listening TCP socket on an address other than
/// loopback (`/proc/net/tcp*`: state 0A, inode one of its fds).
fn listens_beyond_loopback(pid: i32) -> bool {
    const LOOPBACK: [&str; 2] = ["0100007F", "00000000000000000000000001000000"];
    let inodes: Vec<String> = fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    l.to_str()?
                        .strip_prefix("socket:[")?
                        .strip_suffix(']')
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                let address = cols.get(1)?.split(':').next()?;
                (cols.get(3) == Some(&"0A") && !LOOPBACK.contains(&address))
                    .then(|| cols.get(9).map(|s| s.to_string()))?
            })
            .any(|inode| inodes.contains(&inode))
    })
}

#[test]
fn in_a_browser_the_page_lists_every_hosts_agents_and_types_into_a_far_ones_terminal() {
    use crate::web_support::{self, Browser, Screen, WebServer};
    let bins = browser_or_skip!();
    let Some(mut f) = fleet() else { return };
    let here = f
        .local
        .new_agent(&["--provider", "claude", "--title", "near-agent"]);
    let on_h1 = far_session(&f, "h1", "far-on-h1");
    far_session(&f, "h2", "on-h2");
    f.local.wait_state(&here, "live");
    f.far[1].sshd.kill();
    let web = WebServer::start(&f.local, &[]);
    let browser = Browser::start(&bins, Screen::Desktop);
    browser.goto(&web.url);
    browser.wait_js(
        "this machine's and h1's agents listed, h2 named down",
        &format!(
            "const far = document.querySelector('#far:not([hidden]) a.row[data-host=\"h1\"][data-session=\"{on_h1}\"]'); \
             const near = document.querySelector('section.tab a.row[data-session=\"{here}\"]'); \
             const down = document.getElementById('far-down').textContent; \
             return !!far && !!near && down.includes('host h2 is down: cannot reach host');"
        ),
    );

    // Opening h1's row: its terminal, through the server's ssh link.
    browser.click(&format!(
        "a.row[data-host=\"h1\"][data-session=\"{on_h1}\"]"
    ));
    browser.wait_js(
        "h1's agent's terminal",
        "const r = document.querySelector('#term .xterm-rows'); \
         return !!r && r.textContent.includes('fake-agent claude session') \
           && document.getElementById('heading').textContent.startsWith('h1: ');",
    );
    browser.type_into(".xterm-helper-textarea", "typed-in-browser\u{E007}");
    f.local
        .wait_until("h1's agent answered the browser", DEADLINE, || {
            f.local
                .ok(&["screen", &format!("h1:{on_h1}")])
                .contains("answer: typed-in-browser")
        });
    browser.wait_js(
        "the answer comes back to the browser",
        "return document.querySelector('#term .xterm-rows').textContent.includes('answer: typed-in-browser');",
    );
}
