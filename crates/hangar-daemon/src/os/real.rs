//! The real operating system: `kill(2)` on process groups, `/proc` for
//! process facts, and the daemon's clock anchored at its start (the one in
//! hangar-clock).

use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::{Clock, Git, GitOutput, ProcessControl, ProcessMemory};
use crate::pty::{Pty, SpawnRequest, Spawned};

/// The `Rss` and `Pss` lines of a `/proc/<pid>/smaps_rollup` (in kB there),
/// in bytes; `None` when either is missing.
pub fn parse_smaps_rollup(text: &str) -> Option<ProcessMemory> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find_map(|l| l.strip_prefix(name))?;
        let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    };
    Some(ProcessMemory {
        proportional: field("Pss:")?,
        resident: field("Rss:")?,
    })
}

/// The process's resident memory in bytes from `/proc/<pid>/statm`.
fn resident_bytes(pid: u32) -> Option<u64> {
    // Field 2 of `/proc/<pid>/statm`: resident pages.
    let pages: u64 = std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|p| u64::try_from(p).ok())
        .unwrap_or(4096);
    Some(pages * page)
}

/// The real operating system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealOs;

impl Git for RealOs {
    fn run_git(
        &self,
        dir: &Path,
        args: &[OsString],
        env: &[(&str, &OsStr)],
        stdin: Option<&[u8]>,
    ) -> std::io::Result<GitOutput> {
        super::run_real_git(dir, args, env, stdin)
    }
}

impl ProcessControl for RealOs {
    fn signal_group(&self, pgid: u32, signal: i32) -> bool {
        if pgid <= 1 {
            // kill(-1) or kill(-0) would signal far more than one group.
            return false;
        }
        let Some(signal) = to_signal(signal) else {
            return false;
        };
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid as i32), signal).is_ok()
    }

    fn start_time(&self, pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_start_time(&stat)
    }

    fn process_tree(&self, pid: u32) -> Vec<u32> {
        super::open_files::process_tree(pid)
    }

    fn memory(&self, pid: u32) -> Option<ProcessMemory> {
        // One read gives both figures; the kernel walks the page tables
        // for it, which is why the governor reads it only every few seconds.
        if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            && let Some(memory) = parse_smaps_rollup(&rollup)
        {
            return Some(memory);
        }
        // A kernel before 4.14 has no smaps_rollup: resident memory stands
        // for both (shared pages then count once per process).
        let resident = resident_bytes(pid)?;
        Some(ProcessMemory {
            proportional: resident,
            resident,
        })
    }

    fn signal_process(&self, pid: u32, signal: i32) -> bool {
        if pid <= 1 {
            return false;
        }
        let Some(signal) = to_signal(signal) else {
            return false;
        };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).is_ok()
    }

    fn pids(&self) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    fn environ(&self, pid: u32) -> Vec<String> {
        nul_separated(&format!("/proc/{pid}/environ"))
    }

    fn cmdline(&self, pid: u32) -> Vec<String> {
        nul_separated(&format!("/proc/{pid}/cmdline"))
    }

    fn parent_of(&self, pid: u32) -> Option<u32> {
        super::open_files::parent_of(pid)
    }

    fn open_files_under(
        &self,
        pid: u32,
        root: &std::path::Path,
    ) -> std::collections::BTreeSet<std::path::PathBuf> {
        super::open_files::open_under(pid, root)
    }

    fn group_of(&self, pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command name: state, parent, group.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            return None;
        }
        fields.get(2)?.parse().ok()
    }
}

/// A signal number as nix's type; 0 (only asks whether the target exists)
/// is `Some(None)`, a number no signal has is `None`.
fn to_signal(signal: i32) -> Option<Option<nix::sys::signal::Signal>> {
    match signal {
        0 => Some(None),
        n => nix::sys::signal::Signal::try_from(n).ok().map(Some),
    }
}

impl Pty for RealOs {
    fn spawn_pty(&self, req: &SpawnRequest) -> std::io::Result<Spawned> {
        crate::pty::spawn_real_pty(req, |pgid, signal| RealOs.signal_group(pgid, signal))
    }
}

/// A `/proc` file of NUL-separated strings (`environ`, `cmdline`); empty
/// when it cannot be read (the process is gone or not ours).
fn nul_separated(path: &str) -> Vec<String> {
    std::fs::read(path)
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

impl Clock for RealOs {
    fn now_ms(&self) -> u64 {
        now_ms()
    }
    fn wall_ms(&self) -> u64 {
        wall_ms()
    }
}

/// The daemon's clock (hangar-clock, shared with the proxy): ms since the
/// Unix epoch that never jumps while the daemon runs. Every stored time and
/// every age.
pub use hangar_clock::now_ms;
/// The wall clock as it is now, for comparing with times other programs
/// wrote (file names and dates of transcripts).
pub use hangar_clock::wall_ms;

/// Field 22 of a `/proc/<pid>/stat` line. The command name (field 2) may
/// contain spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_past_a_command_name_with_spaces() {
        let stat = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(stat), Some(987654));
    }

    #[test]
    fn a_rollup_gives_proportional_and_resident_bytes_and_a_partial_one_nothing() {
        let rollup = "56486c548000-7ffde425b000 ---p 00000000 00:00 0  [rollup]\n\
                      Rss:                1732 kB\n\
                      Pss:                 346 kB\n\
                      Pss_Dirty:           112 kB\n";
        let memory = parse_smaps_rollup(rollup).unwrap();
        assert_eq!(memory.proportional, 346 * 1024, "Pss, not Pss_Dirty");
        assert_eq!(memory.resident, 1732 * 1024);
        assert_eq!(parse_smaps_rollup("Rss: 1732 kB\n"), None);
    }

    #[test]
    fn our_own_memory_is_read_and_our_share_is_at_most_our_resident_set() {
        let memory = RealOs.memory(std::process::id()).unwrap();
        assert!(memory.proportional > 0);
        assert!(memory.proportional <= memory.resident, "{memory:?}");
    }

    #[test]
    fn our_own_start_time_is_known() {
        assert!(RealOs.start_time(std::process::id()).is_some());
    }
}
