//! Restore at daemon start: spawn the live set only, with bounded
//! concurrency, and leave everything else hibernated.
//!
//! Restore cost is O(visible), not O(persisted) (DESIGN.md rule 4). A spawn
//! that fails or times out keeps its pane as `failed` and never blocks the
//! others; the model is not edited by spawning, so every loaded record stays
//! saved whatever happens here (rule 5).

use std::sync::Arc;
use std::time::Instant;

use hangar_core::SessionId;
use tokio::sync::Semaphore;

use crate::sessions::RunState;
use crate::spawn::Spawner;
use crate::spawn::start_slot::StartSlot;

impl Spawner {
    /// A start's restore, from its first look: mark the panes it forks
    /// (`hangar_core::restore_plan::first_forks`) as awaiting their slot and
    /// count them; returns them, in order. How many stay hibernated is
    /// known once the rest is loaded ([`Spawner::count_hibernated`]).
    pub fn adopt_first_forks(&self, forks: Vec<SessionId>) -> Vec<SessionId> {
        self.sessions.edit(|st| {
            // A hibernated session gets no runtime until something wakes or
            // watches it: without one it reads as hibernated, and 10,000 of
            // them would cost a map entry and a watch channel each.
            // Shown as `spawning` until its slot comes (cleared by
            // `restore_spawn` once its wake has run).
            for id in &forks {
                st.runtime(id).awaiting_restore = true;
            }
            st.restore.expected += forks.len();
            if st.restore.started.is_none() {
                st.restore.started = Some(Instant::now());
            }
            st.restore.duration_ms = None;
            forks
        })
    }

    /// Once the whole model is loaded: every owned session the start's
    /// restore does not fork stays hibernated. In a pruned workspace every
    /// session is owned, so that is the sessions less the forks. Counted in
    /// the restore report and journaled (`restore-hibernated`: the start's
    /// `restore-start` was written before the count could be known).
    pub fn count_hibernated(&self, forks: &[SessionId]) {
        let hibernated = self.sessions.edit(|st| {
            let forked = forks
                .iter()
                .filter(|id| st.ws.sessions.contains_key(*id))
                .count();
            let hibernated = st.ws.sessions.len() - forked;
            st.restore.hibernated += hibernated;
            hibernated
        });
        self.journal
            .record(crate::journal::Event::RestoreHibernated { hibernated });
    }

    /// Spawn `ids` with at most `restore.concurrency` of them booting at a
    /// time (forked, no first output yet: `start_slot.rs`; their settles
    /// overlap) and record the outcome in the restore report.
    pub async fn restore_spawn(self: &Arc<Self>, ids: Vec<SessionId>) {
        let started = Instant::now();
        // Not known yet at a start, whose first look reads the panes only.
        let hibernated = self
            .sessions
            .read(|st| st.store.is_loaded().then_some(st.restore.hibernated));
        self.journal.record(crate::journal::Event::RestoreStart {
            expected: ids.len(),
            hibernated,
        });
        let sem = Arc::new(Semaphore::new(self.restore.get().concurrency));
        let mut tasks = Vec::with_capacity(ids.len());
        for id in ids {
            let daemon = self.clone();
            let sem = sem.clone();
            tasks.push(tokio::spawn(async move {
                // Nothing closes this semaphore, so acquiring cannot fail.
                let slot = match sem.acquire_owned().await {
                    Ok(permit) => StartSlot::held(permit),
                    Err(_) => StartSlot::none(),
                };
                let outcome = daemon
                    .wake_in_slot(&id, crate::journal::Caller::Restore, slot)
                    .await;
                daemon.sessions.edit(|st| {
                    if let Some(rt) = st.runtimes.get_mut(&id) {
                        rt.awaiting_restore = false;
                    }
                    match outcome {
                        Ok(RunState::Live) => st.restore.restored += 1,
                        Ok(RunState::Failed(reason)) => {
                            tracing::warn!("restore of {id} failed: {reason}");
                            st.restore.failed += 1;
                        }
                        Ok(_) => st.restore.restored += 1,
                        Err(e) => {
                            tracing::warn!("restore of {id} failed: {}", e.message);
                            st.restore.failed += 1;
                            // A refused wake (a duplicate provider id) starts no
                            // process: the pane says why, not only the count.
                            if e.code != hangar_protocol::message::codes::SHUTTING_DOWN
                                && let Some(rt) = st.runtimes.get_mut(&id)
                            {
                                rt.set_state(RunState::Failed(e.message.clone()));
                            }
                        }
                    }
                    st.restore.finished += 1;
                });
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        let progress = self.sessions.edit(|st| {
            st.restore.duration_ms = Some(
                st.restore
                    .started
                    .map(|s| s.elapsed())
                    .unwrap_or_else(|| started.elapsed())
                    .as_millis() as u64,
            );
            st.restore.clone()
        });
        self.journal.record(crate::journal::Event::RestoreComplete {
            restored: progress.restored,
            failed: progress.failed,
            duration_ms: progress.duration_ms.unwrap_or(0),
        });
        tracing::info!(
            "restore complete: {} restored, {} failed, {} hibernated",
            progress.restored,
            progress.failed,
            progress.hibernated
        );
    }
}
