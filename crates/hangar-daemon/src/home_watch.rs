//! Noticing that `HANGAR_HOME` was deleted (or its store replaced) under a
//! running daemon, and putting it back.
//!
//! An `rm -rf` of the home leaves the daemon writing to a store file that no
//! longer has a name (every later save would vanish with the process) and
//! listening on a socket nobody can reach; the next `hangar` command would
//! then auto-start a second daemon on an empty workspace. So whenever the
//! folder watch (`file_watch`) reports a change in the home or `run/`, the
//! daemon checks that its store file is still the one it opened and its
//! socket still exists; when not, it re-creates the folders, takes the
//! home lock again, writes its whole workspace (and the saved screens) to a
//! new store, records its live processes there, and listens on a new
//! socket. The person is told in `hangar status`.

use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::Duration;

use crate::os::Os;
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;
use crate::{Paths, paths};

/// How often the home is checked when it cannot be watched or could not be
/// re-created. Short, because a command run in the gap would start a second
/// daemon.
const CHECK_EVERY: Duration = Duration::from_millis(500);
/// How long the home must be quiet after a change before it is checked.
const SETTLE: Duration = Duration::from_millis(100);

/// What identifies a file: its device and inode.
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The watch over the home: what it checks and what it writes again.
pub struct HomeWatch {
    pub paths: Paths,
    pub sessions: Arc<Sessions>,
    /// The start times of live processes, recorded in a new store.
    pub os: Arc<dyn Os>,
    pub shutdown: Shutdown,
    /// The daemon's folder watcher: a change in the home or `run/` wakes it.
    pub files: Arc<crate::file_watch::FileWatcher>,
}

impl HomeWatch {
    /// Watch the home until shutdown, restoring it when it disappears;
    /// `serve` is given each new listener.
    pub async fn watch_home(
        self: Arc<Self>,
        serve: impl Fn(tokio::net::UnixListener) + Send + 'static,
    ) {
        let mut opened = identity(&self.paths.store());
        let mut shutdown = self.shutdown.watch();
        // The home holds the store, `run/` the socket: a deletion, a rename
        // over the store or of the folders is reported by the folder watch
        // (which follows a deleted folder up to its parent and back).
        let mut files = self.files.subscribe();
        files.watch(vec![self.paths.home.clone(), self.paths.run_dir()]);
        let mut failing = false;
        loop {
            // Only a home that could not be re-created is tried again on a
            // timer: nothing may change in it to wake us.
            let retry = async {
                match failing {
                    true => tokio::time::sleep(CHECK_EVERY).await,
                    false => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = files.changed(CHECK_EVERY) => {}
                _ = retry => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            // An `rm -rf` is many events: act once it is over, not between
            // two of them (a socket bound mid-way would make its rmdir fail).
            while tokio::time::timeout(SETTLE, files.changed(CHECK_EVERY))
                .await
                .is_ok()
            {}
            let store_ok = opened.is_some() && identity(&self.paths.store()) == opened;
            if store_ok && self.paths.socket().exists() {
                continue;
            }
            match self.restore_home(store_ok) {
                Ok(listener) => {
                    failing = false;
                    opened = identity(&self.paths.store());
                    serve(listener);
                }
                Err(e) => {
                    failing = true;
                    // Tried again at the next check; said once per cause.
                    let msg = format!(
                        "the home {} was deleted or replaced and could not be re-created: {e:#}",
                        self.paths.home.display()
                    );
                    if self.sessions.notice_once(msg.clone()) {
                        tracing::error!("{msg}");
                    }
                }
            }
        }
    }

    /// Re-create the home's folders, lock, store and socket from the
    /// daemon's memory; returns the new listener.
    fn restore_home(&self, store_ok: bool) -> anyhow::Result<tokio::net::UnixListener> {
        use anyhow::Context;
        paths::ensure_private_dir(&self.paths.home)
            .with_context(|| format!("cannot create {}", self.paths.home.display()))?;
        paths::ensure_private_dir(&self.paths.run_dir())
            .with_context(|| format!("cannot create {}", self.paths.run_dir().display()))?;
        let ours = std::fs::read_to_string(self.paths.lock())
            .is_ok_and(|t| t.trim() == std::process::id().to_string());
        if !ours {
            // Held for the rest of the daemon's life, like the first one.
            std::mem::forget(crate::take_home_lock(&self.paths)?);
        }
        if !store_ok {
            let os = self.os.clone();
            self.sessions.rewrite_store(
                &self.paths.store(),
                &self.paths.home,
                os.now_ms(),
                |pid| os.start_time(pid),
            )?;
        }
        let socket = self.paths.socket();
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        }
        if store_ok {
            tracing::warn!(
                "the socket {} was deleted; listening again",
                socket.display()
            );
        }
        Ok(listener)
    }
}
