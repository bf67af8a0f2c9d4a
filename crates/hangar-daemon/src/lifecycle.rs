//! What happened to a session's process, announced by the spawner (issue
//! 43): started, woke, stopping, hibernated, exited, failed. Subsystems
//! that follow a session's life (identity's and activity's watchers, the
//! handoff prompt's delivery) listen here, so the spawner imports none of
//! them.
//!
//! A small typed bus with listeners called in order, inline: a watcher
//! must start before the announcing code goes on (an agent's first record
//! may come at once), exactly as when the spawner called it. A listener
//! never blocks; work that waits is spawned. A leaf: it imports only the
//! PTY's types.

use std::sync::{Arc, RwLock};

use hangar_core::SessionId;

use crate::pty::LiveProcess;

/// One thing that happened to a session's process.
#[derive(Clone)]
pub enum LifecycleEvent {
    /// Its process started; `spawned_ms` is the wall clock just before.
    Started {
        session: SessionId,
        live: Arc<LiveProcess>,
        spawned_ms: u64,
    },
    /// A wake made it live.
    Woke { session: SessionId },
    /// Its process is about to be stopped (a hibernate): the last look.
    Stopping {
        session: SessionId,
        live: Arc<LiveProcess>,
    },
    /// It was hibernated: its process ended, its screen kept.
    Hibernated { session: SessionId },
    /// Its process ended on its own.
    Exited { session: SessionId, code: i32 },
    /// A start failed (its reason is the session's run state).
    Failed { session: SessionId },
}

type Listener = Box<dyn Fn(&LifecycleEvent) + Send + Sync>;

/// The bus.
#[derive(Default)]
pub struct Lifecycle {
    listeners: RwLock<Vec<Listener>>,
}

impl Lifecycle {
    /// Call `listener` with every event announced from now on.
    pub fn listen(&self, listener: impl Fn(&LifecycleEvent) + Send + Sync + 'static) {
        self.listeners
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(Box::new(listener));
    }

    /// Tell every listener, in the order they listened.
    pub fn announce(&self, event: LifecycleEvent) {
        let listeners = self
            .listeners
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for listener in listeners.iter() {
            listener(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_listener_hears_each_event_in_the_order_it_listened() {
        let bus = Lifecycle::default();
        let heard = Arc::new(Mutex::new(Vec::new()));
        for name in ["first", "second"] {
            let heard = heard.clone();
            bus.listen(move |e| {
                if let LifecycleEvent::Exited { session, code } = e {
                    heard
                        .lock()
                        .unwrap()
                        .push(format!("{name} {session} {code}"));
                }
            });
        }
        bus.announce(LifecycleEvent::Woke {
            session: SessionId::from("a"),
        });
        bus.announce(LifecycleEvent::Exited {
            session: SessionId::from("a"),
            code: 3,
        });
        assert_eq!(*heard.lock().unwrap(), ["first a 3", "second a 3"]);
    }
}
