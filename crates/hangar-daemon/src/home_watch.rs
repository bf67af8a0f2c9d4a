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

use hangar_store::Store;

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
                    self.sessions.edit(|st| {
                        if !st.notices.contains(&msg) {
                            tracing::error!("{msg}");
                            st.notices.push(msg);
                        }
                    })
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
        self.sessions.edit(|st| {
            if !store_ok {
                self.rewrite_store(st)?;
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
        })
    }

    /// Write the whole workspace, the saved screens and the live processes
    /// to a new store file at the store's path, and use it from now on.
    fn rewrite_store(&self, st: &mut crate::sessions::State) -> anyhow::Result<()> {
        use anyhow::Context;
        let screens = st
            .store
            .screens()
            .context("cannot read the saved screens from the old store")?;
        let store_path = self.paths.store();
        let store_replaced = store_path.exists();
        if store_replaced {
            // Someone put another file there: keep it, never overwrite it.
            let aside = store_path.with_extension(format!("db.replaced-{}", crate::now_ms()));
            std::fs::rename(&store_path, &aside)
                .with_context(|| format!("cannot move {} aside", store_path.display()))?;
        }
        let fresh = Store::open(&store_path)
            .with_context(|| format!("cannot create the store {}", store_path.display()))?;
        let mut store = fresh.store;
        store
            .save_with_screens(&st.ws, &[], &screens)
            .context("cannot write the workspace to the new store")?;
        for (id, rt) in &st.runtimes {
            if let Some(p) = &rt.proc {
                let start = self.os.start_time(p.pid).unwrap_or(0);
                if let Err(e) = store.record_process(id, p.pid, p.pgid(), start) {
                    tracing::warn!("could not record pid of {id} in the new store: {e}");
                }
            }
        }
        st.store = store;
        let msg = format!(
            "{} was {} while the daemon ran; it was re-created and the workspace ({} sessions) written again",
            self.paths.home.display(),
            if store_replaced {
                "replaced"
            } else {
                "deleted"
            },
            st.ws.sessions.len()
        );
        tracing::warn!("{msg}");
        st.notices.push(msg);
        Ok(())
    }
}
