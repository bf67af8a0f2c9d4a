//! OS access the daemon's rules depend on, behind a trait so unit tests can
//! swap in a fake: signalling process groups and reading `/proc`.

/// Process-group control and process facts.
pub trait ProcessControl: Send + Sync {
    /// Send `signal` to every process of group `pgid`. `false` when no such
    /// group exists any more.
    fn signal_group(&self, pgid: u32, signal: i32) -> bool;
    /// The process's start time in clock ticks since boot (field 22 of
    /// `/proc/<pid>/stat`), `None` when it does not exist.
    fn start_time(&self, pid: u32) -> Option<u64>;
}

/// The real operating system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealOs;

impl ProcessControl for RealOs {
    fn signal_group(&self, pgid: u32, signal: i32) -> bool {
        if pgid <= 1 {
            // kill(-1) or kill(-0) would signal far more than one group.
            return false;
        }
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(-(pgid as i32), signal) == 0 }
    }

    fn start_time(&self, pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_start_time(&stat)
    }
}

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
    fn our_own_start_time_is_known() {
        assert!(RealOs.start_time(std::process::id()).is_some());
    }
}
