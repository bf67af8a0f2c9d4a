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

use crate::os::ProcessControl;

/// How long a stray group gets between SIGTERM and SIGKILL.
const STRAY_GRACE: Duration = Duration::from_secs(2);

/// The `HANGAR_SESSION_ID` a running process was given, if any.
pub fn session_of(os: &dyn ProcessControl, pid: u32) -> Option<String> {
    os.environ(pid)
        .into_iter()
        .find_map(|kv| kv.strip_prefix("HANGAR_SESSION_ID=").map(str::to_owned))
}

/// Live processes (not zombies, not this daemon) carrying `session` and
/// `home` in their environment, with their process groups; none in
/// `spare` (the group of a process of the session started since).
pub fn find(
    os: &dyn ProcessControl,
    session: &str,
    home: &Path,
    spare: Option<u32>,
) -> Vec<(u32, u32)> {
    let me = std::process::id();
    let want_session = format!("HANGAR_SESSION_ID={session}");
    let want_home = format!("HANGAR_HOME={}", home.display());
    os.pids()
        .into_iter()
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            let env = os.environ(pid);
            env.contains(&want_session) && env.contains(&want_home)
        })
        .filter_map(|pid| Some((pid, os.group_of(pid)?)))
        .filter(|&(_, g)| Some(g) != spare)
        .collect()
}

/// Ends every process group holding a stray of `session`: SIGTERM, then
/// SIGKILL for what is left after a grace period. Returns how many strays
/// there were.
pub async fn end(os: &dyn ProcessControl, session: &str, home: &Path, spare: Option<u32>) -> usize {
    let strays = find(os, session, home, spare);
    if strays.is_empty() {
        return 0;
    }
    let me = std::process::id();
    let my_group = nix::unistd::getpgrp().as_raw() as u32;
    let mut groups: Vec<u32> = strays.iter().map(|&(_, g)| g).collect();
    groups.sort_unstable();
    groups.dedup();
    // Never signal the daemon's own group (or a group of one's own pid).
    groups.retain(|&g| g > 1 && g != my_group && g != me);
    tracing::info!(
        "ending {} process(es) session {session} started outside its process group",
        strays.len()
    );
    for &g in &groups {
        // The groups are those of processes carrying this session's
        // variables for this home. One already gone is no error.
        os.signal_group(g, libc::SIGTERM);
    }
    let deadline = tokio::time::Instant::now() + STRAY_GRACE;
    while tokio::time::Instant::now() < deadline && !find(os, session, home, spare).is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (pid, g) in find(os, session, home, spare) {
        // As above: what ended meanwhile is no error.
        if g > 1 && g != my_group {
            os.signal_group(g, libc::SIGKILL);
        }
        os.signal_process(pid, libc::SIGKILL);
    }
    strays.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::{FakeOs, RealOs};
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
        let pid = child.id();
        // Until its exec the child carries this test's environment, not the
        // session's: wait for it, as long as a loaded machine may take.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while std::time::Instant::now() < deadline {
            seen = find(&RealOs, &session, home.path(), None);
            if !seen.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(seen, vec![(pid, pid)]);
        // Another home's session of the same id is not ours.
        let other = tempfile::tempdir().unwrap();
        assert!(find(&RealOs, &session, other.path(), None).is_empty());
        // A newer process of the session is spared.
        assert!(find(&RealOs, &session, home.path(), Some(pid)).is_empty());
        assert_eq!(end(&RealOs, &session, home.path(), None).await, 1);
        let status = child.wait().unwrap();
        assert!(!status.success(), "the stray was ended by a signal");
        assert!(find(&RealOs, &session, home.path(), None).is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stray_on_the_fake_machine_is_ended_and_a_newer_group_spared() {
        let os = FakeOs::default();
        let home = Path::new("/home/h");
        let env = ["HANGAR_SESSION_ID=s1", "HANGAR_HOME=/home/h"];
        // The stray (its own group 500), a newer process of the session
        // (group 600), and another home's session of the same id.
        os.spawn(500, 500, 1);
        os.set_environ(500, &env);
        os.spawn(600, 600, 2);
        os.set_environ(600, &env);
        os.spawn(700, 700, 3);
        os.set_environ(700, &["HANGAR_SESSION_ID=s1", "HANGAR_HOME=/elsewhere"]);
        assert_eq!(session_of(&os, 500).as_deref(), Some("s1"));
        assert_eq!(end(&os, "s1", home, Some(600)).await, 1);
        // A declared process ignores SIGTERM; the grace ends in SIGKILL.
        assert_eq!(
            os.signals_sent(),
            vec![(500, libc::SIGTERM), (500, libc::SIGKILL)]
        );
        assert_eq!(os.pids(), vec![600, 700]);
    }
}
