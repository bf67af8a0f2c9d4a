//! Issue 30, forks: `hangar fork` with the real daemon and
//! `hangar-fake-agent` as every CLI (it forks as the real ones do:
//! crates/fake-agent/README.md, Forks; the real CLIs are in
//! `real_cli_fork.rs`). A fork carries its parent's conversation on under
//! an id of its own, the parent's conversation is never written by it, and
//! each resumes its own after hibernate and restart (the resume ledger,
//! DESIGN.md rule 10).

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::git::{git, make_repo};
use support::*;

/// `hangar fork --json ARGS`.
fn fork(h: &Hangar, args: &[&str]) -> Value {
    let mut all = vec!["fork"];
    all.extend_from_slice(args);
    h.json(&all)
}

/// The command line of session `id`'s agent, from /proc.
fn args_of(h: &Hangar, id: &str) -> Vec<String> {
    cmdline(h.pid_of(id))
}

fn has_args(args: &[String], want: &[&str]) -> bool {
    args.windows(want.len()).any(|w| w == want)
}

/// Types `text` into `id` and waits for the fake's answer.
fn ask(h: &Hangar, id: &str, text: &str) {
    h.ok(&["send", id, text]);
    h.wait_screen(id, &format!("answer: {text}"));
}

fn hibernate_and_wake(h: &Hangar, id: &str) {
    h.ok(&["hibernate", id]);
    h.wait_state(id, "hibernated");
    h.ok(&["wake", id]);
    h.wait_state(id, "live");
}

/// The codex rollout of thread `psid` under the fixture's `CODEX_HOME`.
fn rollout(h: &Hangar, psid: &str) -> PathBuf {
    let mut stack = vec![h.codex_home.join("sessions")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(&format!("-{psid}.jsonl")) {
                return p;
            }
        }
    }
    panic!("no rollout of {psid}");
}

#[test]
fn a_claude_fork_carries_the_conversation_on_under_an_id_hangar_chose_and_each_resumes_its_own() {
    let h = Hangar::new();
    let parent = h.new_agent(&["--provider", "claude", "--title", "plan"]);
    h.wait_state(&parent, "live");
    ask(&h, &parent, "parent one");
    let parent_psid = h.wait_transcript_id(&parent);
    let parent_file = h.claude_transcript(&h.work, &parent_psid);
    let parent_before = fs::read(&parent_file).unwrap();

    let v = fork(&h, &[&parent]);
    let id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(v["forked_from"], parent.as_str());
    assert_eq!(v["handoff"], false);
    let row = h.wait_state(&id, "live");
    // hangar chose the fork's id before its first turn.
    let own = row["provider_session_id"].as_str().unwrap().to_owned();
    assert_ne!(own, parent_psid);
    assert_ne!(row["provider_session_source"], "proxy-header");
    assert_eq!(row["forked_from"], parent.as_str());
    assert_eq!(row["handoff"], false);
    assert_eq!(row["title"], "plan (fork)");
    assert!(
        has_args(
            &args_of(&h, &id),
            &[
                "--session-id",
                &own,
                "--resume",
                &parent_psid,
                "--fork-session"
            ]
        ),
        "{:?}",
        args_of(&h, &id)
    );
    h.wait_screen(&id, &format!("(forked from {parent_psid})"));
    // It opened in a split beside its parent.
    let tabs = h.json(&["tab", "ls"]);
    assert_eq!(tabs[0]["panes"].as_array().map(Vec::len), Some(2), "{tabs}");

    ask(&h, &id, "fork two");
    ask(&h, &parent, "parent three");
    let fork_file = h.claude_transcript(&h.work, &own);
    let fork_text = fs::read_to_string(&fork_file).unwrap();
    assert!(
        fork_text.contains("parent one"),
        "the fork holds the parent's turns"
    );
    assert!(fork_text.contains("fork two"));
    assert!(!fork_text.contains("parent three"));
    let parent_text = fs::read_to_string(&parent_file).unwrap();
    assert!(parent_text.starts_with(std::str::from_utf8(&parent_before).unwrap()));
    assert!(
        !parent_text.contains("fork two"),
        "the fork wrote into its parent"
    );
    assert_eq!(
        h.provider_id(&parent).0.as_deref(),
        Some(parent_psid.as_str())
    );
    assert_eq!(h.provider_id(&id).0.as_deref(), Some(own.as_str()));

    // After hibernate, each resumes its own conversation; the fork no longer forks.
    hibernate_and_wake(&h, &id);
    hibernate_and_wake(&h, &parent);
    let fork_args = args_of(&h, &id);
    assert!(has_args(&fork_args, &["--resume", &own]), "{fork_args:?}");
    assert!(!fork_args.iter().any(|a| a == "--fork-session"));
    assert!(has_args(&args_of(&h, &parent), &["--resume", &parent_psid]));

    // And after a restart.
    h.shutdown();
    h.start_daemon();
    h.wait_restore_complete();
    h.wait_state(&id, "live");
    h.wait_state(&parent, "live");
    assert!(has_args(&args_of(&h, &id), &["--resume", &own]));
    assert!(has_args(&args_of(&h, &parent), &["--resume", &parent_psid]));
    assert_eq!(h.session(&id)["forked_from"], parent.as_str());
    ask(&h, &id, "fork four");
    assert!(
        !fs::read_to_string(&parent_file)
            .unwrap()
            .contains("fork four")
    );
}

#[test]
fn a_fork_hibernated_before_its_first_turn_forks_again_under_the_same_id() {
    let h = Hangar::new();
    let parent = h.new_agent(&["--provider", "claude"]);
    h.wait_state(&parent, "live");
    ask(&h, &parent, "parent one");
    let parent_psid = h.wait_transcript_id(&parent);
    let id = fork(&h, &[&parent, "--parked"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(h.session(&id)["placement"], "parked");
    h.ok(&["wake", &id]);
    h.wait_state(&id, "live");
    let own = h.provider_id(&id).0.unwrap();
    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    // Claude writes a fork's transcript with its first turn: there is none
    // to resume yet, so the next start forks again, under the same id.
    assert!(!h.claude_transcript(&h.work, &own).exists());
    h.ok(&["wake", &id]);
    h.wait_state(&id, "live");
    assert!(has_args(
        &args_of(&h, &id),
        &[
            "--session-id",
            &own,
            "--resume",
            &parent_psid,
            "--fork-session"
        ]
    ));
    ask(&h, &id, "fork two");
    assert!(
        fs::read_to_string(h.claude_transcript(&h.work, &own))
            .unwrap()
            .contains("parent one")
    );
}

#[test]
fn a_codex_fork_adopts_only_the_rollout_its_own_process_holds_which_names_the_parent() {
    let h = Hangar::new();
    let parent = h.new_agent(&["--provider", "codex"]);
    h.wait_state(&parent, "live");
    ask(&h, &parent, "parent one");
    let parent_psid = h.wait_transcript_id(&parent);
    let parent_before = fs::read(rollout(&h, &parent_psid)).unwrap();

    let id = fork(&h, &[&parent])["id"].as_str().unwrap().to_owned();
    h.wait_state(&id, "live");
    assert!(has_args(&args_of(&h, &id), &["fork", &parent_psid]));
    // Its id is the one of the rollout its own process holds open.
    let own = h.wait_transcript_id(&id);
    assert_ne!(own, parent_psid);
    let first: Value = serde_json::from_str(
        fs::read_to_string(rollout(&h, &own))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["payload"]["forked_from_id"], parent_psid.as_str());
    ask(&h, &id, "fork two");
    assert_eq!(fs::read(rollout(&h, &parent_psid)).unwrap(), parent_before);

    hibernate_and_wake(&h, &id);
    let args = args_of(&h, &id);
    assert!(has_args(&args, &["resume", &own]), "{args:?}");
    assert!(!args.iter().any(|a| a == "fork"));
    assert_eq!(h.provider_id(&id).0.as_deref(), Some(own.as_str()));
    assert_eq!(
        h.provider_id(&parent).0.as_deref(),
        Some(parent_psid.as_str())
    );
}

#[test]
fn an_opencode_fork_gets_its_own_conversation_and_the_parent_never_takes_the_copy() {
    let h = Hangar::new();
    let parent = h.new_agent(&["--provider", "opencode"]);
    h.wait_state(&parent, "live");
    ask(&h, &parent, "parent one");
    let parent_psid = h.wait_transcript_id(&parent);

    let id = fork(&h, &[&parent])["id"].as_str().unwrap().to_owned();
    h.wait_state(&id, "live");
    assert!(has_args(
        &args_of(&h, &id),
        &["--session", &parent_psid, "--fork"]
    ));
    ask(&h, &id, "fork two");
    let own = h.wait_transcript_id(&id);
    assert_ne!(own, parent_psid);
    // The copy holds the parent's prompt too, and is newer: the parent
    // keeps its own conversation all the same.
    ask(&h, &parent, "parent three");
    assert_eq!(
        h.provider_id(&parent).0.as_deref(),
        Some(parent_psid.as_str())
    );
    hibernate_and_wake(&h, &id);
    let args = args_of(&h, &id);
    assert!(has_args(&args, &["--session", &own]), "{args:?}");
    assert!(!args.iter().any(|a| a == "--fork"));
    hibernate_and_wake(&h, &parent);
    assert!(has_args(
        &args_of(&h, &parent),
        &["--session", &parent_psid]
    ));
}

#[test]
fn a_fork_into_another_cli_starts_fresh_with_a_handoff_prompt_from_the_parents_transcript_and_diff()
{
    let h = Hangar::new();
    let repo = make_repo(&h);
    let parent = h.new_agent(&["--provider", "claude", "--cwd", repo.to_str().unwrap()]);
    h.wait_state(&parent, "live");
    ask(&h, &parent, "make the parser strict");
    fs::write(repo.join("parser.rs"), "fn strict() {}\n").unwrap();

    let v = fork(&h, &[&parent, "--provider", "codex"]);
    let id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(v["handoff"], true);
    let row = h.wait_state(&id, "live");
    assert_eq!(row["provider"], "codex");
    assert_eq!(row["forked_from"], parent.as_str());
    assert_eq!(row["handoff"], true);
    // A fresh codex (conversations do not move between CLIs) ...
    let args = args_of(&h, &id);
    assert!(
        !args.iter().any(|a| a == "fork" || a == "resume"),
        "{args:?}"
    );
    // ... told the task, the last messages and the files changed so far.
    let screen = h.wait_screen(&id, "answer: You are taking over");
    assert!(screen.contains("make the parser strict"), "{screen}");
    let own = h.wait_transcript_id(&id);
    let text = fs::read_to_string(rollout(&h, &own)).unwrap();
    assert!(text.contains("The task: make the parser strict"), "{text}");
    assert!(text.contains("parser.rs"), "{text}");
    // Typed once, never again after a restart.
    h.shutdown();
    h.start_daemon();
    h.wait_restore_complete();
    h.wait_state(&id, "live");
    ask(&h, &id, "carry on");
    let typed: Vec<String> = fs::read_to_string(rollout(&h, &own))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["payload"]["type"] == "user_message")
        .filter_map(|v| v["payload"]["message"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(typed.len(), 2, "{typed:?}");
    assert!(typed[0].starts_with("You are taking over"));
    assert_eq!(typed[1], "carry on");
}

#[test]
fn a_fork_with_a_worktree_gets_the_parents_uncommitted_state_and_leaves_the_parent_untouched() {
    let h = Hangar::new();
    let repo = make_repo(&h);
    let parent = h.new_agent(&["--provider", "claude", "--cwd", repo.to_str().unwrap()]);
    h.wait_state(&parent, "live");
    ask(&h, &parent, "parent one");
    let parent_psid = h.wait_transcript_id(&parent);
    // The parent's uncommitted work: staged, unstaged, untracked.
    fs::write(repo.join("file.txt"), "original\nstaged\n").unwrap();
    git(&repo, &["add", "file.txt"]);
    fs::write(repo.join("file.txt"), "original\nstaged\nunstaged\n").unwrap();
    fs::write(repo.join("notes.md"), "untracked\n").unwrap();
    let status = git(&repo, &["status", "--porcelain=v1"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let v = fork(&h, &[&parent, "--worktree", "try-two"]);
    let id = v["id"].as_str().unwrap().to_owned();
    let path = PathBuf::from(v["worktree"]["path"].as_str().unwrap());
    let row = h.wait_state(&id, "live");
    assert_eq!(row["cwd"], path.to_str().unwrap());
    assert_eq!(row["worktree"]["branch"], "try-two");
    assert_eq!(git(&path, &["status", "--porcelain=v1"]), status);
    assert_eq!(git(&path, &["show", ":file.txt"]), "original\nstaged\n");
    assert_eq!(
        fs::read_to_string(path.join("notes.md")).unwrap(),
        "untracked\n"
    );
    assert_eq!(git(&path, &["rev-parse", "HEAD"]), head);
    // The parent is as it was.
    assert_eq!(git(&repo, &["status", "--porcelain=v1"]), status);
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head);
    // Claude finds an id only in its own folder's project: from the
    // worktree it is given the parent's transcript by path.
    let parent_file = h.claude_transcript(&repo, &parent_psid);
    assert!(has_args(
        &args_of(&h, &id),
        &["--resume", parent_file.to_str().unwrap(), "--fork-session"]
    ));
    ask(&h, &id, "fork two");
    let own = h.provider_id(&id).0.unwrap();
    let fork_text = fs::read_to_string(h.claude_transcript(&path, &own)).unwrap();
    assert!(fork_text.contains("parent one"));
    assert!(
        !fs::read_to_string(&parent_file)
            .unwrap()
            .contains("fork two")
    );
}

#[test]
fn a_fork_is_refused_with_the_reason_and_nothing_is_made() {
    let h = Hangar::new();
    let repo = make_repo(&h);
    // A claude that never ran has no conversation to fork.
    let never = h.new_agent(&["--provider", "claude", "--parked"]);
    let err = h.fail(&["fork", &never]);
    assert!(err.contains("no conversation to fork yet"), "{err}");
    let fresh = h.new_agent(&["--provider", "claude", "--cwd", repo.to_str().unwrap()]);
    h.wait_state(&fresh, "live");
    // A shell has no conversation; it can only hand over.
    let shell = h.new_agent(&["--provider", "shell"]);
    let err = h.fail(&["fork", &shell]);
    assert!(err.contains("has no conversation to fork"), "{err}");
    // A worktree fork of a parent mid-merge.
    ask(&h, &fresh, "parent one");
    h.wait_transcript_id(&fresh);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    fs::write(repo.join(".git").join("MERGE_HEAD"), &head).unwrap();
    let before = h.ls().len();
    let err = h.fail(&["fork", &fresh, "--worktree", "never"]);
    assert!(err.contains("middle of a merge"), "{err}");
    assert_eq!(h.ls().len(), before);
    assert!(!git(&repo, &["branch", "--list", "never"]).contains("never"));
    assert!(
        !Path::new(&h.home.join("worktrees"))
            .join("work")
            .join("never")
            .exists()
    );
}
