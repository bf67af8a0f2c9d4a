//! Codex 0.17x's shared background server, when asked for
//! (`FAKE_AGENT_CODEX_SHARED_SERVER=1`).
//!
//! Real codex 0.171.0 run without `--no-daemon` starts `codex app-server
//! --listen unix:// --managed-daemon` in a session and process group of its
//! own, one per `CODEX_HOME` (later TUIs reuse it), which outlives the TUI
//! (reparented to pid 1). The fake does the same: it starts itself as
//! `hangar-fake-agent app-server --listen unix:// --managed-daemon`
//! (`setsid`), recorded in `$CODEX_HOME/app-server-control/fake-app-server.pid`,
//! and that process just waits to be killed. Opt-in, so the fake's own
//! tests never leave one behind; `FAKE_AGENT_CODEX_NO_DAEMON_HELP=0` makes
//! `--help` not mention `--no-daemon`, like a codex from before the flag.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variable that makes the re-executed fake the server.
const SERVER_MODE: &str = "FAKE_AGENT_APP_SERVER";

fn pid_file(codex_home: &Path) -> PathBuf {
    codex_home
        .join("app-server-control")
        .join("fake-app-server.pid")
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.get(s.rfind(')')? + 2..)?.to_owned();
            Some(!rest.starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Whether this process was started as the shared server.
pub fn is_server() -> bool {
    std::env::var_os(SERVER_MODE).is_some()
}

/// The server's life: record its pid, then wait for a signal.
pub fn serve(codex_home: &Path) -> ! {
    let file = pid_file(codex_home);
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&file, std::process::id().to_string());
    loop {
        std::thread::park();
    }
}

/// A TUI without `--no-daemon`: start the shared server for `codex_home`
/// unless one runs. Returns the pid of the one in use.
pub fn ensure(codex_home: &Path) -> anyhow::Result<i32> {
    let file = pid_file(codex_home);
    if let Some(pid) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok())
        && alive(pid)
    {
        return Ok(pid);
    }
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["app-server", "--listen", "unix://", "--managed-daemon"])
        .env(SERVER_MODE, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own session makes the server leave the TUI's session and process
    // group, as codex's does; the cleared mask lets SIGTERM end it (the
    // fake blocks it, and the mask is inherited across exec).
    crate::child_setup::clear_signal_mask(&mut cmd, true);
    let child = cmd.spawn()?;
    let pid = child.id() as i32;
    // Not waited for: it outlives this process, as the real one does.
    std::mem::forget(child);
    Ok(pid)
}

/// Whether this codex invocation starts (or joins) the shared server:
/// asked for, and run without `--no-daemon`.
pub fn wanted(argv: &[String]) -> bool {
    std::env::var("FAKE_AGENT_CODEX_SHARED_SERVER").is_ok_and(|v| v == "1")
        && !argv.iter().any(|a| a == "--no-daemon")
}

/// Whether `--help` mentions `--no-daemon` (a codex of 0.17x does).
pub fn help_mentions_no_daemon() -> bool {
    !std::env::var("FAKE_AGENT_CODEX_NO_DAEMON_HELP").is_ok_and(|v| v == "0")
}
