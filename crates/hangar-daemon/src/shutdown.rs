//! The daemon's shutdown, as a small handle every long-running task holds:
//! it waits on it to end, and the shutdown marks it once every session's
//! process is stopped and the workspace saved.

use std::sync::Arc;

use tokio::sync::watch;

/// Whether the daemon has finished shutting down; cheap to clone.
#[derive(Clone)]
pub struct Shutdown {
    done: Arc<watch::Sender<bool>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        let (done, _) = watch::channel(false);
        Shutdown {
            done: Arc::new(done),
        }
    }
}

impl Shutdown {
    /// A receiver that sees `true` once the shutdown is finished.
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.done.subscribe()
    }

    /// The shutdown is finished: every waiter lets go.
    pub fn finish(&self) {
        self.done.send_replace(true);
    }
}
