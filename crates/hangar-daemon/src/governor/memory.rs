//! The fleet's memory as the governor sees it: each live agent's process
//! tree read from `/proc/<pid>/smaps_rollup` through the OS seam (its
//! proportional set size, so a page many node processes share counts once
//! across the fleet, and its resident set beside it), and what the memory
//! budget's wake admission keeps: wakes admitted but not yet running, wakes
//! waiting for room, and the line each affected session shows in `ls`.
//!
//! A rollup makes the kernel walk a process's page tables, so a tree is read
//! at most once per [`READ_GAP_MS`] on the daemon's clock, and only while
//! its session is live: with no live agent nothing is read. A wake's
//! admission reads anew (wakes are paced by the wake queue): deciding on a
//! two-second-old figure would let a fleet that just grew take one more.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use hangar_core::SessionId;

use crate::os::{Os, ProcessControl, ProcessMemory};

/// Within this long of the last reading a tree's reading is used again.
pub const READ_GAP_MS: u64 = 2_000;

/// The memory of the process tree rooted at `root` (a session's agent):
/// the tree is walked down from its root through the kernel's children
/// lists and only its members are read; never a scan of every process.
pub fn tree_memory(os: &dyn ProcessControl, root: u32) -> ProcessMemory {
    os.process_tree(root)
        .into_iter()
        .filter_map(|pid| os.memory(pid))
        .sum()
}

struct Reading {
    pid: u32,
    at_ms: u64,
    memory: ProcessMemory,
}

/// Why a session shows what it shows in `ls` because of the memory budget,
/// and in which state that holds.
#[derive(Clone, Debug)]
struct Note {
    state: &'static str,
    text: String,
}

#[derive(Default)]
struct Inner {
    /// The last reading of each live agent's tree.
    readings: HashMap<SessionId, Reading>,
    /// The proportional size each agent's tree last had while live: what
    /// it is expected to hold when it wakes again.
    remembered: HashMap<SessionId, u64>,
    /// Wakes admitted whose spawn has not returned yet, with the memory
    /// they were admitted for: counted until they are live and read.
    admitted: HashMap<SessionId, u64>,
    /// Wakes waiting in the queue for room, with why.
    waiting: BTreeMap<SessionId, String>,
    /// Sessions woken to be given a prompt, until it is typed (how many
    /// such wakes hold each): the budget must not take one in between (the
    /// prompt would find it gone: "session is not running").
    held: HashMap<SessionId, usize>,
    notes: HashMap<SessionId, Note>,
}

/// A session kept from the budget while a prompt is on its way to it
/// ([`FleetMemory::hold`]); dropping it lets the budget take the session
/// again (its turn has begun by then: a busy agent is not taken either).
pub struct Held<'a> {
    memory: &'a FleetMemory,
    id: SessionId,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut inner = self.memory.inner();
        if let Some(n) = inner.held.get_mut(&self.id) {
            *n -= 1;
            if *n == 0 {
                inner.held.remove(&self.id);
            }
        }
    }
}

/// The governor's memory readings and its wake admission's bookkeeping.
#[derive(Default)]
pub struct FleetMemory {
    inner: Mutex<Inner>,
    /// One admission decides (and hibernates what it chose) at a time:
    /// two wakes deciding on the same figures would both fit and together
    /// go over.
    pub(crate) deciding: tokio::sync::Mutex<()>,
}

impl FleetMemory {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Plain maps, whole between statements: keep going after a panic.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The memory of each of `live` (session, agent pid): read now when
    /// `fresh` or when its last reading is older than [`READ_GAP_MS`] (or
    /// of another pid), the last reading otherwise. Readings of sessions
    /// not in `live` are dropped (what each held is remembered).
    pub fn measure(
        &self,
        os: &dyn Os,
        live: &[(SessionId, u32)],
        fresh: bool,
    ) -> HashMap<SessionId, ProcessMemory> {
        let now = os.now_ms();
        let due: Vec<(SessionId, u32)> = {
            let inner = self.inner();
            live.iter()
                .filter(|(id, pid)| {
                    fresh
                        || inner.readings.get(id).is_none_or(|r| {
                            r.pid != *pid || now.saturating_sub(r.at_ms) >= READ_GAP_MS
                        })
                })
                .cloned()
                .collect()
        };
        // Read outside the lock: a rollup of a big tree takes a while.
        let read: Vec<(SessionId, u32, ProcessMemory)> = due
            .into_iter()
            .map(|(id, pid)| {
                let memory = tree_memory(os, pid);
                (id, pid, memory)
            })
            .collect();
        let mut inner = self.inner();
        for (id, pid, memory) in read {
            inner.remembered.insert(id.clone(), memory.proportional);
            inner.readings.insert(
                id,
                Reading {
                    pid,
                    at_ms: now,
                    memory,
                },
            );
        }
        inner
            .readings
            .retain(|id, _| live.iter().any(|(l, _)| l == id));
        inner
            .readings
            .iter()
            .map(|(id, r)| (id.clone(), r.memory))
            .collect()
    }

    /// What `id`'s tree held when it was last read live.
    pub fn remembered(&self, id: &SessionId) -> Option<u64> {
        self.inner().remembered.get(id).copied()
    }

    /// Wakes admitted and not yet running, with the memory each was
    /// admitted for.
    pub fn admitted(&self) -> Vec<(SessionId, u64)> {
        let inner = self.inner();
        inner
            .admitted
            .iter()
            .map(|(id, b)| (id.clone(), *b))
            .collect()
    }

    pub fn admit(&self, id: &SessionId, bytes: u64) {
        let mut inner = self.inner();
        inner.waiting.remove(id);
        inner.admitted.insert(id.clone(), bytes);
    }

    /// The admitted wake of `id` has run (or failed): its own reading
    /// counts from now on.
    pub fn settled(&self, id: &SessionId) {
        self.inner().admitted.remove(id);
    }

    /// Keep `id` from the budget until the returned hold is dropped.
    pub fn hold(&self, id: &SessionId) -> Held<'_> {
        *self.inner().held.entry(id.clone()).or_default() += 1;
        Held {
            memory: self,
            id: id.clone(),
        }
    }

    /// The sessions held from the budget now.
    pub fn held(&self) -> std::collections::BTreeSet<SessionId> {
        self.inner().held.keys().cloned().collect()
    }

    /// `id`'s wake waits for room, for `why`.
    pub fn wait(&self, id: &SessionId, why: &str) {
        let mut inner = self.inner();
        inner.waiting.insert(id.clone(), why.to_owned());
        inner.notes.insert(
            id.clone(),
            Note {
                state: "hibernated",
                text: why.to_owned(),
            },
        );
    }

    /// `id`'s waiting wake went away (its caller left).
    pub fn stop_waiting(&self, id: &SessionId) {
        let mut inner = self.inner();
        if inner.waiting.remove(id).is_some() {
            inner.notes.remove(id);
        }
    }

    /// The wakes waiting for room.
    pub fn waiting(&self) -> Vec<String> {
        self.inner()
            .waiting
            .keys()
            .map(|id| id.to_string())
            .collect()
    }

    /// `ls` shows `text` as `id`'s reason while it is in `state`
    /// (`hibernated` or `live`).
    pub fn note(&self, id: &SessionId, state: &'static str, text: String) {
        self.inner().notes.insert(id.clone(), Note { state, text });
    }

    /// What `ls` shows as `id`'s reason in `state`, if the budget says
    /// anything about it.
    pub fn note_for(&self, id: &SessionId, state: &str) -> Option<String> {
        self.inner()
            .notes
            .get(id)
            .filter(|n| n.state == state)
            .map(|n| n.text.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::FakeOs;
    use std::time::Duration;

    #[test]
    fn a_trees_memory_is_its_members_and_never_another_trees() {
        let os = FakeOs::default();
        let mib = 1024 * 1024;
        // An agent (10) with a child (11) and a grandchild (12); another
        // session's agent (20); a stranger (30) that is no one's child.
        for (pid, parent, bytes) in [
            (10, None, 100),
            (11, Some(10), 50),
            (12, Some(11), 25),
            (20, None, 7),
            (30, None, 999),
        ] {
            os.spawn(pid, pid, 1);
            os.set_process(pid, parent, bytes * mib);
        }
        assert_eq!(tree_memory(&os, 10).proportional, 175 * mib);
        assert_eq!(tree_memory(&os, 20).resident, 7 * mib);
        // 11 ends; its child 12 is the kernel's init's now, outside the tree.
        os.end_group(11);
        assert_eq!(tree_memory(&os, 10).proportional, 100 * mib);
    }

    #[test]
    fn a_tree_is_read_at_most_once_per_gap_unless_asked_fresh_and_only_while_live() {
        let os = FakeOs::default();
        os.spawn(10, 10, 1);
        os.set_memory(10, 100, 300);
        let meter = FleetMemory::default();
        let a = SessionId::from("a");
        let live = [(a.clone(), 10)];
        assert_eq!(meter.measure(&os, &live, false)[&a].proportional, 100);
        os.set_memory(10, 200, 400);
        let reads = os.memory_reads();
        assert_eq!(
            meter.measure(&os, &live, false)[&a].proportional,
            100,
            "the last reading, within the gap"
        );
        assert_eq!(os.memory_reads(), reads, "nothing read within the gap");
        os.advance(Duration::from_millis(READ_GAP_MS));
        assert_eq!(meter.measure(&os, &live, false)[&a].proportional, 200);
        os.set_memory(10, 250, 450);
        assert_eq!(meter.measure(&os, &live, true)[&a].resident, 450);
        // Hibernated: nothing is read, and what it held is remembered.
        let reads = os.memory_reads();
        os.advance(Duration::from_secs(60));
        assert!(meter.measure(&os, &[], false).is_empty());
        assert_eq!(os.memory_reads(), reads, "no live agent, no reading");
        assert_eq!(meter.remembered(&a), Some(250));
    }

    #[test]
    fn a_session_is_held_from_the_budget_until_its_last_hold_is_dropped() {
        let memory = FleetMemory::default();
        let a = SessionId::from("a");
        let first = memory.hold(&a);
        let second = memory.hold(&a);
        drop(first);
        assert_eq!(memory.held(), [a.clone()].into(), "one hold is left");
        drop(second);
        assert!(memory.held().is_empty());
    }
}
