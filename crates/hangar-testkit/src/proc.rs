//! What `/proc` says about processes. Tests count processes from here,
//! never from the daemon's own word; every reader returns an empty or
//! `None` answer for a process that is gone (a race a test must tolerate).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Every pid in /proc.
pub fn all_pids() -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// `/proc/<pid>/environ` entries (empty when unreadable or gone).
pub fn environ(pid: i32) -> Vec<String> {
    split_nul(&fs::read(format!("/proc/{pid}/environ")).unwrap_or_default())
}

/// `/proc/<pid>/cmdline` arguments (empty for zombies and gone processes).
pub fn cmdline(pid: i32) -> Vec<String> {
    split_nul(&fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
}

fn split_nul(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The value after `flag` in `args`, if any.
pub fn arg_after(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Fields of `/proc/<pid>/stat` after the command name: state, ppid, pgrp, ...
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The process's state letter (`R`, `S`, `Z`, ...), if it exists.
pub fn proc_state(pid: i32) -> Option<char> {
    stat_fields(pid)?.first()?.chars().next()
}

pub fn exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Exists and is not a zombie.
pub fn is_running(pid: i32) -> bool {
    matches!(proc_state(pid), Some(s) if s != 'Z' && s != 'X')
}

pub fn is_zombie(pid: i32) -> bool {
    proc_state(pid) == Some('Z')
}

pub fn ppid(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

pub fn pgid(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// When the process started, in seconds since boot (the clock of
/// `/proc/uptime`, in its 10 ms steps).
pub fn start_secs(pid: i32) -> Option<f64> {
    const USER_HZ: f64 = 100.0;
    let ticks: f64 = stat_fields(pid)?.get(19)?.parse().ok()?;
    Some(ticks / USER_HZ)
}

/// Seconds since boot, from `/proc/uptime`.
pub fn uptime_secs() -> Option<f64> {
    fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Direct children of `pid` (zombies included).
pub fn children_of(pid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&p| ppid(p) == Some(pid))
        .collect()
}

/// Every descendant of `pid` (zombies included).
pub fn descendants_of(pid: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = all_pids()
        .into_iter()
        .filter_map(|p| Some((p, ppid(p)?)))
        .collect();
    let mut found = BTreeSet::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &parents {
            if parent == p && found.insert(child) {
                frontier.push(child);
            }
        }
    }
    found.into_iter().collect()
}

/// Every process in process group `pgid` (zombies included).
pub fn processes_in_group(group: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&p| pgid(p) == Some(group))
        .collect()
}

/// How many fds `pid` has open.
pub fn open_fds(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Open fds of `pid`, by target (`/path`, `pipe:[123]`, `socket:[456]`),
/// sorted, for a readable leak report.
pub fn fd_targets(pid: i32) -> Vec<String> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let mut v: Vec<String> = dir
        .filter_map(|e| {
            let e = e.ok()?;
            fs::read_link(e.path())
                .ok()
                .map(|t| t.display().to_string())
        })
        .collect();
    v.sort();
    v
}

/// `VmRSS` of `pid` in KiB.
pub fn rss_kib(pid: i32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// SIGKILLs every pid in `pids`.
pub fn kill_all(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill has no memory effects; a stale pid at worst gets
        // ESRCH. Callers name only processes they found carrying one test's
        // unique temp folder.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_found_with_its_parent_its_arguments_and_its_fds() {
        let me = std::process::id() as i32;
        assert!(all_pids().contains(&me));
        assert!(is_running(me));
        assert!(!is_zombie(me));
        assert_eq!(ppid(me), Some(std::os::unix::process::parent_id() as i32));
        assert!(children_of(ppid(me).unwrap()).contains(&me));
        assert!(descendants_of(ppid(me).unwrap()).contains(&me));
        assert!(!cmdline(me).is_empty());
        assert!(open_fds(me) >= 3);
        assert!(rss_kib(me).is_some_and(|k| k > 0));
        assert!(start_secs(me).unwrap() <= uptime_secs().unwrap());
    }

    #[test]
    fn a_child_is_a_zombie_until_reaped_and_gone_after() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        crate::wait_until("the child has exited", crate::DEADLINE, || {
            proc_state(pid) == Some('Z')
        });
        assert!(exists(pid) && !is_running(pid));
        child.wait().unwrap();
        assert!(!exists(pid));
        assert!(cmdline(pid).is_empty() && environ(pid).is_empty());
    }

    #[test]
    fn the_value_after_a_flag_is_found() {
        let args: Vec<String> = ["x", "--resume", "abc"].map(String::from).into();
        assert_eq!(arg_after(&args, "--resume").as_deref(), Some("abc"));
        assert_eq!(arg_after(&args, "abc"), None);
    }
}
