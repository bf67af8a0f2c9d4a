//! Requests about the whole fleet: resume the wake queue after its breaker
//! opened. Evict and close-idle are `eviction.rs`'s (the governor evicts
//! too), called by `dispatch` directly.

use serde_json::{Value, json};

use crate::Daemon;
use crate::journal::Event;

/// `hangar wake --resume-queue`: close the breaker a run of authentication
/// failures opened.
pub fn resume_queue(daemon: &Daemon) -> Value {
    let was_open = daemon.queue.resume();
    if was_open {
        daemon.journal.record(Event::BreakerReset);
    }
    json!({"breaker": "closed", "was_open": was_open})
}
