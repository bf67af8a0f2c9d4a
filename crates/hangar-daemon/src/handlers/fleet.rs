//! Requests about the whole fleet: evict stale parked records, close idle
//! agents (the governor's mechanics, in eviction.rs: its loop evicts too),
//! and resume the wake queue after its breaker opened.

use hangar_protocol::message::codes;
use hangar_protocol::reply::{ClosedIdle, Evicted, QueueResumed};
use serde_json::json;

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Event;

/// `hangar evict --parked-older-than`: remove stale parked records.
pub async fn evict(
    daemon: &Daemon,
    older_than_ms: u64,
    dry_run: bool,
) -> Result<Evicted, ApiError> {
    let done = daemon.governor.evict_parked(older_than_ms, dry_run).await?;
    Ok(Evicted {
        evicted: done.evicted,
        skipped: done.skipped,
        dry_run,
        kept_worktrees: done.kept_worktrees,
        removed_worktrees: done.removed_worktrees,
    })
}

/// `hangar close-idle`: close agents inactive for longer than
/// `older_than_ms`; without `yes`, only say what would be closed.
pub async fn close_idle(
    daemon: &Daemon,
    older_than_ms: u64,
    include_live: bool,
    yes: bool,
) -> Result<ClosedIdle, ApiError> {
    let plan = daemon.governor.idle_plan(older_than_ms, include_live);
    if !yes {
        let would: Vec<String> = plan
            .groups
            .iter()
            .flatten()
            .map(|s| s.to_string())
            .collect();
        return Err(ApiError {
            code: codes::NEEDS_CONFIRMATION,
            message: format!(
                "{} idle session(s) would be closed; pass --yes to close them",
                would.len()
            ),
            detail: json!({"would_close": would, "skipped": plan.skipped}),
        });
    }
    let done = daemon
        .governor
        .close_idle(plan, older_than_ms, include_live)
        .await?;
    Ok(ClosedIdle {
        closed: done.closed,
        skipped: done.skipped,
        kept_worktrees: done.kept_worktrees,
        removed_worktrees: done.removed_worktrees,
    })
}

/// `hangar wake --resume-queue`: close the breaker a run of authentication
/// failures opened.
pub fn resume_queue(daemon: &Daemon) -> QueueResumed {
    let was_open = daemon.queue.resume();
    if was_open {
        daemon.journal.record(Event::BreakerReset);
    }
    QueueResumed {
        breaker: "closed".to_owned(),
        was_open,
    }
}
