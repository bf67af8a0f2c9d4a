//! Issue 30 acceptance: review an agent's work (`hangar diff`, `hangar
//! review`) and land it (`hangar finish`), with the real git in temporary
//! repositories. The agents are shells (`/bin/sh`) in their own worktrees;
//! the test makes the agent's changes itself, in the worktree's folder, as
//! an agent would.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::git::{git, make_repo};
use support::*;

/// A fixture whose daemon (and so its git) has an identity to commit with.
fn hangar() -> Hangar {
    Hangar::with_env(&[
        ("GIT_AUTHOR_NAME", "hangar test"),
        ("GIT_AUTHOR_EMAIL", "test@hangar.invalid"),
        ("GIT_COMMITTER_NAME", "hangar test"),
        ("GIT_COMMITTER_EMAIL", "test@hangar.invalid"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ])
}

/// A shell session in its own worktree of the fixture's repository.
fn agent_in_worktree(h: &Hangar, title: &str) -> (String, PathBuf) {
    let id = h.new_agent(&["--provider", "shell", "--worktree", "--title", title]);
    h.wait_state(&id, "live");
    let row = h.session(&id);
    let path = PathBuf::from(row["worktree"]["path"].as_str().expect("a worktree path"));
    (id, path)
}

fn rev(dir: &Path, r: &str) -> String {
    git(dir, &["rev-parse", r]).trim().to_owned()
}

fn commit_file(dir: &Path, name: &str, text: &str, message: &str) {
    fs::write(dir.join(name), text).unwrap();
    git(dir, &["add", "--", name]);
    git(dir, &["commit", "-q", "-m", message]);
}

fn backup_refs(dir: &Path) -> String {
    git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/hangar/",
        ],
    )
}

fn all_refs(dir: &Path) -> String {
    git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

fn file_named<'a>(v: &'a Value, path: &str) -> &'a Value {
    v["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not among the files: {v}"))
}

#[test]
fn diff_lists_commits_staged_unstaged_untracked_binary_renamed_deleted_and_exec_files_without_touching_the_index()
 {
    let h = hangar();
    let repo = make_repo(&h);
    fs::write(repo.join("old name.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    fs::write(repo.join("gone.txt"), "a\nb\nc\n").unwrap();
    fs::write(repo.join("run.sh"), "echo hi\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "more files"]);
    let main_at = rev(&repo, "main");
    let (id, wt) = agent_in_worktree(&h, "diff all kinds");

    // A commit, then staged, unstaged and untracked changes.
    commit_file(&wt, "file.txt", "changed by a commit\n", "agent commit");
    fs::write(wt.join("staged.txt"), "staged\n").unwrap();
    git(&wt, &["add", "staged.txt"]);
    fs::write(wt.join("file.txt"), "changed by a commit\nand unstaged\n").unwrap();
    fs::write(wt.join("new.txt"), "untracked line\n").unwrap();
    fs::write(
        wt.join("image.bin"),
        b"\x89PNG\r\n\x1a\n\0\0\0binary\xff\xfe",
    )
    .unwrap();
    git(&wt, &["mv", "old name.txt", "new name.txt"]);
    git(&wt, &["rm", "-q", "gone.txt"]);
    fs::set_permissions(wt.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(wt.join(".env"), "SECRET=1\n").unwrap();

    let index = PathBuf::from(
        git(
            &wt,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        )
        .trim(),
    );
    let index_before = fs::read(&index).unwrap();
    let status_before = git(&wt, &["status", "--porcelain"]);

    let v = h.json(&["diff", &id]);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["base", "files", "head", "merge_base", "patch"],
        "{v}"
    );
    assert_eq!(v["base"], "main");
    assert_eq!(v["merge_base"], main_at.as_str());
    assert_eq!(v["head"], rev(&wt, "HEAD").as_str());

    let f = file_named(&v, "file.txt");
    assert_eq!(f["status"], "modified");
    assert_eq!(
        (f["additions"].as_u64(), f["deletions"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(file_named(&v, "staged.txt")["status"], "added");
    assert_eq!(file_named(&v, "new.txt")["status"], "added");
    let bin = file_named(&v, "image.bin");
    assert_eq!(bin["binary"], true);
    assert_eq!(bin["additions"], 0);
    let renamed = file_named(&v, "new name.txt");
    assert_eq!(renamed["status"], "renamed");
    assert_eq!(renamed["old_path"], "old name.txt");
    assert_eq!(file_named(&v, "gone.txt")["status"], "deleted");
    assert_eq!(file_named(&v, "run.sh")["status"], "modified");
    let row_keys: Vec<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        row_keys,
        [
            "additions",
            "binary",
            "deletions",
            "old_path",
            "path",
            "status"
        ]
    );
    assert!(
        !v["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == ".env"),
        "an ignored file is no change: {v}"
    );

    let patch = v["patch"].as_str().unwrap();
    assert!(patch.contains("+untracked line"), "{patch}");
    assert!(patch.contains("+and unstaged"), "{patch}");
    assert!(
        patch.contains("Binary files"),
        "a binary file is named: {patch}"
    );
    assert!(
        !patch.contains("PNG"),
        "a binary file is not dumped: {patch}"
    );
    assert!(patch.contains("new mode 100755"), "{patch}");

    assert_eq!(
        fs::read(&index).unwrap(),
        index_before,
        "the real index is never written"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), status_before);

    let stat = h.json(&["diff", &id, "--stat"]);
    assert!(stat["patch"].is_null(), "--stat has no patch: {stat}");
    assert_eq!(stat["files"], v["files"]);

    let human = h.ok(&["diff", &id]);
    assert!(human.contains("new name.txt"), "{human}");
    assert!(human.contains("image.bin | binary"), "{human}");

    // Against another base.
    let v = h.json(&["diff", &id, "--base", "HEAD"]);
    assert_eq!(v["base"], "HEAD");
    let f = file_named(&v, "file.txt");
    assert_eq!(
        (f["additions"].as_u64(), f["deletions"].as_u64()),
        (Some(1), Some(0)),
        "only the uncommitted line"
    );
}

#[test]
fn a_session_without_a_worktree_diffs_against_the_head_at_its_start() {
    let h = hangar();
    let repo = make_repo(&h);
    let start = rev(&repo, "HEAD");
    let id = h.new_agent(&["--provider", "shell"]);
    h.wait_state(&id, "live");
    commit_file(&repo, "later.txt", "later\n", "work on main itself");
    let v = h.json(&["diff", &id]);
    assert_eq!(v["base"], start.as_str(), "{v}");
    assert_eq!(v["merge_base"], start.as_str());
    assert_eq!(file_named(&v, "later.txt")["status"], "added");
}

#[test]
fn a_hostile_file_name_is_escaped_in_human_output_and_json() {
    let h = hangar();
    make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "hostile");
    let evil = "evil\x1b]0;pwned\x07\x1b[31mred\u{202e}.txt";
    fs::write(wt.join(evil), "x\n").unwrap();
    for args in [
        vec!["diff", id.as_str()],
        vec!["--json", "diff", id.as_str()],
    ] {
        let out = h.run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.stdout.contains(&0x1b),
            "no raw escape reaches the terminal ({args:?})"
        );
        assert!(!out.stdout.contains(&0x07));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains('\u{202e}'), "no bidi override ({args:?})");
        assert!(text.contains("evil"), "{text}");
    }
    let v = h.json(&["diff", &id]);
    assert!(
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == evil),
        "{v}"
    );
}

#[test]
fn ten_thousand_files_list_and_their_patch_comes_in_pages() {
    let h = hangar();
    make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "many files");
    let dir = wt.join("many");
    fs::create_dir_all(&dir).unwrap();
    for i in 0..10_000 {
        fs::write(dir.join(format!("f{i:05}.txt")), format!("line {i}\n")).unwrap();
    }
    // What the repository holds, loose and packed: a diff only reads.
    let objects = || {
        let v = git(&wt, &["count-objects", "-v"]);
        let n = |key: &str| -> u64 {
            v.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {v}"))
        };
        n("count:") + n("in-pack:")
    };
    let before = objects();
    let stat = h.json(&["diff", &id, "--stat"]);
    assert_eq!(stat["files"].as_array().unwrap().len(), 10_000);
    let v = h.json(&["diff", &id]);
    let patch = v["patch"].as_str().unwrap();
    assert_eq!(
        patch.matches("diff --git ").count(),
        10_000,
        "every page is joined once"
    );
    assert!(patch.contains("+line 0\n") && patch.contains("+line 9999\n"));
    // Regression: the first diff wrote a blob for each of the 10,000 files
    // (6x `git diff --stat`'s time, and the person's object store grew).
    // At most the empty blob, which git's intent-to-add entries name.
    let written = objects() - before;
    assert!(
        written <= 1,
        "the diff wrote {written} objects into the repository"
    );
}

#[test]
fn finish_merges_a_clean_branch_by_fast_forwarding_the_clean_main_checkout() {
    let h = hangar();
    let repo = make_repo(&h);
    let main_before = rev(&repo, "main");
    let (id, wt) = agent_in_worktree(&h, "clean merge");
    commit_file(&wt, "feature.txt", "feature\n", "add a feature");
    let tip = rev(&wt, "HEAD");

    let v = h.json(&["finish", &id]);
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(v["move"]["how"], "fast-forward-checkout");
    assert_eq!(rev(&repo, "main"), tip, "a fast-forward");
    assert_eq!(
        fs::read_to_string(repo.join("feature.txt")).unwrap(),
        "feature\n",
        "the checkout followed"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let backups = backup_refs(&repo);
    assert!(
        backups.contains(&format!("/heads/main {main_before}")),
        "a backup ref of main: {backups}"
    );
    let j = h.journal();
    let fin = j
        .iter()
        .find(|e| e["event"] == "finish")
        .expect("a finish event");
    assert_eq!(fin["refs"][0]["ref"], "refs/heads/main");
    assert_eq!(fin["refs"][0]["old"], main_before.as_str());
    assert_eq!(fin["refs"][0]["new"], tip.as_str());
    h.wait_until("the session is closed", DEADLINE, || {
        !h.ls().iter().any(|s| s["id"] == id.as_str())
    });
    assert!(!wt.exists(), "the landed worktree is removed");
}

#[test]
fn finish_squash_makes_one_commit_on_a_moved_target() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "squash me");
    commit_file(&wt, "a.txt", "a\n", "one");
    commit_file(&wt, "b.txt", "b\n", "two");
    commit_file(&repo, "main-only.txt", "m\n", "main moved");
    let main_before = rev(&repo, "main");

    let v = h.json(&["finish", &id, "--squash", "--message", "Squashed work"]);
    assert_eq!(v["landed"], true, "{v}");
    let new = rev(&repo, "main");
    assert_eq!(
        rev(&repo, "main^"),
        main_before,
        "one commit on top of main"
    );
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", "main"]).trim(),
        "Squashed work"
    );
    for f in ["a.txt", "b.txt", "main-only.txt"] {
        assert!(repo.join(f).is_file(), "{f} is in the main checkout");
    }
    assert_eq!(v["commit"], new.as_str());
    h.wait_until("the session is closed", DEADLINE, || {
        !h.ls().iter().any(|s| s["id"] == id.as_str())
    });
    assert!(
        !wt.exists(),
        "a squashed worktree holds nothing unlanded and is removed"
    );
}

#[test]
fn finish_rebase_replays_each_commit_with_its_author_and_keeps_the_session_when_asked() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "rebase me");
    commit_file(&wt, "a.txt", "a\n", "first agent commit");
    git(
        &wt,
        &[
            "-c",
            "user.name=Agent Author",
            "-c",
            "user.email=agent@x.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "second agent commit",
        ],
    );
    commit_file(&repo, "main-only.txt", "m\n", "main moved");
    let main_before = rev(&repo, "main");

    let v = h.json(&["finish", &id, "--rebase", "--keep-session"]);
    assert_eq!(v["landed"], true, "{v}");
    let log = git(
        &repo,
        &["log", "--format=%s|%an", &format!("{main_before}..main")],
    );
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "second agent commit|Agent Author",
            "first agent commit|hangar test"
        ],
        "linear, in order, authors kept"
    );
    assert_eq!(rev(&repo, "main~2"), main_before);
    assert!(
        h.ls().iter().any(|s| s["id"] == id.as_str()),
        "--keep-session keeps it"
    );
    assert_eq!(
        rev(&wt, "HEAD"),
        rev(&repo, "main"),
        "the agent goes on from the landed commits"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert!(
        backup_refs(&repo).lines().count() >= 2,
        "main and the agent's branch are backed up"
    );
}

#[test]
fn conflicts_change_nothing_and_name_the_files() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "conflicting");
    commit_file(&wt, "file.txt", "agent version\n", "agent edit");
    commit_file(&repo, "file.txt", "main version\n", "main edit");
    let refs = all_refs(&repo);
    let wt_head = rev(&wt, "HEAD");

    let e = h.fail(&["finish", &id]);
    assert!(e.contains("conflict") && e.contains("file.txt"), "{e}");
    assert!(e.contains("--resolve"), "says what to do next: {e}");
    assert_eq!(all_refs(&repo), refs, "no ref moved, no backup made");
    assert_eq!(rev(&wt, "HEAD"), wt_head);
    assert_eq!(
        fs::read_to_string(repo.join("file.txt")).unwrap(),
        "main version\n"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(
        h.ls().iter().any(|s| s["id"] == id.as_str()),
        "the session stays"
    );
}

#[test]
fn a_dirty_target_checkout_is_refused_with_nothing_touched() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "dirty target");
    commit_file(&wt, "feature.txt", "feature\n", "feature");
    fs::write(repo.join("file.txt"), "a person's unsaved work\n").unwrap();
    let refs = all_refs(&repo);

    let e = h.fail(&["finish", &id]);
    assert!(
        e.contains("uncommitted") && e.contains(repo.to_str().unwrap()),
        "{e}"
    );
    assert_eq!(all_refs(&repo), refs);
    assert_eq!(
        fs::read_to_string(repo.join("file.txt")).unwrap(),
        "a person's unsaved work\n"
    );
    assert!(!repo.join("feature.txt").exists());
    assert!(wt.exists());
}

#[test]
fn a_target_checked_out_in_another_worktree_is_fast_forwarded_there_and_an_unchecked_one_moves_alone()
 {
    let h = hangar();
    let repo = make_repo(&h);
    git(&repo, &["branch", "release"]);
    git(&repo, &["branch", "dev"]);
    let other = h.root.join("release-checkout");
    git(
        &repo,
        &["worktree", "add", "-q", other.to_str().unwrap(), "release"],
    );
    let (id, wt) = agent_in_worktree(&h, "to release");
    commit_file(&wt, "feature.txt", "feature\n", "feature");
    let tip = rev(&wt, "HEAD");
    let main_before = rev(&repo, "main");

    let v = h.json(&["finish", &id, "--into", "release", "--keep-session"]);
    assert_eq!(v["move"]["how"], "fast-forward-checkout", "{v}");
    assert_eq!(v["move"]["path"], other.to_str().unwrap());
    assert_eq!(rev(&repo, "release"), tip);
    assert!(
        other.join("feature.txt").is_file(),
        "the release checkout followed"
    );
    assert_eq!(rev(&repo, "main"), main_before, "main untouched");
    assert!(!repo.join("feature.txt").exists());

    let v = h.json(&["finish", &id, "--into", "dev", "--keep-session"]);
    assert_eq!(v["move"]["how"], "ref-only", "{v}");
    assert_eq!(rev(&repo, "dev"), tip);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

#[test]
fn uncommitted_work_is_refused_unless_commit_is_given() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "Uncommitted work");
    fs::write(wt.join("draft.txt"), "draft\n").unwrap();
    let refs = all_refs(&repo);
    let e = h.fail(&["finish", &id]);
    assert!(e.contains("1 uncommitted") && e.contains("--commit"), "{e}");
    assert_eq!(all_refs(&repo), refs);

    let v = h.json(&["finish", &id, "--commit"]);
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(v["committed"], true);
    assert!(repo.join("draft.txt").is_file());
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", "main"]).trim(),
        "Uncommitted work"
    );
}

#[test]
fn a_submodule_is_refused_with_a_reason() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "submodule");
    let head = rev(&wt, "HEAD");
    git(
        &wt,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},vendor/lib"),
        ],
    );
    git(&wt, &["commit", "-q", "-m", "add a submodule"]);
    let refs = all_refs(&repo);
    let e = h.fail(&["finish", &id]);
    assert!(e.contains("submodule"), "{e}");
    assert_eq!(all_refs(&repo), refs);
}

#[test]
fn dry_run_changes_nothing_and_says_what_would_happen() {
    let h = hangar();
    let repo = make_repo(&h);
    let (id, wt) = agent_in_worktree(&h, "dry");
    commit_file(&wt, "feature.txt", "feature\n", "feature");
    let refs = all_refs(&repo);
    let v = h.json(&["finish", &id, "--squash", "--dry-run"]);
    assert_eq!(v["dry_run"], true, "{v}");
    assert_eq!(v["commits"], 1);
    assert_eq!(v["strategy"], "squash");
    assert_eq!(all_refs(&repo), refs);
    assert!(h.ls().iter().any(|s| s["id"] == id.as_str()));
    assert!(wt.exists());
    assert!(!h.journal().iter().any(|e| e["event"] == "finish"));
}

#[test]
fn pr_pushes_the_branch_and_runs_gh_and_says_what_is_missing() {
    let mut h = hangar();
    let repo = make_repo(&h);
    // A stand-in `gh` that records its arguments, one per line.
    let bin = h.root.join("gh-bin");
    fs::create_dir_all(&bin).unwrap();
    let args_file = h.root.join("gh-args");
    let gh = bin.join("gh");
    fs::write(
        &gh,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\necho https://example.invalid/pr/1\n",
            args_file.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&gh, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        h.env_var("PATH").unwrap_or_default()
    );
    h.set_env("PATH", path);

    let (id, wt) = agent_in_worktree(&h, "Open a PR");
    commit_file(&wt, "feature.txt", "feature\n", "feature");
    let branch = git(&wt, &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_owned();

    let e = h.fail(&["finish", &id, "--pr"]);
    assert!(e.contains("remote"), "no remote is named as missing: {e}");
    assert!(!args_file.exists(), "gh is not run without a remote");

    let remote = h.root.join("remote.git");
    git(&h.root, &["init", "-q", "--bare", remote.to_str().unwrap()]);
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let main_before = rev(&repo, "main");
    let v = h.json(&["finish", &id, "--pr"]);
    assert_eq!(v["url"], "https://example.invalid/pr/1", "{v}");
    assert_eq!(
        rev(&remote, &format!("refs/heads/{branch}")),
        rev(&wt, "HEAD"),
        "pushed"
    );
    let args = fs::read_to_string(&args_file).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(&args[..2], ["pr", "create"]);
    assert_eq!(
        arg_after(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "--base"
        )
        .as_deref(),
        Some("main")
    );
    assert_eq!(
        arg_after(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "--head"
        )
        .as_deref(),
        Some(branch.as_str())
    );
    assert_eq!(
        arg_after(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "--title"
        )
        .as_deref(),
        Some("Open a PR")
    );
    assert_eq!(
        rev(&repo, "main"),
        main_before,
        "a pull request moves no local ref"
    );
    assert!(
        h.ls().iter().any(|s| s["id"] == id.as_str()),
        "the session stays for the review"
    );
}

#[test]
fn review_comments_reach_the_agent_as_one_prompt_naming_file_and_line() {
    let h = hangar();
    make_repo(&h);
    let (id, _wt) = agent_in_worktree(&h, "review me");
    let v = h.json(&[
        "review",
        &id,
        "--comment",
        "src/a.rs:3",
        "rename this",
        "--comment",
        "b.rs:40",
        "no unwrap",
    ]);
    assert_eq!(v["comments"], 2, "{v}");
    let prompt = v["prompt"].as_str().unwrap();
    assert!(prompt.contains("src/a.rs:3: rename this"), "{prompt}");
    h.wait_screen(&id, "b.rs:40: no unwrap");
    let e = h.fail(&["review", &id, "--comment", "nowhere", "text"]);
    assert!(e.contains("FILE:LINE"), "{e}");
}

#[test]
fn resolve_asks_the_agent_to_rebase_and_names_the_conflicting_files_changing_nothing() {
    let h = hangar();
    let repo = make_repo(&h);
    let id = h.new_agent(&[
        "--provider",
        "claude",
        "--worktree",
        "--title",
        "resolve me",
    ]);
    h.wait_state(&id, "live");
    let wt = PathBuf::from(h.session(&id)["worktree"]["path"].as_str().unwrap());
    commit_file(&wt, "file.txt", "agent version\n", "agent edit");
    commit_file(&repo, "file.txt", "main version\n", "main edit");
    let refs = all_refs(&repo);
    let v = h.json(&["finish", &id, "--resolve"]);
    assert_eq!(v["conflicts"], serde_json::json!(["file.txt"]), "{v}");
    let prompt = v["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("git rebase main") && prompt.contains("file.txt"),
        "{prompt}"
    );
    h.wait_screen(&id, "rebase onto main");
    assert_eq!(all_refs(&repo), refs, "--resolve moves nothing itself");
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
}

#[test]
fn an_agent_mid_turn_is_neither_landed_nor_sent_comments() {
    let h = hangar();
    let repo = make_repo(&h);
    let id = h.new_agent(&["--provider", "claude", "--worktree", "--title", "busy one"]);
    h.wait_state(&id, "live");
    let wt = PathBuf::from(h.session(&id)["worktree"]["path"].as_str().unwrap());
    commit_file(&wt, "feature.txt", "feature\n", "feature");
    h.ok(&["send", &id, "slow 600000 think hard"]);
    h.wait_until("the agent is mid-turn", DEADLINE, || {
        h.session(&id)["activity"] == "working"
    });
    let refs = all_refs(&repo);
    let e = h.fail(&["finish", &id]);
    assert!(e.contains("mid-turn"), "{e}");
    let e = h.fail(&["review", &id, "--comment", "feature.txt:1", "why?"]);
    assert!(
        e.contains("mid-turn") && e.contains("nothing was sent"),
        "{e}"
    );
    assert_eq!(all_refs(&repo), refs);
    assert!(!h.screen(&id).contains("why?"));
}

/// A Git LFS pointer file, as the Git LFS specification (git-lfs/git-lfs
/// `docs/spec.md`) defines it and its own test suite writes it: `version`,
/// `oid sha256:<64 hex>`, `size`, one key per line.
const LFS_POINTER: &str = "version https://git-lfs.github.com/spec/v1\n\
oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n\
size 12345\n";

#[test]
fn an_lfs_pointer_file_is_diffed_and_landed_as_the_text_it_is() {
    let h = hangar();
    let repo = make_repo(&h);
    // The attributes LFS writes (`git lfs track "*.psd"`); no git-lfs runs
    // here, so the pointer is all git ever sees.
    fs::write(
        repo.join(".gitattributes"),
        "*.psd filter=lfs diff=lfs merge=lfs -text\n",
    )
    .unwrap();
    git(&repo, &["add", ".gitattributes"]);
    git(&repo, &["commit", "-q", "-m", "track psd with lfs"]);
    let (id, wt) = agent_in_worktree(&h, "lfs asset");
    commit_file(&wt, "art.psd", LFS_POINTER, "add the art");

    let v = h.json(&["diff", &id]);
    let f = file_named(&v, "art.psd");
    assert_eq!(f["binary"], false, "{f}");
    assert_eq!(f["additions"], 3);
    assert!(
        v["patch"]
            .as_str()
            .unwrap()
            .contains("+oid sha256:4d7a2146")
    );

    let v = h.json(&["finish", &id]);
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(
        git(&repo, &["show", "main:art.psd"]),
        LFS_POINTER,
        "the pointer landed byte for byte"
    );
    assert_eq!(
        fs::read_to_string(repo.join("art.psd")).unwrap(),
        LFS_POINTER
    );
}
