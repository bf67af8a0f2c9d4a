//! A made-up machine for unit tests: a clock that moves only when the test
//! advances it, and processes the test declares. It records every signal
//! sent, so a test can say which groups were ended.
//!
//! Never used by the running daemon.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Clock, ProcessControl};

/// A made-up process: its group, start time, parent and resident memory.
#[derive(Clone, Copy, Debug)]
struct FakeProcess {
    pgid: u32,
    start_time: u64,
    parent: Option<u32>,
    resident: u64,
}

/// The fake OS. Its clocks start at an arbitrary fixed instant.
#[derive(Debug)]
pub struct FakeOs {
    now: AtomicU64,
    wall: AtomicU64,
    processes: Mutex<HashMap<u32, FakeProcess>>,
    signals: Mutex<Vec<(u32, i32)>>,
}

/// 2026-01-01T00:00:00Z: far from zero, so an age subtracted from it never
/// saturates by accident.
const START_MS: u64 = 1_767_225_600_000;

impl Default for FakeOs {
    fn default() -> Self {
        FakeOs {
            now: AtomicU64::new(START_MS),
            wall: AtomicU64::new(START_MS),
            processes: Mutex::default(),
            signals: Mutex::default(),
        }
    }
}

impl FakeOs {
    /// Move both clocks forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = by.as_millis() as u64;
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.wall.fetch_add(ms, Ordering::SeqCst);
    }

    /// Step only the wall clock (an NTP correction, a person changing the
    /// date): the daemon's clock does not follow.
    pub fn step_wall_clock(&self, to_ms: u64) {
        self.wall.store(to_ms, Ordering::SeqCst);
    }

    /// A process `pid` in group `pgid`, started at `start_time` ticks.
    pub fn spawn(&self, pid: u32, pgid: u32, start_time: u64) {
        self.procs().insert(
            pid,
            FakeProcess {
                pgid,
                start_time,
                parent: None,
                resident: 0,
            },
        );
    }

    /// Process `pid`'s parent and resident memory (it must exist).
    pub fn set_process(&self, pid: u32, parent: Option<u32>, resident_bytes: u64) {
        if let Some(p) = self.procs().get_mut(&pid) {
            p.parent = parent;
            p.resident = resident_bytes;
        }
    }

    /// Every process of group `pgid` ends.
    pub fn end_group(&self, pgid: u32) {
        self.procs().retain(|_, p| p.pgid != pgid);
    }

    /// Every (group, signal) sent so far, in order; signal 0 (the existence
    /// probe) is not recorded.
    pub fn signals_sent(&self) -> Vec<(u32, i32)> {
        self.signals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn procs(&self) -> std::sync::MutexGuard<'_, HashMap<u32, FakeProcess>> {
        self.processes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ProcessControl for FakeOs {
    fn signal_group(&self, pgid: u32, signal: i32) -> bool {
        if pgid <= 1 {
            return false;
        }
        let exists = self.procs().values().any(|p| p.pgid == pgid);
        if exists && signal != 0 {
            self.signals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((pgid, signal));
            if signal == libc::SIGKILL {
                self.end_group(pgid);
            }
        }
        exists
    }

    fn start_time(&self, pid: u32) -> Option<u64> {
        self.procs().get(&pid).map(|p| p.start_time)
    }

    fn process_tree(&self, pid: u32) -> Vec<u32> {
        let procs = self.procs();
        if pid == 0 || !procs.contains_key(&pid) {
            return Vec::new();
        }
        let mut tree = vec![pid];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            let mut children: Vec<u32> = procs
                .iter()
                .filter(|(c, p)| p.parent == Some(parent) && !tree.contains(c))
                .map(|(c, _)| *c)
                .collect();
            children.sort();
            tree.extend(children);
            i += 1;
        }
        tree
    }

    fn resident_bytes(&self, pid: u32) -> Option<u64> {
        self.procs().get(&pid).map(|p| p.resident)
    }
}

impl Clock for FakeOs {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
    fn wall_ms(&self) -> u64 {
        self.wall.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_clock_does_not_follow_a_wall_clock_step() {
        let os = FakeOs::default();
        let before = os.now_ms();
        os.step_wall_clock(before - 86_400_000);
        os.advance(Duration::from_secs(5));
        assert_eq!(os.now_ms(), before + 5_000);
        assert_eq!(os.wall_ms(), before - 86_400_000 + 5_000);
    }

    #[test]
    fn a_killed_group_is_gone_and_the_kill_is_recorded() {
        let os = FakeOs::default();
        os.spawn(10, 10, 1);
        os.spawn(11, 10, 2);
        assert!(os.signal_group(10, libc::SIGKILL));
        assert_eq!(os.start_time(11), None);
        assert!(!os.signal_group(10, 0));
        assert_eq!(os.signals_sent(), vec![(10, libc::SIGKILL)]);
    }
}
