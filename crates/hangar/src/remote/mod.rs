//! `--host NAME`: every command against another machine's daemon, over
//! OpenSSH.
//!
//! The link is `ssh -T ... hangar bridge` with its stdin and stdout on one
//! end of a socketpair; the client holds the other end, so to every caller
//! (a command, attach, the TUI) the remote daemon is a Unix stream like the
//! local one, carrying the same versioned frames. The few commands that read
//! the remote home's files rather than the socket (`journal`, `capture`,
//! `shutdown`), or name that machine's folders (`new`, `tab new`), run the
//! remote `hangar` itself over the same ssh, so their output is exactly what
//! that machine prints.
//!
//! Which daemon a process talks to is chosen once, before any connection,
//! by [`select`]; the TUI's host switcher changes it between two views.

pub mod bridge;
pub mod hosts_command;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use hangar_core::hosts::{self as rules, HostConfig};
use hangar_protocol::message::{Hello, PROTOCOL_VERSION, Request, Welcome, codes};
use hangar_protocol::paths::Paths;

use crate::client::{Client, DaemonError};

/// A configured host, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub config: HostConfig,
}

static TARGET: RwLock<Option<Arc<Host>>> = RwLock::new(None);

/// Point every later connection of this process at `host` (None: the local
/// daemon).
pub fn select(host: Option<Host>) {
    let mut target = TARGET.write().unwrap_or_else(|e| e.into_inner());
    *target = host.map(Arc::new);
}

/// The host connections go to, None for the local daemon.
pub fn current() -> Option<Arc<Host>> {
    TARGET.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Every `[hosts.NAME]` of this machine's config.toml, checked.
pub fn configured(paths: &Paths) -> anyhow::Result<BTreeMap<String, HostConfig>> {
    let config = hangar_daemon::config::Config::load(&paths.config())?;
    Ok(config.hosts)
}

/// The host called `name` in config.toml, or an error listing the ones
/// there are.
pub fn resolve(paths: &Paths, name: &str) -> anyhow::Result<Host> {
    let mut hosts = configured(paths)?;
    match hosts.remove(name) {
        Some(config) => Ok(Host {
            name: name.to_owned(),
            config,
        }),
        None => {
            let known: Vec<&String> = hosts.keys().collect();
            if known.is_empty() {
                bail!(
                    "no host named {name:?}: {} has no [hosts.NAME] section; add one with `ssh = \"user@machine\"`",
                    paths.config().display()
                )
            }
            bail!(
                "no host named {name:?} in {}; configured: {}",
                paths.config().display(),
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

/// How `ssh` reaches `host`, for messages.
pub fn describe(host: &Host) -> String {
    match host.config.port {
        Some(port) => format!("ssh {} -p {port}", host.config.ssh),
        None => format!("ssh {}", host.config.ssh),
    }
}

fn ssh_command(host: &Host, args: &[String]) -> Command {
    let home = std::env::var("HOME").ok();
    let mut cmd = Command::new("ssh");
    cmd.args(rules::ssh_args(&host.config, home.as_deref(), args));
    cmd
}

/// The running `ssh` of one connection and what it said on stderr.
pub struct Link {
    child: Option<Child>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// The most of ssh's stderr kept for an error message.
const STDERR_KEPT: usize = 16 * 1024;

impl Link {
    /// What ssh printed, once it has exited (waiting up to `wait`), and its
    /// exit code.
    fn failure(&mut self, wait: Duration) -> (String, Option<i32>) {
        let deadline = Instant::now() + wait;
        let mut code = None;
        if let Some(child) = &mut self.child {
            loop {
                match child.try_wait() {
                    Ok(Some(status)) => {
                        code = status.code();
                        break;
                    }
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => break,
                }
            }
        }
        // The reader thread may still be copying ssh's last words.
        std::thread::sleep(Duration::from_millis(20));
        let text = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        (
            rules::ssh_failure_text(&String::from_utf8_lossy(&text)),
            code,
        )
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The socket is closed first (it is declared before the link), so
        // ssh sees the end of its input and exits; reap it off this thread.
        if let Some(mut child) = self.child.take() {
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = child.kill();
                let _ = child.wait();
            });
        }
    }
}

/// Start `ssh ... hangar bridge` with its stdio on a socketpair and return
/// our end.
fn open_link(host: &Host) -> anyhow::Result<(UnixStream, Link)> {
    let (ours, theirs) = UnixStream::pair().context("cannot make a socketpair for ssh")?;
    let theirs_out = theirs.try_clone()?;
    let mut cmd = ssh_command(host, &["bridge".to_owned()]);
    cmd.stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .context("cannot run `ssh`: install OpenSSH's client (the `ssh` on PATH is used)")?;
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = child.stderr.take() {
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                if let Ok(mut k) = kept.lock() {
                    let room = STDERR_KEPT.saturating_sub(k.len());
                    k.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        });
    }
    Ok((
        ours,
        Link {
            child: Some(child),
            stderr,
        },
    ))
}

/// Connect to `host`'s daemon over ssh and greet it. The remote bridge
/// starts that daemon when none runs.
pub fn connect(host: &Host) -> anyhow::Result<Client> {
    let (stream, link) = open_link(host)?;
    let timeout = Duration::from_secs(
        host.config
            .connect_timeout_secs
            .unwrap_or(rules::DEFAULT_CONNECT_TIMEOUT_SECS),
    ) + Duration::from_secs(20);
    // Bounded: a host that accepts the TCP connection and then says
    // nothing must not hang a command (or a TUI's background connect).
    stream.set_read_timeout(Some(timeout))?;
    let mut client = Client::over_link(stream, link);
    let hello = client.request(Request::Hello(Hello {
        protocol_version: PROTOCOL_VERSION,
        client: format!("hangar-cli {} (remote)", env!("CARGO_PKG_VERSION")),
    }));
    let welcome = match hello {
        Ok(v) => v,
        Err(e) => return Err(handshake_error(host, &mut client, e)),
    };
    if let Ok(w) = serde_json::from_value::<Welcome>(welcome)
        && w.protocol_version != PROTOCOL_VERSION
    {
        bail!(version_message(host, w.protocol_version));
    }
    client.set_read_timeout(None)?;
    Ok(client)
}

fn version_message(host: &Host, theirs: u32) -> String {
    format!(
        "host {:?} runs a hangar of protocol version {theirs}, this hangar speaks protocol version {PROTOCOL_VERSION}: install the same hangar release on both machines",
        host.name
    )
}

/// Turn a failed handshake into a message a person can act on: what ssh
/// said, what the remote command said, or the version both sides speak.
fn handshake_error(host: &Host, client: &mut Client, e: anyhow::Error) -> anyhow::Error {
    if let Some(d) = e.downcast_ref::<DaemonError>() {
        if d.0.code == codes::VERSION {
            let theirs = rules::version_in_refusal(&d.0.message);
            return match theirs {
                Some(v) => anyhow!(version_message(host, v)),
                None => anyhow!(
                    "host {:?} refused this hangar's protocol version {PROTOCOL_VERSION}: {}",
                    host.name,
                    d.0.message
                ),
            };
        }
        return anyhow!("host {:?}: {}", host.name, d.0.message);
    }
    let timed_out = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        })
    });
    let (said, code) = client.link_failure(Duration::from_secs(3));
    let how = describe(host);
    if timed_out {
        return anyhow!(
            "host {:?} ({how}) did not answer in time{}",
            host.name,
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        );
    }
    match code {
        // 255 is ssh's own failure: it could not connect or log in.
        Some(255) => anyhow!(
            "cannot reach host {:?} ({how}): {}",
            host.name,
            if said.is_empty() {
                "ssh failed".to_owned()
            } else {
                said
            }
        ),
        Some(127) => anyhow!(
            "host {:?} ({how}) has no `{}` to run: {said}; set `hangar` in [hosts.{}] to the remote binary's path",
            host.name,
            host.config.hangar.as_deref().unwrap_or("hangar"),
            host.name
        ),
        _ => anyhow!(
            "host {:?} ({how}) closed the connection{}",
            host.name,
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ),
    }
}

impl Client {
    /// What the ssh under this connection said before it ended, if it did.
    pub(crate) fn link_failure(&mut self, wait: Duration) -> (String, Option<i32>) {
        match self.link_mut() {
            Some(link) => link.failure(wait),
            None => (String::new(), None),
        }
    }
}

/// Where this command runs. Without a host, here (None). With one, the
/// host is selected for every connection, except for the commands that read
/// the far home's files, which run the remote `hangar` itself (their exit
/// code is returned). The daemon, the bridge and the agents' callbacks
/// always run here: an agent inherits `HANGAR_HOST` from whoever started
/// its daemon, and its hooks belong to this machine.
pub fn route(
    paths: &Paths,
    host: Option<&str>,
    command: Option<&crate::cli::Command>,
) -> anyhow::Result<Option<ExitCode>> {
    use crate::cli::Command as C;
    let Some(name) = host.filter(|h| !h.is_empty()) else {
        return Ok(None);
    };
    if matches!(
        command,
        Some(C::Daemon | C::Bridge | C::Hook { .. } | C::Mcp { .. } | C::Hosts)
    ) {
        return Ok(None);
    }
    let host = resolve(paths, name)?;
    // Folders (`new`, `tab new`) are that machine's, relative to where its
    // shell starts, and the rest read that machine's files.
    if matches!(
        command,
        Some(
            C::Journal { .. }
                | C::Capture { .. }
                | C::Shutdown
                | C::New { .. }
                | C::Tab(crate::cli::TabCommand::New { .. })
        )
    ) {
        return exec(&host).map(Some);
    }
    select(Some(host));
    Ok(None)
}

/// Run the remote `hangar` with this command's own arguments (less
/// `--host`), its output straight through, its exit code ours.
pub fn exec(host: &Host) -> anyhow::Result<ExitCode> {
    let args = args_without_host(std::env::args().skip(1));
    let status = ssh_command(host, &args)
        .stdin(Stdio::inherit())
        .status()
        .context("cannot run `ssh`: install OpenSSH's client (the `ssh` on PATH is used)")?;
    match status.code() {
        Some(255) => bail!(
            "cannot reach host {:?} ({}): ssh failed (its message is above)",
            host.name,
            describe(host)
        ),
        Some(code) => Ok(ExitCode::from(code.clamp(0, 255) as u8)),
        None => bail!("ssh to host {:?} was killed by a signal", host.name),
    }
}

/// The arguments of this command line without `--host NAME` /
/// `--host=NAME`, to be run as they are on the host.
pub fn args_without_host(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = args.peekable();
    let mut after_separator = false;
    while let Some(a) = args.next() {
        if !after_separator && a == "--host" {
            args.next();
            continue;
        }
        if !after_separator && a.starts_with("--host=") {
            continue;
        }
        if a == "--" {
            after_separator = true;
        }
        out.push(a);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_flags_are_taken_out_and_everything_else_kept() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            args_without_host(args(&["--host", "box", "journal", "--json"]).into_iter()),
            args(&["journal", "--json"])
        );
        assert_eq!(
            args_without_host(args(&["--host=box", "capture", "x"]).into_iter()),
            args(&["capture", "x"])
        );
        assert_eq!(
            args_without_host(args(&["send", "x", "--", "--host"]).into_iter()),
            args(&["send", "x", "--", "--host"])
        );
    }
}
