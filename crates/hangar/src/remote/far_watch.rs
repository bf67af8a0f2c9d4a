//! The daemon's watch of other hosts' agents (issue 47): while `hangar
//! daemon` runs, one thread per `[hosts.NAME]` holds a connection to that
//! host's daemon over the shared ssh link (`conn::ssh`, the link every
//! `--host` command uses) and asks it for its list every
//! [`POLL`]; the daemon (`activity::far`) tells the person of each change
//! worth telling, once.
//!
//! A host never holds anything up: each is its own thread, a question is
//! bounded by the host's answer bound, and a host that is down is tried
//! again after a pause that grows to [`RETRY_MAX`]. Off with
//! `[notify] far_hosts = false` (read again on each round). The hosts are
//! the ones config.toml names when the daemon starts.

use std::time::Duration;

use hangar_core::hosts as rules;
use hangar_daemon::activity::far::{self, FarNotifier, FarRow};
use hangar_protocol::paths::Paths;

use crate::api;
use crate::conn::{self, Client};
use crate::remote::{self, Host};

/// How often a reached host is asked: a change is told within this of the
/// far daemon committing it.
pub const POLL: Duration = Duration::from_secs(2);

/// The longest pause between two tries of a host that is down.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// Start one watching thread per configured host; none when there are
/// none. A config.toml that cannot be read starts none (the daemon has
/// already said why, or will on its next reload).
pub fn start(paths: &Paths, notifier: FarNotifier) {
    let hosts = match remote::configured(paths) {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!("other hosts are not watched: {e:#}");
            return;
        }
    };
    for (name, config) in hosts {
        let host = Host { name, config };
        let notifier = notifier.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("far-watch-{}", host.name))
            .spawn(move || watch(host, notifier));
        if let Err(e) = spawned {
            tracing::warn!("cannot start watching a host: {e}");
        }
    }
}

/// One host, for the life of the daemon.
fn watch(host: Host, notifier: FarNotifier) {
    let bound = rules::answer_bound(Some(&host.config));
    let mut client: Option<Client> = None;
    let mut retry = POLL;
    let mut reached = false;
    // Ends with the daemon (its link let go with it).
    while !notifier.ended() {
        if !notifier.enabled() {
            // Off: the link is let go, and looked at again next round.
            client = None;
            std::thread::sleep(POLL);
            continue;
        }
        let asked = match client.as_mut() {
            Some(c) => api::list(c),
            None => conn::ssh::connect(&host).and_then(|mut c| {
                // A daemon that stops answering mid-question costs this
                // host's thread its bound, then a new connection.
                c.set_read_timeout(Some(bound))?;
                let rows = api::list(&mut c);
                client = Some(c);
                rows
            }),
        };
        match asked {
            Ok(rows) => {
                if !reached {
                    // Said once a host is watched: its next change is told.
                    tracing::info!("host {:?} watched: {} session(s)", host.name, rows.len());
                    reached = true;
                } else if retry > POLL {
                    tracing::info!("host {:?} answers again", host.name);
                }
                retry = POLL;
                let rows: Vec<FarRow> = rows
                    .into_iter()
                    .map(|r| FarRow {
                        activity: far::activity_named(&r.activity),
                        id: r.id,
                        title: r.title,
                    })
                    .collect();
                notifier.answered(&host.name, &rows);
                std::thread::sleep(POLL);
            }
            Err(e) => {
                client = None;
                if retry == POLL {
                    // ssh's and the far side's words, escaped for whoever
                    // reads the log on a terminal.
                    tracing::info!(
                        "host {:?} is not watched while down: {}",
                        host.name,
                        hangar_core::display::body(&format!("{e:#}"))
                    );
                }
                std::thread::sleep(retry);
                retry = (retry * 2).min(RETRY_MAX);
            }
        }
    }
}
