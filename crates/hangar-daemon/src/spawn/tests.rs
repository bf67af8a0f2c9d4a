//! Wake, launch, stop and restore on a fake machine: scripted programs in
//! place of real ones, tokio's clock paused (a grace period or a quiet
//! start's window passes the moment nothing else can run), so each test
//! takes milliseconds. The process-level tests in `crates/hangar/tests`
//! still run the real thing end to end.

use std::time::Duration;

use hangar_core::SessionId;

use crate::journal::Caller;
use crate::on_a_fake_machine::{FakeMachine, build, until, with_sessions};
use crate::os::FakeProgram;
use crate::sessions::RunState;

fn id(s: &str) -> SessionId {
    SessionId::from(s)
}

fn pid_of(m: &FakeMachine, session: &str) -> u32 {
    m.os.spawned()
        .iter()
        .rev()
        .find(|s| s.session.as_deref() == Some(session))
        .map(|s| s.pid)
        .unwrap_or_else(|| panic!("{session} was never started"))
}

#[tokio::test(start_paused = true)]
async fn concurrent_wakes_of_one_session_join_one_spawn() {
    let m = with_sessions(&["a"], &[]);
    m.os.script(
        "a",
        FakeProgram {
            held: true,
            ..FakeProgram::default()
        },
    );
    let wakes: Vec<_> = (0..3)
        .map(|_| {
            let spawner = m.daemon.spawner.clone();
            tokio::spawn(async move { spawner.wake_as(&id("a"), Caller::Cli).await })
        })
        .collect();
    until("a's program started", || !m.os.spawned().is_empty()).await;
    m.os.release(pid_of(&m, "a"));
    for w in wakes {
        assert_eq!(w.await.unwrap().unwrap(), RunState::Live);
    }
    assert_eq!(m.os.spawned().len(), 1, "one process for three wakes");
    assert_eq!(m.daemon.sessions.run_state(&id("a")), RunState::Live);
    // A wake of a live session starts nothing either.
    let again = m.daemon.spawner.wake_as(&id("a"), Caller::Cli).await;
    assert_eq!(again.unwrap(), RunState::Live);
    assert_eq!(m.os.spawned().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_launch_starts_the_program_in_the_sessions_folder_with_its_identity_and_shows_its_output()
{
    let m = with_sessions(&["a"], &[]);
    let state = m.daemon.spawner.wake_as(&id("a"), Caller::Cli).await;
    assert_eq!(state.unwrap(), RunState::Live);
    let spawned = m.os.spawned();
    assert_eq!(spawned.len(), 1);
    let s = &spawned[0];
    assert_eq!(s.cwd, m.home.path());
    let env = |k: &str| {
        s.env
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(env("HANGAR_SESSION_ID").as_deref(), Some("a"));
    assert_eq!(
        env("HANGAR_HOME"),
        Some(m.home.path().display().to_string())
    );
    assert_eq!(env("TERM").as_deref(), Some("xterm-256color"));
    let live = m.daemon.sessions.process(&id("a")).unwrap();
    assert_eq!(live.pid, s.pid);
    until("the screen shows the program's output", || {
        live.text().contains("ready")
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_program_that_cannot_start_leaves_its_session_failed_with_the_reason() {
    let m = with_sessions(&["a"], &[]);
    m.os.script(
        "a",
        FakeProgram {
            fails_to_start: Some("permission denied".into()),
            ..FakeProgram::default()
        },
    );
    let state = m.daemon.spawner.wake_as(&id("a"), Caller::Cli).await;
    let RunState::Failed(reason) = state.unwrap() else {
        panic!("not failed");
    };
    assert!(reason.contains("permission denied"), "{reason}");
    assert!(m.daemon.sessions.contains(&id("a")), "the session is kept");
    assert!(m.daemon.sessions.process(&id("a")).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_session_bound_to_an_engine_never_starts_on_this_machine_when_its_engine_refuses() {
    // The engine is not in config.toml: its place says so, and nothing runs
    // in a local PTY instead (DESIGN.md rule 14).
    let m = crate::on_a_fake_machine::build(
        &["a"],
        &[],
        |_| {},
        |meta| {
            meta.engine = Some(Box::new(hangar_core::engine::EngineBinding {
                name: "farm".into(),
                image: None,
            }))
        },
    );
    let state = m.daemon.spawner.wake_as(&id("a"), Caller::Cli).await;
    let RunState::Failed(reason) = state.unwrap() else {
        panic!("not failed");
    };
    assert!(
        reason.contains("engine farm is not in config.toml"),
        "{reason}"
    );
    assert!(m.os.spawned().is_empty(), "nothing started on this machine");
    let meta = m.daemon.sessions.meta(&id("a")).unwrap();
    assert_eq!(
        m.daemon.places.inspect(&meta).engine.map(|e| e.name),
        Some("farm".to_owned())
    );
}

#[tokio::test(start_paused = true)]
async fn a_stop_asks_the_group_to_end_and_kills_only_what_outlives_the_grace() {
    let m = with_sessions(&["a", "b"], &[]);
    m.os.script(
        "b",
        FakeProgram {
            ignores_term: true,
            ..FakeProgram::default()
        },
    );
    for s in ["a", "b"] {
        let state = m.daemon.spawner.wake_as(&id(s), Caller::Cli).await;
        assert_eq!(state.unwrap(), RunState::Live);
    }
    let (a, b) = (pid_of(&m, "a"), pid_of(&m, "b"));

    let begun = tokio::time::Instant::now();
    m.daemon.spawner.hibernate_session(&id("a")).await.unwrap();
    assert!(begun.elapsed() < Duration::from_secs(1), "a ended at once");
    let term = [(a, libc::SIGTERM), (a, libc::SIGHUP), (a, libc::SIGCONT)];
    assert_eq!(m.os.signals_sent(), term);
    assert_eq!(m.daemon.sessions.run_state(&id("a")), RunState::Hibernated);

    let begun = tokio::time::Instant::now();
    m.daemon.spawner.hibernate_session(&id("b")).await.unwrap();
    assert!(
        begun.elapsed() >= super::stop::STOP_GRACE,
        "b had its grace period"
    );
    let sent: Vec<_> = m.os.signals_sent().into_iter().skip(3).collect();
    let ended = [
        (b, libc::SIGTERM),
        (b, libc::SIGHUP),
        (b, libc::SIGCONT),
        (b, libc::SIGKILL),
    ];
    assert_eq!(sent, ended);
    assert_eq!(m.daemon.sessions.run_state(&id("b")), RunState::Hibernated);
    assert!(m.os.running().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_program_that_exits_by_itself_leaves_its_session_exited_with_the_code() {
    let m = with_sessions(&["a"], &[]);
    let state = m.daemon.spawner.wake_as(&id("a"), Caller::Cli).await;
    assert_eq!(state.unwrap(), RunState::Live);
    m.os.exit(pid_of(&m, "a"), 7);
    until("a is exited", || {
        m.daemon.sessions.run_state(&id("a")) == RunState::Exited(7)
    })
    .await;
    assert!(m.daemon.sessions.process(&id("a")).is_none());
}

#[tokio::test(start_paused = true)]
async fn restore_starts_only_the_panes_a_few_at_a_time_and_keeps_a_failed_one() {
    let m = build(
        &["a", "b", "c"],
        &["parked"],
        |c| c.restore.concurrency = 1,
        |_| {},
    );
    m.os.script_default(FakeProgram {
        held: true,
        ..FakeProgram::default()
    });
    m.os.script(
        "b",
        FakeProgram {
            fails_to_start: Some("no such file or directory".into()),
            ..FakeProgram::default()
        },
    );
    let forks = m.daemon.sessions.first_forks();
    let mut panes = forks.clone();
    panes.sort();
    assert_eq!(panes, [id("a"), id("b"), id("c")], "the visible panes");
    let to_spawn = m.daemon.spawner.adopt_first_forks(forks);
    let spawner = m.daemon.spawner.clone();
    let restore = tokio::spawn(async move { spawner.restore_spawn(to_spawn).await });
    // One slot, and a program that has not printed (held) keeps it for its
    // quiet window: while the first one boots, nothing else starts (`b`,
    // failing at once, would only give the slot back).
    until("a program started", || m.os.running().len() == 1).await;
    assert_eq!(m.os.spawned().len(), 1, "{:?}", m.os.spawned());
    restore.await.unwrap();
    let started: Vec<_> =
        m.os.spawned()
            .into_iter()
            .filter_map(|s| s.session)
            .collect();
    assert!(!started.contains(&"parked".to_owned()), "{started:?}");
    for s in ["a", "c"] {
        assert_eq!(m.daemon.sessions.run_state(&id(s)), RunState::Live, "{s}");
    }
    assert!(matches!(
        m.daemon.sessions.run_state(&id("b")),
        RunState::Failed(reason) if reason.contains("no such file or directory")
    ));
    assert!(
        m.daemon.sessions.contains(&id("b")),
        "a failed pane is kept"
    );
    assert_eq!(
        m.daemon.sessions.run_state(&id("parked")),
        RunState::Hibernated
    );
}

/// What the spawner announced, by name and session.
fn heard(m: &FakeMachine) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use crate::lifecycle::LifecycleEvent as E;
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = heard.clone();
    m.daemon.spawner.lifecycle.listen(move |e| {
        let line = match e {
            E::Started { session, .. } => format!("started {session}"),
            E::Woke { session } => format!("woke {session}"),
            E::Stopping { session, .. } => format!("stopping {session}"),
            E::Hibernated { session } => format!("hibernated {session}"),
            E::Exited { session, code } => format!("exited {session} {code}"),
            E::Failed { session } => format!("failed {session}"),
        };
        log.lock().unwrap().push(line);
    });
    heard
}

#[tokio::test(start_paused = true)]
async fn the_spawner_announces_a_sessions_start_wake_stop_hibernate_exit_and_failed_start() {
    let m = with_sessions(&["a", "b", "c"], &[]);
    m.os.script(
        "c",
        FakeProgram {
            fails_to_start: Some("permission denied".into()),
            ..FakeProgram::default()
        },
    );
    let heard = heard(&m);
    for s in ["a", "b", "c"] {
        m.daemon.spawner.wake_as(&id(s), Caller::Cli).await.unwrap();
    }
    m.daemon.spawner.hibernate_session(&id("a")).await.unwrap();
    m.os.exit(pid_of(&m, "b"), 7);
    until("b is exited", || {
        m.daemon.sessions.run_state(&id("b")) == RunState::Exited(7)
    })
    .await;
    assert_eq!(
        *heard.lock().unwrap(),
        [
            "started a",
            "woke a",
            "started b",
            "woke b",
            "failed c",
            "stopping a",
            "hibernated a",
            "exited b 7"
        ]
    );
}
