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

use crate::sessions::RestoreOutcome;
use crate::spawn::Spawner;
use crate::spawn::start_slot::StartSlot;

impl Spawner {
    /// A start's restore, from its first look: mark the panes it forks
    /// (`hangar_core::restore_plan::first_forks`) as awaiting their slot and
    /// count them; returns them, in order. How many stay hibernated is
    /// known once the rest is loaded ([`Spawner::count_hibernated`]).
    pub fn adopt_first_forks(&self, forks: Vec<SessionId>) -> Vec<SessionId> {
        self.sessions.adopt_first_forks(forks)
    }

    /// Once the whole model is loaded: every owned session the start's
    /// restore does not fork stays hibernated. In a pruned workspace every
    /// session is owned, so that is the sessions less the forks. Counted in
    /// the restore report and journaled (`restore-hibernated`: the start's
    /// `restore-start` was written before the count could be known).
    pub fn count_hibernated(&self, forks: &[SessionId]) {
        let hibernated = self.sessions.count_hibernated(forks);
        self.journal
            .record(crate::journal::Event::RestoreHibernated { hibernated });
    }

    /// Spawn `ids` with at most `restore.concurrency` of them booting at a
    /// time (forked, no first output yet: `start_slot.rs`; their settles
    /// overlap) and record the outcome in the restore report.
    pub async fn restore_spawn(self: &Arc<Self>, ids: Vec<SessionId>) {
        let started = Instant::now();
        // Not known yet at a start, whose first look reads the panes only.
        let hibernated = self.sessions.restore_hibernated();
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
                let outcome = match &outcome {
                    Ok(state) => RestoreOutcome::Ended(state),
                    Err(e) => RestoreOutcome::Refused(e),
                };
                daemon.sessions.restore_outcome(&id, outcome);
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        let progress = self.sessions.finish_restore(started);
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
