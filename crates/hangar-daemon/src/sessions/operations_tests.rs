//! The named operations, in process: a wake's single flight and its
//! refusals, a spawn's end, the restore's progress, placement and a new
//! session's folder, removal, the views. No process is started and nothing
//! waits: each test runs in milliseconds on a store in a temporary folder.

use hangar_core::placement::PanePosition;
use hangar_core::{
    IdSource, Placement, Provider, ProviderSessionId, SessionId, SessionMeta, Tab, TabId, Workspace,
};
use hangar_protocol::message::codes;
use hangar_store::Store;

use super::*;

/// A workspace of one tab holding `ids` as panes, each an agent in `cwd`
/// with the provider session id given (durable), and its owner on a store
/// in `dir`.
fn sessions_with(dir: &std::path::Path, panes: &[(&str, Option<&str>)]) -> Sessions {
    let mut ws = Workspace::default();
    let tab = TabId::new("t1");
    ws.add_tab(Tab::new(tab.clone(), "main")).unwrap();
    for (id, psid) in panes {
        let mut meta = SessionMeta::new(
            SessionId::from(*id),
            Provider::Claude,
            dir.display().to_string(),
        );
        meta.provider_session = psid.map(|p| ProviderSessionId {
            id: p.to_owned(),
            source: Some(IdSource::Transcript),
        });
        ws.add_pane_session(meta, &tab, PanePosition::Auto).unwrap();
    }
    let opened = Store::open(&dir.join("state.db")).unwrap();
    let mut store = opened.store;
    store.save(&ws, &[]).unwrap();
    Sessions::new(ws, store, Vec::new())
}

fn id(s: &str) -> SessionId {
    SessionId::from(s)
}

#[test]
fn the_first_wake_marks_a_session_spawning_and_a_second_joins_it() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None)]);
    let (record, first) = sessions
        .wake_look(&id("a"), false, false, true, || false)
        .unwrap();
    assert!(record, "the first look is the wake's request");
    assert!(matches!(first, WakeLooked::Spawn(RunState::Hibernated)));
    assert_eq!(sessions.run_state(&id("a")), RunState::Spawning);

    let (_, second) = sessions
        .wake_look(&id("a"), false, false, true, || false)
        .unwrap();
    let WakeLooked::Join(changed) = second else {
        panic!("a second wake must join the spawn under way, not start another");
    };
    let mut pid_recorded = None;
    let state = sessions.finish_spawn(&id("a"), None, |pid| pid_recorded = Some(pid));
    assert_eq!(state, RunState::Live);
    assert_eq!(
        pid_recorded,
        Some(0),
        "journaled before the change, with no process here"
    );
    assert!(
        changed.has_changed().unwrap(),
        "the joined wake is woken by the change"
    );

    let (record, third) = sessions
        .wake_look(&id("a"), true, true, true, || false)
        .unwrap();
    assert!(!record);
    assert!(matches!(third, WakeLooked::Done(RunState::Live)));
}

#[test]
fn a_failed_spawn_is_reported_to_the_wake_that_joined_it() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None)]);
    sessions
        .wake_look(&id("a"), false, false, false, || false)
        .unwrap();
    let failed = sessions.finish_spawn(&id("a"), Some("no such program".into()), |_| {});
    assert_eq!(failed, RunState::Failed("no such program".into()));
    let (_, joined) = sessions
        .wake_look(&id("a"), true, true, false, || false)
        .unwrap();
    assert!(
        matches!(joined, WakeLooked::Done(RunState::Failed(ref r)) if r == "no such program"),
        "a joined wake reports the failure instead of spawning again"
    );
}

#[test]
fn waking_a_session_whose_duplicate_runs_is_refused_with_the_running_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", Some("conv")), ("b", Some("conv"))]);
    sessions
        .wake_look(&id("a"), false, false, true, || false)
        .unwrap();
    let e = match sessions.wake_look(&id("b"), false, false, true, || false) {
        Err(e) => e,
        Ok(_) => panic!("b shares a's conversation while a spawns"),
    };
    assert_eq!(e.code, codes::DUPLICATE);
    assert_eq!(e.detail["live"], "a");
    assert_eq!(sessions.run_state(&id("b")), RunState::Hibernated);
    // a itself, already spawning, is joined rather than refused.
    assert!(matches!(
        sessions.wake_look(&id("a"), false, false, true, || false),
        Ok((_, WakeLooked::Join(_)))
    ));
}

#[test]
fn a_persons_wake_behind_an_open_breaker_is_paused_and_marks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None)]);
    let (_, look) = sessions
        .wake_look(&id("a"), false, false, true, || true)
        .unwrap();
    assert!(matches!(look, WakeLooked::Paused));
    assert_eq!(sessions.run_state(&id("a")), RunState::Hibernated);
    // An agent's or a restore's wake waits in the queue instead.
    let (_, look) = sessions
        .wake_look(&id("a"), false, false, false, || true)
        .unwrap();
    assert!(matches!(look, WakeLooked::Spawn(_)));
    sessions.restore_run_state(&id("a"), RunState::Hibernated);
    assert_eq!(sessions.run_state(&id("a")), RunState::Hibernated);
}

#[test]
fn once_the_shutdown_began_no_wake_starts_and_a_second_shutdown_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None)]);
    assert_eq!(sessions.begin_shutdown().map(|l| l.len()), Some(0));
    assert!(sessions.shutting_down());
    let e = sessions
        .wake_look(&id("a"), false, false, true, || false)
        .err()
        .expect("refused");
    assert_eq!(e.code, codes::SHUTTING_DOWN);
    assert!(sessions.begin_shutdown().is_none());
    let missing = sessions
        .wake_look(&id("zz"), false, false, true, || false)
        .err()
        .expect("refused");
    assert_eq!(
        missing.code,
        codes::SHUTTING_DOWN,
        "the shutdown is said first"
    );
}

#[test]
fn a_restore_counts_its_panes_and_a_refused_one_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None), ("b", None), ("c", None)]);
    let forks = sessions.adopt_first_forks(vec![id("a"), id("b")]);
    assert_eq!(forks, vec![id("a"), id("b")]);
    let facts = sessions.status_facts();
    assert_eq!(
        facts.counts.spawning, 2,
        "awaiting a slot shows as spawning"
    );
    assert_eq!(sessions.count_hibernated(&forks), 1);
    assert_eq!(sessions.restore_hibernated(), Some(1));

    sessions.restore_outcome(&id("a"), RestoreOutcome::Ended(&RunState::Live));
    let refusal = ApiError::new(codes::DUPLICATE, "shares its conversation");
    sessions.restore_outcome(&id("b"), RestoreOutcome::Refused(&refusal));
    assert_eq!(
        sessions.run_state(&id("b")),
        RunState::Failed("shares its conversation".into())
    );
    let done = sessions.finish_restore(std::time::Instant::now());
    assert_eq!((done.restored, done.failed, done.finished), (1, 1, 2));
    let view = sessions.status_facts().restore;
    assert!(view.complete);
    assert!(!view.all_live);
    assert!(view.duration_ms.is_some());
}

#[test]
fn a_new_session_takes_the_folder_its_caller_checked_or_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[]);
    let folder = dir.path().join("project");
    std::fs::create_dir(&folder).unwrap();
    let folder = folder.display().to_string();
    sessions.add_tab("work", Some(folder.clone())).unwrap();
    let new = NewSession {
        place: NewPlace {
            tab: Some("work"),
            cwd: None,
            fallback_cwd: Some("/elsewhere"),
        },
        provider: Provider::Shell,
        title: Some("build"),
        now_ms: 42,
        capture: true,
        mcp: false,
        parked: false,
        split: None,
    };
    assert_eq!(sessions.new_session_folder(&new.place).unwrap(), folder);
    // The tab's folder is not what the caller looked at: nothing is added.
    let before = sessions.ids().len();
    match sessions.add_session(&new, "/elsewhere", |_| {}).unwrap() {
        Added::Recheck(other) => assert_eq!(other, folder),
        Added::Session(_) => panic!("added with a folder nobody checked"),
    }
    assert_eq!(sessions.ids().len(), before);
    let Added::Session(made) = sessions
        .add_session(&new, &folder, |m| m.title.push('!'))
        .unwrap()
    else {
        panic!("the checked folder is the one it gets");
    };
    let meta = sessions.meta(&made).unwrap();
    assert_eq!(
        (meta.cwd.as_str(), meta.title.as_str()),
        (folder.as_str(), "build!")
    );
    assert_eq!(meta.last_active_ms, 42);
    let row = sessions.view(&made).unwrap();
    assert_eq!(row.placement, "pane");
}

#[test]
fn park_and_unpark_move_a_pane_and_are_saved() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None), ("b", None)]);
    let (parked, tab) = sessions.park("a", 7).unwrap();
    assert_eq!(parked, id("a"));
    assert_eq!(
        sessions.facts(&[id("a")])[0].placement,
        Some(Placement::Parked)
    );
    let (_, back) = sessions
        .unpark("a", None, Some("b"), || {
            Ok(hangar_core::Direction::Horizontal)
        })
        .unwrap();
    assert_eq!(back, tab, "beside b, in b's tab");
    let again = Store::open(&dir.path().join("state.db")).unwrap();
    assert!(
        again
            .workspace
            .tab(&tab)
            .unwrap()
            .leaves()
            .contains(&id("a")),
        "saved"
    );
}

#[test]
fn an_unpark_beside_an_unknown_session_names_it_before_the_direction() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None)]);
    sessions.park("a", 7).unwrap();
    let e = sessions
        .unpark("a", None, Some("nope"), || {
            Err(ApiError::invalid("bad direction"))
        })
        .unwrap_err();
    assert_ne!(e.message, "bad direction");
}

#[test]
fn removed_sessions_are_gone_from_the_model_the_store_and_the_runtimes() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = sessions_with(dir.path(), &[("a", None), ("b", None)]);
    sessions
        .wake_look(&id("a"), false, false, false, || false)
        .unwrap();
    let mut seen = 0;
    sessions
        .remove_sessions(&[id("a")], |ws| seen = ws.sessions.len())
        .unwrap();
    assert_eq!(seen, 2, "the hook sees the model before the removal");
    assert!(!sessions.contains(&id("a")));
    assert_eq!(
        sessions.run_state(&id("a")),
        RunState::Hibernated,
        "its runtime is gone"
    );
    let again = Store::open(&dir.path().join("state.db")).unwrap();
    assert!(!again.workspace.sessions.contains_key(&id("a")));
    assert!(again.workspace.sessions.contains_key(&id("b")));
}

#[test]
fn a_rows_worktree_says_whether_its_folder_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let mut ws = Workspace::default();
    let tab = TabId::new("t1");
    ws.add_tab(Tab::new(tab.clone(), "main")).unwrap();
    for (name, path) in [
        ("here", dir.path().display().to_string()),
        ("gone", "/no/such/folder".into()),
    ] {
        let mut meta = SessionMeta::new(id(name), Provider::Shell, "/");
        meta.worktree = Some(Box::new(hangar_core::worktree::WorktreeInfo {
            path,
            branch: "b".into(),
            base: "main".into(),
            repo_root: "/".into(),
            created_by_hangar: true,
        }));
        ws.add_pane_session(meta, &tab, PanePosition::Auto).unwrap();
    }
    let opened = Store::open(&dir.path().join("state.db")).unwrap();
    let sessions = Sessions::new(ws, opened.store, Vec::new());
    let exists = |name: &str| sessions.view(&id(name)).unwrap().worktree.unwrap().exists;
    assert!(exists("here"));
    assert!(!exists("gone"));
    let rows = sessions.views();
    assert_eq!(
        rows.iter()
            .filter(|r| r.worktree.as_ref().is_some_and(|w| w.exists))
            .count(),
        1
    );
}
