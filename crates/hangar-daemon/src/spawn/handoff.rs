//! A fork into another CLI starts with its handoff prompt (issue 30): typed
//! once the new agent runs, whichever wake starts it (the fork itself, or a
//! parked fork's first wake, or a restore).
//!
//! At most once: the prompt is taken out of the session's record and saved
//! before it is typed, so a restart never types it a second time.

use std::sync::Arc;

use hangar_core::SessionId;

use super::Spawner;

impl Spawner {
    /// Type `id`'s pending handoff prompt, if it has one, off the caller's
    /// path (the wake's answer does not wait for the agent's turn).
    pub(super) fn deliver_pending_handoff(self: &Arc<Self>, id: &SessionId) {
        let text = match self.sessions.take_pending_prompt(id) {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(e) => {
                // Kept in the record: the next wake tries again.
                tracing::warn!(session = %id, "cannot record the handoff prompt as sent: {}", e.message);
                return;
            }
        };
        let delivery = self.delivery.clone();
        let id = id.clone();
        tokio::spawn(async move {
            if let Err(e) = delivery.send(&id, &text, true).await {
                tracing::warn!(session = %id, "the handoff prompt was not delivered: {}", e.message);
            }
        });
    }
}
