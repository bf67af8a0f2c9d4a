//! `--host NAME`: the hosts of this machine's config.toml, `hangar hosts`,
//! and `hangar bridge` (the far end of another machine's link).
//!
//! The link itself is a kind of connection (`conn::ssh`). Which daemon a
//! command talks to is decided once, in `cli.rs`, and passed down as a
//! `conn::Target`; the TUI's host switcher makes a new target per view. The
//! few commands that read the remote home's files rather than the socket
//! (`journal`, `capture`, `shutdown`), or name that machine's folders
//! (`new`, `tab new`), run the remote `hangar` itself over the same ssh, so
//! their output is exactly what that machine prints. An attach in a
//! terminal runs the remote `hangar attach` under `ssh -t` (`ssh_attach`),
//! so ssh owns the terminal as it does for tmux.

pub mod all_hosts;
pub mod bridge;
pub mod far_watch;
pub mod hosts_command;
pub mod ssh_attach;

use std::collections::BTreeMap;

use anyhow::bail;
use hangar_core::hosts::HostConfig;
use hangar_protocol::paths::Paths;

pub use crate::conn::ssh::Host;

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
