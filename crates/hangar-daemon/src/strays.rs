//! Processes a session started outside its own process group, ended with it
//! (DESIGN.md rule 8; issue 16 defect 4).
//!
//! Codex 0.17x, unless told `--no-daemon`, starts `codex app-server
//! --managed-daemon` in a session and process group of its own, reparented
//! to pid 1 once the TUI exits: ending the session's group leaves it
//! running. Every process a session's agent starts inherits the
//! `HANGAR_SESSION_ID` and `HANGAR_HOME` hangar gave the agent, so a
//! process carrying both, for this daemon's home, belongs to that session
//! wherever it moved, and is ended when the session's process is.

use std::path::Path;
use std::time::Duration;

/// How long a stray group gets between SIGTERM and SIGKILL.
const STRAY_GRACE: Duration = Duration::from_secs(2);

/// `/proc/<pid>/environ` as `KEY=value` strings (empty when unreadable).
fn environ(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The `HANGAR_SESSION_ID` a running process was given, if any.
pub fn session_of(pid: i32) -> Option<String> {
    environ(pid)
        .into_iter()
        .find_map(|kv| kv.strip_prefix("HANGAR_SESSION_ID=").map(str::to_owned))
}

fn pgid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(2)?.parse().ok()
}

/// Live processes (not zombies, not this daemon) carrying `session` and
/// `home` in their environment, with their process groups; none in
/// `spare` (the group of a process of the session started since).
pub fn find(session: &str, home: &Path, spare: Option<i32>) -> Vec<(i32, i32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    let want_session = format!("HANGAR_SESSION_ID={session}");
    let want_home = format!("HANGAR_HOME={}", home.display());
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            let env = environ(pid);
            env.contains(&want_session) && env.contains(&want_home)
        })
        .filter_map(|pid| Some((pid, pgid_of(pid)?)))
        .filter(|&(_, g)| Some(g) != spare)
        .collect()
}

/// Ends every process group holding a stray of `session`: SIGTERM, then
/// SIGKILL for what is left after a grace period. Returns how many strays
/// there were.
pub async fn end(session: &str, home: &Path, spare: Option<i32>) -> usize {
    let strays = find(session, home, spare);
    if strays.is_empty() {
        return 0;
    }
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    let mut groups: Vec<i32> = strays.iter().map(|&(_, g)| g).collect();
    groups.sort_unstable();
    groups.dedup();
    // Never signal the daemon's own group (or a group of one's own pid).
    groups.retain(|&g| g > 1 && g != my_group && g != me);
    tracing::info!(
        "ending {} process(es) session {session} started outside its process group",
        strays.len()
    );
    for &g in &groups {
        // SAFETY: kill has no memory effects; the groups are those of
        // processes carrying this session's variables for this home.
        unsafe {
            libc::kill(-g, libc::SIGTERM);
        }
    }
    let deadline = tokio::time::Instant::now() + STRAY_GRACE;
    while tokio::time::Instant::now() < deadline && !find(session, home, spare).is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (pid, g) in find(session, home, spare) {
        // SAFETY: as above.
        unsafe {
            if g > 1 && g != my_group {
                libc::kill(-g, libc::SIGKILL);
            }
            libc::kill(pid, libc::SIGKILL);
        }
    }
    strays.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[tokio::test]
    async fn a_process_that_left_the_group_but_carries_the_session_is_ended() {
        let home = tempfile::tempdir().unwrap();
        let session = format!("strays-test-{}", std::process::id());
        // A stand-in for codex's app-server: its own process group, the
        // session's variables inherited.
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .env("HANGAR_SESSION_ID", &session)
            .env("HANGAR_HOME", home.path())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Until its exec the child carries this test's environment, not the
        // session's: wait for it, as long as a loaded machine may take.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while std::time::Instant::now() < deadline {
            seen = find(&session, home.path(), None);
            if !seen.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(seen, vec![(pid, pid)]);
        // Another home's session of the same id is not ours.
        let other = tempfile::tempdir().unwrap();
        assert!(find(&session, other.path(), None).is_empty());
        // A newer process of the session is spared.
        assert!(find(&session, home.path(), Some(pid)).is_empty());
        assert_eq!(end(&session, home.path(), None).await, 1);
        let status = child.wait().unwrap();
        assert!(!status.success(), "the stray was ended by a signal");
        assert!(find(&session, home.path(), None).is_empty());
    }
}
