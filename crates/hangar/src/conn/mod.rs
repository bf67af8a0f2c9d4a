//! The connection layer: the client side of the control socket, blocking
//! (`client`: connect, starting the daemon in the background when none
//! answers; greet; send a request; read its reply), the same on tokio for
//! the web server (`tokio_link`), and the remote transport over ssh (`ssh`,
//! one link per host shared by every connection in `mux`, its running
//! process in `link`), to every caller a connection like the
//! local one.
//!
//! Nothing here knows a front-end: which daemon to talk to arrives as a
//! [`Target`], decided once in `cli.rs`.

pub mod client;
pub mod link;
pub mod mux;
pub mod ssh;
pub mod tokio_link;

use std::os::unix::net::UnixStream;
use std::sync::Arc;

use anyhow::Context;
use hangar_protocol::paths::Paths;

pub use client::{Client, DaemonError, Incoming};
pub use ssh::Host;

/// Which daemon a command talks to: this machine's (the home in `paths`),
/// or with `--host` another machine's over ssh. Decided once, in `cli.rs`,
/// and passed down; the TUI's host switcher makes one per view.
#[derive(Clone, Debug)]
pub struct Target {
    /// This machine's home (its config names the hosts; the local daemon
    /// lives there).
    pub paths: Paths,
    /// The host connections go to, None for the local daemon.
    pub host: Option<Arc<Host>>,
}

impl Target {
    /// This machine's daemon.
    pub fn local(paths: Paths) -> Target {
        Target { paths, host: None }
    }

    /// The same home, connections going to `host` (None: this machine).
    pub fn with_host(&self, host: Option<Host>) -> Target {
        Target {
            paths: self.paths.clone(),
            host: host.map(Arc::new),
        }
    }

    /// Connect to a running daemon, without starting one. With a host,
    /// its daemon, which its bridge starts when none runs there.
    pub fn connect_existing(&self) -> anyhow::Result<Option<Client>> {
        match &self.host {
            Some(host) => ssh::connect(host).map(Some),
            None => Client::connect_existing_local(&self.paths),
        }
    }

    /// Connect, starting the daemon in the background if none answers
    /// (with a host, on that host).
    pub fn connect(&self) -> anyhow::Result<Client> {
        match &self.host {
            Some(host) => ssh::connect(host),
            None => Client::connect_local(&self.paths),
        }
    }
}

/// A plain stream to this machine's daemon socket, not greeted (`hangar
/// bridge` relays it for a far client, which greets it itself).
pub fn local_stream(paths: &Paths) -> anyhow::Result<UnixStream> {
    let socket = paths.socket();
    UnixStream::connect(&socket).with_context(|| format!("cannot connect to {}", socket.display()))
}

/// Two connected Unix streams, for a test that plays the daemon on one.
#[cfg(test)]
pub fn stream_pair() -> (UnixStream, UnixStream) {
    UnixStream::pair().expect("a socket pair")
}
