//! Issue 10, part 6: permissions and secrets. The home and the socket folder
//! are 0700, the store (and its WAL companions) 0600, the proxy CA key 0600,
//! and no MCP or proxy token given to an agent ever appears in a log, the
//! journal or the CLI's output.
//!
//! The CA-key and token checks switch themselves on: they run when the
//! daemon made a CA key / gave an agent a token, and print why they were
//! skipped otherwise (the proxy and MCP bridge are built separately).

use crate::reliability_support;
use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::*;

fn mode(p: &Path) -> u32 {
    fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_home_and_socket_folder_are_0700_and_the_store_is_0600() {
    let h = Hangar::new();
    h.start_daemon();
    let a = h.new_pane();
    h.wait_state(&a, "live");
    h.new_agent(&["--provider", "shell", "--parked", "--title", "parked"]);

    assert_eq!(mode(&h.home), 0o700, "HANGAR_HOME");
    assert_eq!(mode(&h.home.join("run")), 0o700, "the socket folder");
    assert_eq!(
        mode(&h.home.join("run").join("hangar.sock")) & 0o077,
        0,
        "the socket"
    );
    for f in ["state.db", "state.db-wal", "state.db-shm"] {
        let p = h.home.join(f);
        if p.exists() {
            assert_eq!(mode(&p), 0o600, "{f}");
        }
    }
    // A folder opened up by hand is closed again at the next start.
    fs::set_permissions(h.home.join("run"), fs::Permissions::from_mode(0o755)).unwrap();
    h.shutdown();
    h.start_daemon();
    assert_eq!(
        mode(&h.home.join("run")),
        0o700,
        "the socket folder after a restart"
    );
}

#[test]
fn the_proxy_ca_key_exists_and_is_0600() {
    let h = Hangar::new();
    h.start_daemon();
    let a = h.new_pane();
    h.wait_state(&a, "live");
    let key = h.home.join("proxy").join("ca.key");
    // The proxy is on by default and makes its CA for the first agent it
    // serves: a check that passed when the key was missing checked nothing.
    assert!(
        key.exists(),
        "no {} after a claude session started with the default [proxy]",
        key.display()
    );
    assert_eq!(mode(&key), 0o600, "{}", key.display());
    assert_eq!(mode(&h.home.join("proxy")) & 0o077, 0, "the proxy folder");
}

/// Env values given to an agent that are secrets: any `*TOKEN*` or
/// `*SECRET*` variable, and credentials inside a proxy URL.
fn secrets_in(env: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in env {
        let Some((k, v)) = e.split_once('=') else {
            continue;
        };
        let upper = k.to_ascii_uppercase();
        if (upper.contains("TOKEN") || upper.contains("SECRET")) && v.len() >= 8 {
            out.push((k.to_owned(), v.to_owned()));
        }
        if upper.ends_with("_PROXY")
            && let Some(rest) = v.split("://").nth(1)
            && let Some((cred, _)) = rest.split_once('@')
        {
            let secret = cred.rsplit(':').next().unwrap_or(cred);
            if secret.len() >= 8 {
                out.push((k.to_owned(), secret.to_owned()));
            }
        }
    }
    out
}

/// Every file under `dir` that a person or a support request might read.
fn text_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            text_files(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x == "log" || x == "jsonl" || x == "txt")
        {
            out.push(p);
        }
    }
}

#[test]
fn no_token_given_to_an_agent_appears_in_logs_journal_or_output() {
    let h = Hangar::new();
    h.start_daemon();
    let a = h.new_pane();
    h.wait_state(&a, "live");
    h.ok(&["send", &a, "hello"]);
    h.wait_screen(&a, "hello");
    let pid = h.pid_of(&a);
    let mut secrets = secrets_in(&environ(pid));
    // The MCP token travels in a config file the agent is pointed at.
    if let Some(config) = arg_after(&cmdline(pid), "--mcp-config") {
        let path = Path::new(&config);
        assert_eq!(
            mode(path),
            0o600,
            "the MCP config file {config} holds a token"
        );
        let text = fs::read_to_string(path).expect("read the MCP config");
        if let Some(at) = text.find("HANGAR_MCP_TOKEN") {
            let token: String = text[at + "HANGAR_MCP_TOKEN".len()..]
                .chars()
                .skip_while(|c| !c.is_ascii_alphanumeric())
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if token.len() >= 16 {
                secrets.push(("HANGAR_MCP_TOKEN (MCP config)".into(), token));
            }
        }
    }
    // A claude session is always given proxy credentials (the proxy is on
    // by default) and an MCP token: a check over no secret checks nothing.
    assert!(
        !secrets.is_empty(),
        "the agent was given no token to look for (no *TOKEN*/*SECRET* variable, no proxy \
         credentials, no MCP token): {:?}",
        environ(pid)
    );
    // Everything hangar writes or prints: its home (logs, journal, captures),
    // the daemon's own output, every report. The agents' own folders are not
    // hangar's (the fake agent records the proxy it was given, on purpose).
    let mut files = Vec::new();
    text_files(&h.home, &mut files);
    files.push(h.root.join("daemon-foreground.log"));
    let mut outputs: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            (
                p.display().to_string(),
                fs::read_to_string(p).unwrap_or_default(),
            )
        })
        .collect();
    for args in [
        vec!["ls"],
        vec!["--json", "ls"],
        vec!["status"],
        vec!["--json", "status"],
        vec!["--json", "export"],
        vec!["screen", a.as_str()],
    ] {
        let out = h.run(&args);
        outputs.push((
            format!("hangar {}", args.join(" ")),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    for (name, value) in &secrets {
        for (source, text) in &outputs {
            assert!(
                !text.contains(value.as_str()),
                "the secret in {name} appears in {source}"
            );
        }
    }
    reliability_support::figures(
        "secrets",
        format!(
            "secrets_checked={} ({}) against {} files and outputs",
            secrets.len(),
            secrets
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            outputs.len()
        ),
    );
}

#[test]
fn another_users_client_gets_the_daemons_refusal_not_a_broken_pipe() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        hangar_testkit::required::missing(
            module_path!(),
            "running a daemon as another user needs root",
        );
        return;
    }
    let h = Hangar::new();
    // The daemon runs as nobody in a home of its own; root, who can reach
    // any socket, is the other user whose client it refuses.
    const NOBODY: u32 = 65534;
    fs::set_permissions(&h.root, fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir_all(&h.home).unwrap();
    std::os::unix::fs::chown(&h.home, Some(NOBODY), Some(NOBODY)).unwrap();
    let mut cmd = h.command(&["daemon"]);
    std::os::unix::process::CommandExt::uid(&mut cmd, NOBODY);
    std::os::unix::process::CommandExt::gid(&mut cmd, NOBODY);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut daemon = cmd.spawn().expect("start the daemon as nobody");
    let socket = h.home.join("run").join("hangar.sock");
    h.wait_until("nobody's daemon listens", DEADLINE, || socket.exists());
    let mut said = Vec::new();
    // Several times: the refusal and the close race the client's hello.
    for _ in 0..20 {
        said.push(h.fail(&["ls"]));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    for stderr in &said {
        assert!(
            stderr.contains("refused: the client runs as another user"),
            "the daemon's own words: {stderr}"
        );
    }
}
