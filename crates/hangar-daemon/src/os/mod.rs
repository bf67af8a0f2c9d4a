//! Everything the daemon asks of the operating system that its rules depend
//! on, behind traits: the clock, signalling process groups, process facts
//! from `/proc`, starting a program in a terminal ([`Pty`]) and running
//! `git` ([`Git`]). zellij's `ServerOsApi` is the model.
//!
//! [`RealOs`] is the machine; [`FakeOs`] is a machine in a test, with a clock
//! that only moves when the test advances it and processes the test makes up.
//! Process-level tests still run the real thing end to end; the fake is for
//! the unit tests in between, so "ten seconds later" needs no ten-second wait.
//! Nothing here decides anything: callers gather facts and act on answers.

mod fake;
mod git;
mod open_files;
mod real;

use std::collections::BTreeSet;
use std::path::PathBuf;

pub use crate::pty::Pty;
pub use fake::{FakeOs, FakeProgram};
pub use git::{FakeGit, Git, GitCall, GitOutput, run_real_git};
pub use real::{RealOs, now_ms, parse_smaps_rollup, parse_start_time, wall_ms};

/// Process-group control and process facts.
pub trait ProcessControl: Send + Sync {
    /// Send `signal` to every process of group `pgid`. `false` when no such
    /// group exists any more.
    fn signal_group(&self, pgid: u32, signal: i32) -> bool;
    /// The process's start time in clock ticks since boot (field 22 of
    /// `/proc/<pid>/stat`), `None` when it does not exist.
    fn start_time(&self, pid: u32) -> Option<u64>;
    /// `pid` and every process below it (empty for pid 0).
    fn process_tree(&self, pid: u32) -> Vec<u32>;
    /// The process's memory: its proportional set size (each page it shares
    /// divided among its sharers) and its resident set, `None` when it does
    /// not exist.
    fn memory(&self, pid: u32) -> Option<ProcessMemory>;
    /// Send `signal` to process `pid` alone. `false` when it is gone.
    fn signal_process(&self, pid: u32, signal: i32) -> bool;
    /// Every process's pid.
    fn pids(&self) -> Vec<u32>;
    /// The process's environment as `KEY=value` strings (empty when it
    /// cannot be read).
    fn environ(&self, pid: u32) -> Vec<String>;
    /// The process's command line, `argv[0]` first (empty when it cannot
    /// be read).
    fn cmdline(&self, pid: u32) -> Vec<String>;
    /// The process's parent, `None` when it is gone.
    fn parent_of(&self, pid: u32) -> Option<u32>;
    /// The process's group, `None` when it is gone or a zombie.
    fn group_of(&self, pid: u32) -> Option<u32>;
    /// The files under `root` that `pid` or a process below it holds open
    /// (`/proc/<pid>/fd`), as the kernel names them (symlinks resolved).
    fn open_files_under(&self, pid: u32, root: &std::path::Path) -> BTreeSet<PathBuf>;
}

/// One process's memory, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Proportional set size (`Pss` of `/proc/<pid>/smaps_rollup`): a page
    /// shared by n processes counts 1/n in each, so a fleet's sum counts it
    /// once.
    pub proportional: u64,
    /// Resident set size: a shared page counts whole in every process.
    pub resident: u64,
}

impl std::ops::Add for ProcessMemory {
    type Output = ProcessMemory;
    fn add(self, other: ProcessMemory) -> ProcessMemory {
        ProcessMemory {
            proportional: self.proportional + other.proportional,
            resident: self.resident + other.resident,
        }
    }
}

impl std::iter::Sum for ProcessMemory {
    fn sum<I: Iterator<Item = ProcessMemory>>(iter: I) -> ProcessMemory {
        iter.fold(ProcessMemory::default(), |a, b| a + b)
    }
}

/// The daemon's two clocks.
pub trait Clock: Send + Sync {
    /// The daemon's clock in ms since the Unix epoch: never jumps while the
    /// daemon runs (see [`now_ms`]). Every stored time and every age.
    fn now_ms(&self) -> u64;
    /// The wall clock as it is now, only for comparing with times other
    /// programs wrote (transcript file dates).
    fn wall_ms(&self) -> u64;
}

/// The whole OS as the daemon sees it.
pub trait Os: ProcessControl + Clock + Pty + Git {}

impl<T: ProcessControl + Clock + Pty + Git> Os for T {}

/// A recorded agent process a killed predecessor left behind is still the
/// one it recorded, and so may be ended: its leader still runs with the
/// recorded start time, or the leader is gone but its group still has
/// members (the kernel does not hand out a pid number while it is still
/// some group's id, so no newer process can own that group). A pid whose
/// start time differs was reused by another program and is never touched.
pub fn is_recorded_agent(os: &dyn ProcessControl, pid: u32, pgid: u32, start_time: u64) -> bool {
    let leader_matches = start_time != 0 && os.start_time(pid) == Some(start_time);
    let stragglers_of_dead_leader = os.start_time(pid).is_none() && os.signal_group(pgid, 0);
    leader_matches || stragglers_of_dead_leader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_pid_is_not_taken_for_the_recorded_agent() {
        let os = FakeOs::default();
        os.spawn(100, 100, 5_000);
        assert!(!is_recorded_agent(&os, 100, 100, 4_000));
        assert!(is_recorded_agent(&os, 100, 100, 5_000));
    }

    #[test]
    fn children_of_a_dead_leader_are_still_the_recorded_group() {
        let os = FakeOs::default();
        // A child of group 200 lives on after leader 200 died of the hangup.
        os.spawn(201, 200, 7_000);
        assert!(is_recorded_agent(&os, 200, 200, 6_000));
        os.end_group(200);
        assert!(
            !is_recorded_agent(&os, 200, 200, 6_000),
            "nothing left to end"
        );
    }

    #[test]
    fn an_unknown_start_time_never_matches_a_live_pid() {
        let os = FakeOs::default();
        os.spawn(300, 300, 9_000);
        assert!(!is_recorded_agent(&os, 300, 300, 0));
    }
}
