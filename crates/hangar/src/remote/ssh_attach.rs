//! `hangar --host NAME attach ID` in a terminal: `ssh -t` runs the remote
//! `hangar attach ID` and owns this terminal, as `ssh -t host tmux attach`
//! does, so a key and its echo cross no hangar process on this machine (the
//! shared link's relay made key echo 1.19-1.26x of tmux's over ssh). This
//! process only waits for ssh, and when the connection drops it says so,
//! keeps the detach key working and attaches again.
//!
//! It must never read the terminal while an ssh runs (keys would be split
//! between the two), and never queue typing across a drop: a key sent once
//! is never sent again by a reconnect.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitCode, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hangar_core::hosts::{self as rules, AttachSshEnd};
use hangar_protocol::paths::Paths;

use crate::attach::{RESET_TERMINAL, RawMode, poll_stdin};
use crate::conn::ssh::{self, Host};
use hangar_core::keys::{DetachFilter, DetachKey};

/// The first pause before attaching again, doubled up to [`MAX_PAUSE`]
/// (as the link's attach does).
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// The most of ssh's stderr kept for a message.
const STDERR_KEPT: usize = 16 * 1024;

/// Whether an attach goes through `ssh -t`: only when this process has a
/// terminal on both sides to hand to ssh. Otherwise (a pipe, a script) the
/// attach relays over the shared link as before.
pub fn wanted() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Attach this terminal to `session` on `host` through `ssh -t`, attaching
/// again whenever the connection drops, until the remote attach ends (its
/// exit code is returned) or the person detaches while it is down.
pub fn run(paths: &Paths, host: &Host, session: &str) -> anyhow::Result<ExitCode> {
    let key = local_detach_key(paths);
    let marker = Marker::new(paths)?;
    // Raw from the start to the end: ssh keeps the mode it finds and puts
    // it back, a killed ssh leaves its own raw mode, and the guard puts
    // back the mode the person had.
    let raw = RawMode::enable(false)?;
    let mut reconnecting = false;
    let mut pause = FIRST_PAUSE;
    let mut filter = DetachFilter::new(key);
    loop {
        marker.clear();
        let announce =
            reconnecting.then(|| format!("[hangar] reconnected to host {:?}", host.name));
        let on_connect = rules::on_connect_command(&marker.text(), announce.as_deref());
        let (status, said) = run_ssh(host, session, &on_connect)?;
        match rules::attach_ssh_end(status.code(), marker.exists(), reconnecting) {
            AttachSshEnd::Exit(code) => {
                drop(raw);
                if code == 127 {
                    eprintln!(
                        "[hangar] host {:?} ({}) has no `{}` to run: set `hangar` in [hosts.{}] to the remote binary's path",
                        host.name,
                        ssh::describe(host),
                        host.config.hangar.as_deref().unwrap_or("hangar"),
                        host.name
                    );
                }
                return Ok(ExitCode::from(code.clamp(0, 255) as u8));
            }
            AttachSshEnd::Unreachable => {
                drop(raw);
                bail!(
                    "cannot reach host {:?} ({}): {}",
                    host.name,
                    ssh::describe(host),
                    if said.is_empty() {
                        "ssh failed".to_owned()
                    } else {
                        said
                    }
                );
            }
            AttachSshEnd::Dropped => {
                let why = match (said.is_empty(), status.signal()) {
                    (false, _) => said,
                    (true, Some(signal)) => format!("ssh was killed by signal {signal}"),
                    (true, None) => "ssh lost the connection".to_owned(),
                };
                eprint!(
                    "\r\n[hangar] lost the connection to host {:?} ({}); the session keeps running there; reconnecting ({} leaves)\r\n",
                    host.name,
                    hangar_core::display::name(&why),
                    key.describe()
                );
                reconnecting = true;
                pause = FIRST_PAUSE;
                // Whatever was half-typed before the drop is not a prefix.
                filter = DetachFilter::new(key);
            }
            AttachSshEnd::StillDown => {}
        }
        if detach_asked_within(pause, &mut filter)? {
            drop(raw);
            // The modes the remote session switched on, left set when the
            // connection dropped under it.
            let mut out = std::io::stdout();
            let _ = out.write_all(RESET_TERMINAL);
            let _ = out.flush();
            eprintln!(
                "\r\n[hangar] detached from {}; it keeps running on host {:?}",
                hangar_core::display::name(session.get(..8).unwrap_or(session)),
                host.name
            );
            return Ok(ExitCode::SUCCESS);
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// The detach key of this machine's `[attach]` (the remote daemon's is not
/// known while its host is down), else the default `C-b d`.
fn local_detach_key(paths: &Paths) -> DetachKey {
    let spec = hangar_daemon::config::Config::load(&paths.config())
        .map(|c| c.attach.detach_key)
        .unwrap_or_else(|_| "C-b d".to_owned());
    DetachKey::parse(&spec)
}

/// Runs one `ssh -t` with this terminal as its stdin and stdout and waits
/// for it: its status and what it said on stderr (its own messages only:
/// the remote side's stderr comes through the terminal).
fn run_ssh(host: &Host, session: &str, on_connect: &str) -> anyhow::Result<(ExitStatus, String)> {
    let mut child = ssh::attach_command(host, session, Some(on_connect))
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run `ssh`: install OpenSSH's client (the `ssh` on PATH is used)")?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = mpsc::channel();
    if let Some(mut pipe) = child.stderr.take() {
        let stderr = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                let mut kept = stderr.lock().unwrap_or_else(|e| e.into_inner());
                kept.extend_from_slice(&buf[..n]);
                let over = kept.len().saturating_sub(STDERR_KEPT);
                kept.drain(..over);
            }
            let _ = done_tx.send(());
        });
    }
    let status = child.wait().context("cannot wait for ssh")?;
    // Its last words are in the pipe; bounded, because a process ssh
    // started (a ControlPersist master) may hold the pipe open.
    let _ = done_rx.recv_timeout(Duration::from_millis(500));
    let text = stderr.lock().map(|b| b.clone()).unwrap_or_default();
    Ok((
        status,
        rules::ssh_failure_text(&String::from_utf8_lossy(&text)),
    ))
}

/// Reads the terminal for `pause` while no ssh runs: typing is dropped
/// (the session is not there to take it), the detach key ends the wait.
/// True when the person asked to leave, or the terminal is gone.
fn detach_asked_within(pause: Duration, filter: &mut DetachFilter) -> anyhow::Result<bool> {
    // Unbuffered: `Stdin` would read ahead bytes that poll then misses.
    let mut terminal: File = std::io::stdin().as_fd().try_clone_to_owned()?.into();
    let until = Instant::now() + pause;
    let mut buf = [0u8; 4096];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        if !poll_stdin(left) {
            continue;
        }
        match terminal.read(&mut buf) {
            Ok(0) | Err(_) => return Ok(true),
            Ok(n) => {
                if filter.feed(&buf[..n]).1 {
                    return Ok(true);
                }
            }
        }
    }
}

/// A file ssh's `LocalCommand` creates once it has logged in: afterwards,
/// whether that ssh reached the host. In this home's private run folder
/// (0700: no one else can plant it), named by this process, so even an
/// attach that was killed leaves at most one, which the next process of
/// that id replaces.
struct Marker {
    file: PathBuf,
}

impl Marker {
    fn new(paths: &Paths) -> anyhow::Result<Marker> {
        let dir = paths.run_dir();
        hangar_protocol::paths::ensure_private_dir(&dir)
            .with_context(|| format!("cannot make {}", dir.display()))?;
        let file = dir.join(format!("attach-{}.connected", std::process::id()));
        Ok(Marker { file })
    }

    fn text(&self) -> String {
        self.file.to_string_lossy().into_owned()
    }

    fn exists(&self) -> bool {
        self.file.exists()
    }

    fn clear(&self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        self.clear();
    }
}
