//! Stopping a session's process: the whole process group, gracefully then
//! by force, what it left outside its group, and hibernating a session with
//! its last screen kept. Also the exit watcher of a process that ends on its
//! own.

use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;

use super::Spawner;
use crate::errors::ApiError;
use crate::journal::Event;
use crate::lifecycle::LifecycleEvent;
use crate::pty::LiveProcess;

/// How long a process group gets between SIGTERM and SIGKILL.
///
/// Longer than Claude Code's own shutdown: on SIGTERM it drains its pending
/// writes (the transcript among them) and runs its SessionEnd hooks, and
/// only forces its exit after max(5 s, hook timeout + 3.5 s) (read in the
/// shipped 2.1.197). With 3 s, a hibernate right after an answer on a busy
/// machine killed it mid-flush and the next wake found "No conversation".
/// Only a process that does not exit by itself waits this long.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(6);

impl Spawner {
    /// When the process exits on its own, mark the session `exited` and keep
    /// its last screen.
    pub(super) fn watch_exit(self: &Arc<Self>, id: SessionId, live: Arc<LiveProcess>) {
        let daemon = self.clone();
        tokio::spawn(async move {
            let mut exit = live.exit_watch();
            let code = match exit.wait_for(|e| e.is_some()).await {
                Ok(code) => code.unwrap_or(-1),
                Err(_) => return,
            };
            // Stragglers of the group (children that outlived the leader).
            live.signal(libc::SIGKILL);
            daemon.end_strays(id.as_str(), &live).await;
            let screen = live.formatted();
            let exited =
                daemon
                    .sessions
                    .process_exited(&id, &live, &screen, code, daemon.os.now_ms());
            if exited {
                daemon.journal.record(Event::Exited {
                    session: id.to_string(),
                    code,
                });
                daemon
                    .lifecycle
                    .announce(LifecycleEvent::Exited { session: id, code });
            }
        });
    }

    /// End a process group: SIGTERM, then SIGKILL after a grace period.
    /// Returns once the leader has been reaped.
    pub async fn stop_process(&self, live: &Arc<LiveProcess>) {
        // Read while the leader runs: what it left outside its group is
        // found by the session id it was given.
        let session = crate::strays::session_of(self.os.as_ref(), live.pid);
        let mut exit = live.exit_watch();
        // Not before its transcript holds the turn it last answered: a
        // claude stopped between drawing an answer and writing it lost the
        // conversation (hangar_core::stop_gate).
        if let Some(id) = &session
            && live.exited().is_none()
        {
            let id = SessionId::from(id.as_str());
            tokio::select! {
                _ = self.monitor.until_transcript_saved(&id) => {}
                _ = exit.wait_for(|e| e.is_some()) => {}
            }
        }
        if live.exited().is_none() {
            live.signal(libc::SIGTERM);
            live.signal(libc::SIGHUP);
            // A group stopped with SIGSTOP would only see those after the
            // grace period's SIGKILL: let it run, so it can exit cleanly now.
            live.signal(libc::SIGCONT);
            let graceful = tokio::time::timeout(STOP_GRACE, exit.wait_for(|e| e.is_some()))
                .await
                .is_ok();
            if !graceful {
                live.signal(libc::SIGKILL);
                let _ = tokio::time::timeout(STOP_GRACE, exit.wait_for(|e| e.is_some())).await;
            }
        }
        live.signal(libc::SIGKILL);
        if let Some(session) = session {
            self.end_strays(&session, live).await;
        }
    }

    /// End what session `session`'s process `stopped` started outside its
    /// process group (codex's shared app-server), sparing a newer process
    /// of the same session.
    async fn end_strays(&self, session: &str, stopped: &Arc<LiveProcess>) {
        let spare = self
            .sessions
            .process(&SessionId::from(session))
            .filter(|p| !Arc::ptr_eq(p, stopped))
            .map(|p| p.pgid());
        crate::strays::end(self.os.as_ref(), session, &self.paths.home, spare).await;
    }

    /// Stop a session's process (if any) and mark it hibernated, keeping its
    /// last screen.
    pub async fn hibernate_session(self: &Arc<Self>, id: &SessionId) -> Result<(), ApiError> {
        // Wait out a spawn in progress so we stop the process it makes.
        loop {
            let spawning = self.sessions.spawning_watch(id)?;
            let Some(mut rx) = spawning else { break };
            let _ = rx.changed().await;
        }
        let live = self.sessions.take_process(id);
        if let Some(live) = live {
            let screen = live.formatted();
            self.lifecycle.announce(LifecycleEvent::Stopping {
                session: id.clone(),
                live: live.clone(),
            });
            self.stop_process(&live).await;
            self.sessions
                .keep_stopped_screen(id, &screen, self.os.now_ms());
        }
        // What its place keeps stops (a container, kept with its volume)
        // even when its agent had already exited.
        if let Some(meta) = self.sessions.meta(id) {
            self.places.of(&meta).stop(&meta).await;
        }
        self.lifecycle.announce(LifecycleEvent::Hibernated {
            session: id.clone(),
        });
        Ok(())
    }
}
