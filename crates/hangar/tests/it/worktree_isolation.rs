//! Issue 12 acceptance: each agent in its own git worktree, created on demand
//! and never lost. Every test makes a real git repository in its temp folder
//! and drives shell sessions (`/bin/sh`) that write files in their cwd.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::git::{git, make_repo};
use support::*;

fn worktree_of(h: &Hangar, id: &str) -> Value {
    let row = h.session(id);
    let wt = row["worktree"].clone();
    assert!(wt.is_object(), "session {id} has a worktree in ls: {row}");
    assert_eq!(row["cwd"], wt["path"], "the session runs in its worktree");
    wt
}

fn path_of(wt: &Value) -> PathBuf {
    PathBuf::from(wt["path"].as_str().expect("worktree path"))
}

fn cwd_of_pid(pid: i32) -> PathBuf {
    fs::read_link(format!("/proc/{pid}/cwd")).expect("readable cwd")
}

fn wait_file(h: &Hangar, path: &Path, content: &str) {
    h.wait_until(
        &format!("{} holds {content:?}", path.display()),
        DEADLINE,
        || fs::read_to_string(path).is_ok_and(|t| t.trim() == content),
    );
}

#[test]
fn two_agents_with_worktrees_edit_the_same_file_without_touching_the_main_checkout() {
    let h = Hangar::new();
    let repo = make_repo(&h);
    let a = h.new_agent(&["--provider", "shell", "--worktree", "--title", "Alpha work"]);
    let b = h.new_agent(&["--provider", "shell", "--worktree", "--title", "Alpha work"]);
    h.wait_state(&a, "live");
    h.wait_state(&b, "live");

    let wa = worktree_of(&h, &a);
    let wb = worktree_of(&h, &b);
    assert_eq!(wa["branch"], "alpha-work");
    assert_eq!(
        wb["branch"], "alpha-work-2",
        "the second name is made unique"
    );
    assert_eq!(wa["base"], "main");
    let (pa, pb) = (path_of(&wa), path_of(&wb));
    assert!(
        pa.starts_with(h.home.join("worktrees").join("work")),
        "default folder is $HANGAR_HOME/worktrees/<repo>/<branch>: {}",
        pa.display()
    );
    assert_eq!(
        cwd_of_pid(h.pid_of(&a)),
        pa,
        "the agent process runs in its worktree"
    );
    assert_eq!(cwd_of_pid(h.pid_of(&b)), pb);

    h.ok(&["send", &a, "echo from-a > file.txt"]);
    h.ok(&["send", &b, "echo from-b > file.txt"]);
    wait_file(&h, &pa.join("file.txt"), "from-a");
    wait_file(&h, &pb.join("file.txt"), "from-b");

    assert_eq!(
        fs::read_to_string(repo.join("file.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "main checkout untouched"
    );
    assert_eq!(
        git(&repo, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
    h.wait_until("ls reports both worktrees dirty", DEADLINE, || {
        [&a, &b]
            .iter()
            .all(|id| h.session(id)["worktree"]["dirty"] == true)
    });
    let wa = worktree_of(&h, &a);
    assert_eq!(
        (wa["ahead"].as_u64(), wa["behind"].as_u64()),
        (Some(0), Some(0))
    );
}

#[test]
fn a_worktree_outside_a_repository_is_a_clear_error() {
    let h = Hangar::new();
    let err = h.fail(&["new", "--provider", "shell", "--worktree"]);
    assert!(err.contains("not inside one"), "{err}");
    assert!(h.ls().is_empty(), "no session was created");
}

#[test]
fn worktreeinclude_copies_env_and_a_failing_setup_command_marks_the_session_failed() {
    let h = Hangar::new();
    let repo = make_repo(&h);
    fs::write(repo.join(".env"), "TOKEN=secret-42\n").unwrap();
    fs::write(repo.join(".worktreeinclude"), "# local settings\n.env\n").unwrap();
    fs::create_dir_all(&h.home).unwrap();
    fs::write(
        h.home.join("config.toml"),
        "[worktree]\nsetup_command = \"echo preparing; cat .env; exit 7\"\n",
    )
    .unwrap();

    let id = h.new_agent(&["--provider", "shell", "--worktree", "feature/setup"]);
    let row = h.wait_state(&id, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("exit code 7"), "{reason}");
    assert!(
        reason.contains("preparing"),
        "the setup output is shown: {reason}"
    );
    assert!(
        reason.contains("TOKEN=secret-42"),
        ".env was copied before the setup ran: {reason}"
    );
    assert!(row["pid"].is_null(), "the agent was not started");
    let wt = worktree_of(&h, &id);
    assert_eq!(wt["branch"], "feature/setup");
    let path = path_of(&wt);
    assert_eq!(
        fs::read_to_string(path.join(".env")).unwrap(),
        "TOKEN=secret-42\n"
    );
    assert!(path.ends_with("feature-setup"), "{}", path.display());
}

#[test]
fn closing_a_dirty_worktree_keeps_it_and_a_clean_one_is_removed_keeping_its_branch() {
    let h = Hangar::new();
    let repo = make_repo(&h);
    let dirty = h.new_agent(&["--provider", "shell", "--worktree", "--title", "dirty"]);
    let clean = h.new_agent(&["--provider", "shell", "--worktree", "--title", "clean"]);
    let gone = h.new_agent(&["--provider", "shell", "--worktree", "--title", "gone"]);
    for id in [&dirty, &clean, &gone] {
        h.wait_state(id, "live");
    }
    let dirty_path = path_of(&worktree_of(&h, &dirty));
    let clean_path = path_of(&worktree_of(&h, &clean));
    let gone_path = path_of(&worktree_of(&h, &gone));
    h.ok(&["send", &dirty, "echo work > notes.txt"]);
    wait_file(&h, &dirty_path.join("notes.txt"), "work");

    let closed = h.json(&["close", &dirty]);
    let kept = closed["kept_worktrees"].as_array().expect("kept list");
    assert_eq!(kept.len(), 1, "{closed}");
    assert_eq!(kept[0]["id"], dirty.as_str());
    assert_eq!(kept[0]["path"], dirty_path.display().to_string());
    assert!(
        kept[0]["reason"].as_str().unwrap().contains("uncommitted"),
        "{closed}"
    );
    assert!(
        dirty_path.join("notes.txt").is_file(),
        "the work is still there"
    );
    let human = h.ok(&["close", &clean]);
    assert!(human.contains("removed worktree"), "{human}");
    assert!(!clean_path.exists(), "a clean worktree is removed");
    assert!(
        git(&repo, &["branch", "--list", "clean"]).contains("clean"),
        "its branch is kept"
    );

    let closed = h.json(&["close", &gone, "--delete-branch"]);
    assert_eq!(
        closed["removed_worktrees"][0]["branch_deleted"], true,
        "{closed}"
    );
    assert!(!gone_path.exists());
    assert_eq!(git(&repo, &["branch", "--list", "gone"]), "");

    // The kept worktree is still known after its session closed.
    let list = h.json(&["worktrees"]);
    let rows = list["worktrees"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(rows[0]["state"], "dirty");
    assert_eq!(rows[0]["session_alive"], false);
    let pruned = h.json(&["worktrees", "--prune"]);
    assert_eq!(
        pruned["removed"],
        serde_json::json!([]),
        "dirty work is never pruned"
    );
    assert!(dirty_path.join("notes.txt").is_file());

    // Once the work is committed and merged it is clean: prune removes it.
    git(&dirty_path, &["add", "."]);
    git(&dirty_path, &["commit", "-q", "-m", "notes"]);
    assert_eq!(h.json(&["worktrees"])["worktrees"][0]["state"], "unpushed");
    git(&repo, &["merge", "-q", "--ff-only", "dirty"]);
    let pruned = h.json(&["worktrees", "--prune"]);
    assert_eq!(
        pruned["removed"],
        serde_json::json!([dirty_path.display().to_string()])
    );
    assert!(!dirty_path.exists());
    assert_eq!(h.json(&["worktrees"])["worktrees"], serde_json::json!([]));
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

#[test]
fn restore_starts_each_agent_in_its_worktree_and_one_removed_by_hand_fails_with_a_reason() {
    let h = Hangar::new();
    make_repo(&h);
    h.start_daemon();
    let keep = h.new_agent(&["--provider", "shell", "--worktree", "--title", "keep"]);
    let lost = h.new_agent(&["--provider", "shell", "--worktree", "--title", "lost"]);
    h.wait_state(&keep, "live");
    h.wait_state(&lost, "live");
    let keep_path = path_of(&worktree_of(&h, &keep));
    let lost_path = path_of(&worktree_of(&h, &lost));

    // Hibernate and wake keep the agent in its worktree.
    h.ok(&["hibernate", &keep]);
    h.ok(&["wake", &keep]);
    assert_eq!(cwd_of_pid(h.pid_of(&keep)), keep_path);

    h.shutdown();
    fs::remove_dir_all(&lost_path).unwrap();
    h.start_daemon();

    h.wait_state(&keep, "live");
    assert_eq!(
        cwd_of_pid(h.pid_of(&keep)),
        keep_path,
        "restored in its worktree"
    );
    let row = h.wait_state(&lost, "failed");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("deleted by hand"), "{reason}");
    assert!(
        reason.contains(&lost_path.display().to_string()),
        "{reason}"
    );
    assert_eq!(row["worktree"]["exists"], false);
    assert!(row["worktree"]["dirty"].is_null());

    // Waking it again reports the same, and never recreates it elsewhere.
    let err = h.fail(&["wake", &lost]);
    assert!(err.contains("deleted by hand"), "{err}");
    assert!(!lost_path.exists(), "never recreated");
    assert_eq!(h.session(&lost)["cwd"], lost_path.display().to_string());
}

#[test]
fn worktreeinclude_skips_a_file_git_does_not_ignore_so_the_clean_worktree_is_removed_on_close() {
    let h = Hangar::new();
    let repo = make_repo(&h);
    // This repository does not ignore `.env`: it would show as untracked.
    fs::write(repo.join(".gitignore"), "*.log\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "stop ignoring .env"]);
    fs::write(repo.join(".env"), "TOKEN=secret-42\n").unwrap();
    fs::write(repo.join(".worktreeinclude"), ".env\n").unwrap();

    let id = h.new_agent(&["--provider", "shell", "--worktree", "--title", "plain"]);
    h.wait_state(&id, "live");
    let path = path_of(&worktree_of(&h, &id));
    assert!(
        !path.join(".env").exists(),
        "only files git ignores are copied"
    );
    assert_eq!(
        git(&path, &["status", "--porcelain"]),
        "",
        "the worktree is clean"
    );

    let closed = h.json(&["close", &id]);
    assert_eq!(closed["kept_worktrees"], serde_json::json!([]), "{closed}");
    assert_eq!(
        closed["removed_worktrees"][0]["path"],
        path.display().to_string(),
        "{closed}"
    );
    assert!(!path.exists(), "the clean worktree is removed");
}
