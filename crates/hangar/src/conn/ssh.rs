//! The remote transport: a connection to another machine's daemon over
//! OpenSSH, and the remote `hangar` run over the same ssh.
//!
//! The link is `ssh -T ... hangar bridge --mux`, one per host for the whole
//! process (`mux`); each connection is a channel on it, and to every caller
//! (a command, attach, the TUI) a Unix stream like the local one, carrying
//! the same versioned frames. An attach in a terminal is not a connection
//! but `ssh -t` running the remote `hangar attach` (`attach_command`).

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use hangar_core::hosts as rules;
use hangar_protocol::message::{Hello, PROTOCOL_VERSION, Request, Welcome, codes};

use super::client::{Client, DaemonError};
use super::link::ssh_command;
use super::mux;

pub use super::link::{Host, attach_command};

/// How `ssh` reaches `host`, for messages.
pub fn describe(host: &Host) -> String {
    match host.config.port {
        Some(port) => format!("ssh {} -p {port}", host.config.ssh),
        None => format!("ssh {}", host.config.ssh),
    }
}

/// Connect to `host`'s daemon over ssh and greet it: a channel on this
/// process's one link to the host (`mux`). The remote bridge starts that
/// daemon when none runs.
pub fn connect(host: &Host) -> anyhow::Result<Client> {
    let (stream, link, channel) = mux::connect(host)?;
    let timeout = Duration::from_secs(
        host.config
            .connect_timeout_secs
            .unwrap_or(rules::DEFAULT_CONNECT_TIMEOUT_SECS),
    ) + Duration::from_secs(20);
    // Bounded: a host that accepts the TCP connection and then says
    // nothing must not hang a command (or a TUI's background connect).
    stream.set_read_timeout(Some(timeout))?;
    let mut client = Client::over_link(stream, link, channel);
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
    // A remote hangar from before the shared link has no `bridge --mux`.
    if said.contains("--mux") {
        return anyhow!(
            "host {:?} ({how}) runs an older hangar (its `hangar bridge` has no --mux): install the same hangar release on both machines",
            host.name
        );
    }
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
        match self.link() {
            Some((link, channel)) => link.failure(channel, wait),
            None => (String::new(), None),
        }
    }
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
