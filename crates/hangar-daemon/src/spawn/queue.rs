//! The wake queue: at most K spawns at once, a minimum gap between starts,
//! people ahead of background work, and a circuit breaker that pauses
//! everything after consecutive authentication failures.
//!
//! Simultaneous agent boots race single-use OAuth refresh tokens and can fail
//! a whole fleet with 401s; the queue makes sure a mass wake trickles in, and
//! stops it when starts begin failing like expired logins. The admission
//! rules are `hangar_core::governor::QueueState`; this is only the waiting.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hangar_core::governor::{Admission, QueueLimits, QueueState, WakePriority};
use tokio::sync::Notify;

use crate::os::{Clock, RealOs};

/// How often a waiter re-checks even without a notification.
const RECHECK: Duration = Duration::from_millis(100);

struct Inner {
    state: QueueState,
    /// Tickets waiting, in admission order.
    waiting: BTreeSet<(WakePriority, u64)>,
    next_seq: u64,
}

pub struct WakeQueue {
    limits: QueueLimits,
    /// Spacing between starts is measured on the daemon's clock.
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner>,
    changed: Notify,
}

/// A started spawn's place in the queue; report how it ended with
/// [`WakeQueue::finish`]. Dropping it unreported counts as a plain finish.
pub struct Slot<'a> {
    queue: &'a WakeQueue,
    bypass: bool,
    done: bool,
}

/// Removes a ticket from the waiting set if its waiter goes away.
struct Ticket<'a> {
    queue: &'a WakeQueue,
    key: (WakePriority, u64),
    admitted: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.admitted {
            self.queue.inner().waiting.remove(&self.key);
            self.queue.changed.notify_waiters();
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSnapshot {
    pub pending: usize,
    pub running: usize,
    pub breaker_open: bool,
    pub consecutive_auth_failures: u32,
}

impl WakeQueue {
    pub fn new(limits: QueueLimits) -> WakeQueue {
        WakeQueue::with_clock(limits, Arc::new(RealOs))
    }

    /// A queue that reads the time from `clock` (a fake one in tests).
    pub fn with_clock(limits: QueueLimits, clock: Arc<dyn Clock>) -> WakeQueue {
        WakeQueue {
            limits,
            clock,
            inner: Mutex::new(Inner {
                state: QueueState::default(),
                waiting: BTreeSet::new(),
                next_seq: 0,
            }),
            changed: Notify::new(),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for a turn to start a spawn. A person is never left waiting
    /// behind an open breaker: their request gets `None` at once (and when
    /// the breaker opens while they wait); background wakes keep waiting
    /// until a person resumes the queue.
    pub async fn acquire(&self, priority: WakePriority) -> Option<Slot<'_>> {
        let key = {
            let mut inner = self.inner();
            inner.next_seq += 1;
            let key = (priority, inner.next_seq);
            inner.waiting.insert(key);
            key
        };
        let mut ticket = Ticket {
            queue: self,
            key,
            admitted: false,
        };
        loop {
            let wait = {
                let mut inner = self.inner();
                if priority == WakePriority::Person && inner.state.breaker_open {
                    // The ticket's drop takes it out of the waiting set.
                    return None;
                }
                let head = inner.waiting.first().copied();
                if head == Some(key) {
                    match inner.state.admit(self.limits, self.clock.now_ms()) {
                        Admission::Start => {
                            inner.waiting.remove(&key);
                            inner.state.started(self.clock.now_ms());
                            ticket.admitted = true;
                            drop(inner);
                            // The next in line may now be admitted too.
                            self.changed.notify_waiters();
                            return Some(Slot {
                                queue: self,
                                bypass: false,
                                done: false,
                            });
                        }
                        Admission::WaitUntil(t) => {
                            Duration::from_millis(t.saturating_sub(self.clock.now_ms()))
                        }
                        Admission::Blocked => RECHECK,
                    }
                } else {
                    RECHECK
                }
            };
            tokio::select! {
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(wait.min(RECHECK)) => {}
            }
        }
    }

    /// A slot for work that has its own concurrency bound (restore) and only
    /// honours the breaker: it waits while the breaker is open.
    pub async fn acquire_breaker_only(&self) -> Option<Slot<'_>> {
        loop {
            if !self.inner().state.breaker_open {
                return Some(Slot {
                    queue: self,
                    bypass: true,
                    done: false,
                });
            }
            tokio::select! {
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(RECHECK) => {}
            }
        }
    }

    /// Record how a spawn ended; returns `true` when it tripped the breaker.
    pub fn finish(&self, mut slot: Slot<'_>, auth_failure: bool) -> bool {
        slot.done = true;
        self.finish_inner(slot.bypass, auth_failure)
    }

    fn finish_inner(&self, bypass: bool, auth_failure: bool) -> bool {
        let tripped = {
            let mut inner = self.inner();
            if bypass {
                // Not counted as running, but its outcome still feeds the breaker.
                inner.state.running += 1;
            }
            inner.state.finished(self.limits, auth_failure)
        };
        self.changed.notify_waiters();
        tripped
    }

    /// A person resumed the queue after the breaker opened.
    pub fn resume(&self) -> bool {
        let was_open = {
            let mut inner = self.inner();
            let was = inner.state.breaker_open;
            inner.state.reset_breaker();
            was
        };
        self.changed.notify_waiters();
        was_open
    }

    pub fn snapshot(&self) -> QueueSnapshot {
        let inner = self.inner();
        QueueSnapshot {
            pending: inner.waiting.len(),
            running: inner.state.running,
            breaker_open: inner.state.breaker_open,
            consecutive_auth_failures: inner.state.consecutive_auth_failures,
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.queue.finish_inner(self.bypass, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::FakeOs;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn no_more_than_k_slots_are_held_at_once() {
        let q = Arc::new(WakeQueue::new(QueueLimits {
            max_running: 2,
            spacing_ms: 0,
            breaker_threshold: 3,
        }));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let (q, running, peak) = (q.clone(), running.clone(), peak.clone());
            tasks.push(tokio::spawn(async move {
                let slot = q.acquire(WakePriority::Background).await.unwrap();
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                q.finish(slot, false);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert!(peak.load(Ordering::SeqCst) <= 2);
        assert_eq!(q.snapshot().running, 0);
    }

    #[tokio::test]
    async fn an_open_breaker_holds_background_waiters_until_resumed() {
        let q = Arc::new(WakeQueue::new(QueueLimits {
            max_running: 2,
            spacing_ms: 0,
            breaker_threshold: 1,
        }));
        let slot = q.acquire(WakePriority::Person).await.unwrap();
        assert!(q.finish(slot, true));
        assert!(q.snapshot().breaker_open);
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move {
                let s = q.acquire(WakePriority::Background).await.unwrap();
                q.finish(s, false);
            })
        };
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!waiter.is_finished(), "waits while the breaker is open");
        assert_eq!(q.snapshot().pending, 1);
        assert!(q.resume());
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("drains after resume")
            .unwrap();
    }

    #[tokio::test]
    async fn a_person_is_refused_at_once_while_the_breaker_is_open_even_when_already_waiting() {
        let q = Arc::new(WakeQueue::new(QueueLimits {
            max_running: 1,
            spacing_ms: 0,
            breaker_threshold: 1,
        }));
        let failing = q.acquire(WakePriority::Person).await.unwrap();
        // Queued behind the running spawn when the breaker opens.
        let waiting = {
            let q = q.clone();
            tokio::spawn(async move { q.acquire(WakePriority::Person).await.is_none() })
        };
        while q.snapshot().pending == 0 {
            tokio::task::yield_now().await;
        }
        assert!(q.finish(failing, true));
        let refused = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a waiting person is answered when the breaker opens")
            .unwrap();
        assert!(refused);
        assert!(q.acquire(WakePriority::Person).await.is_none());
        assert_eq!(q.snapshot().pending, 0, "refused tickets leave the queue");
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_start_waits_out_the_spacing_on_the_daemons_clock() {
        let os = Arc::new(FakeOs::default());
        let q = Arc::new(WakeQueue::with_clock(
            QueueLimits {
                max_running: 4,
                spacing_ms: 30_000,
                breaker_threshold: 3,
            },
            os.clone(),
        ));
        let first = q.acquire(WakePriority::Background).await.unwrap();
        q.finish(first, false);
        let second = {
            let q = q.clone();
            tokio::spawn(async move {
                let s = q.acquire(WakePriority::Background).await.unwrap();
                q.finish(s, false);
            })
        };
        // A minute of the runtime's own time goes by (paused, so at once):
        // the daemon's clock has not moved, so the spacing still holds.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!second.is_finished(), "started before the spacing was over");
        assert_eq!(q.snapshot().pending, 1);
        os.advance(Duration::from_millis(30_000));
        tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("starts once the daemon's clock passed the spacing")
            .unwrap();
        assert_eq!(q.snapshot().pending, 0);
    }
}
