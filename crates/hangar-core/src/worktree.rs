//! Worktree isolation rules: what a session's git worktree is, what its
//! branch is called, and when hangar may remove it.
//!
//! Pure decisions only: the daemon runs `git` to learn the facts (does the
//! folder exist, how many files are uncommitted, how many commits exist
//! nowhere else) and asks this module what to do. The one rule that matters
//! most lives in [`cleanup_decision`]: work that exists only in a worktree is
//! never removed, whatever the caller asked for.

use serde::{Deserialize, Serialize};

/// The git worktree a session runs in. Persisted with the session so that
/// hibernate, wake and restore start the agent in the same folder.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WorktreeInfo {
    /// The worktree folder; the session's cwd.
    pub path: String,
    /// The branch checked out in it.
    pub branch: String,
    /// What the branch was created from: a branch name, or a commit id when
    /// the main checkout was detached. Ahead/behind are counted against it.
    pub base: String,
    /// The top folder of the checkout the worktree was created from; git
    /// commands that manage the worktree run there.
    pub repo_root: String,
    /// Only worktrees hangar created are ever removed by hangar.
    #[serde(default)]
    pub created_by_hangar: bool,
}

/// What `git` said about a worktree, gathered by the daemon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeFacts {
    /// The folder exists.
    pub exists: bool,
    /// Uncommitted changes: modified, staged or untracked (not ignored) files.
    pub dirty_files: usize,
    /// Commits on the branch that are neither on its base nor on any remote:
    /// removing the branch would lose them.
    pub unpushed: usize,
}

/// What closing a session (or pruning) does with its worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CleanupDecision {
    /// Clean and fully pushed or merged: `git worktree remove` it.
    Remove,
    /// It holds work that exists nowhere else; the reason is for a person.
    Keep(String),
    /// The folder is already gone: nothing to remove.
    AlreadyGone,
    /// hangar did not create it, so hangar never removes it.
    NotOurs,
}

/// Whether a worktree may be removed. Never removes uncommitted or unpushed
/// work: that is the promise "never lost" of worktree isolation.
pub fn cleanup_decision(info: &WorktreeInfo, facts: &WorktreeFacts) -> CleanupDecision {
    if !info.created_by_hangar {
        return CleanupDecision::NotOurs;
    }
    if !facts.exists {
        return CleanupDecision::AlreadyGone;
    }
    match (facts.dirty_files, facts.unpushed) {
        (0, 0) => CleanupDecision::Remove,
        (d, 0) => CleanupDecision::Keep(format!("{d} uncommitted file(s)")),
        (0, u) => CleanupDecision::Keep(format!(
            "{u} commit(s) on branch {} not pushed or merged into {}",
            info.branch, info.base
        )),
        (d, u) => CleanupDecision::Keep(format!(
            "{d} uncommitted file(s) and {u} commit(s) on branch {} not pushed or merged into {}",
            info.branch, info.base
        )),
    }
}

/// The longest branch name hangar makes up from a title.
const MAX_SLUG: usize = 40;

/// A branch name made from a session title: lowercase ASCII letters, digits
/// and single dashes (`"Fix the API: v2!"` -> `fix-the-api-v2`). A title with
/// nothing usable gives `agent`.
pub fn branch_slug(title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= MAX_SLUG {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "agent".to_owned()
    } else {
        slug.to_owned()
    }
}

/// `wanted`, or `wanted-2`, `wanted-3`, ... : the first name `taken` refuses
/// (a branch or a folder of that name already exists).
pub fn unique_branch(wanted: &str, mut taken: impl FnMut(&str) -> bool) -> String {
    if !taken(wanted) {
        return wanted.to_owned();
    }
    (2u64..)
        .map(|n| format!("{wanted}-{n}"))
        .find(|name| !taken(name))
        // The range is unbounded and `taken` can refuse only finitely many
        // names in practice; this fallback is never reached.
        .unwrap_or_else(|| wanted.to_owned())
}

/// A branch name as one folder name: `feature/login` -> `feature-login`.
pub fn folder_name(branch: &str) -> String {
    branch
        .chars()
        .map(|c| if c == '/' || c == '\\' { '-' } else { c })
        .collect()
}

/// Where a new worktree goes. `folder` is the configured `[worktree] folder`
/// (already made absolute); it may name `{repo}` and `{branch}`, else
/// `<repo>/<branch>` is appended to it.
pub fn worktree_folder(folder: &str, repo: &str, branch: &str) -> String {
    let branch = folder_name(branch);
    if folder.contains("{branch}") {
        folder.replace("{repo}", repo).replace("{branch}", &branch)
    } else {
        format!("{}/{repo}/{branch}", folder.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> WorktreeInfo {
        WorktreeInfo {
            path: "/home/wt/api/fix".into(),
            branch: "fix".into(),
            base: "main".into(),
            repo_root: "/src/api".into(),
            created_by_hangar: true,
        }
    }

    fn facts(dirty_files: usize, unpushed: usize) -> WorktreeFacts {
        WorktreeFacts {
            exists: true,
            dirty_files,
            unpushed,
        }
    }

    #[test]
    fn a_clean_pushed_worktree_is_removed() {
        assert_eq!(
            cleanup_decision(&info(), &facts(0, 0)),
            CleanupDecision::Remove
        );
    }

    #[test]
    fn uncommitted_files_keep_the_worktree_and_say_how_many() {
        let CleanupDecision::Keep(why) = cleanup_decision(&info(), &facts(3, 0)) else {
            panic!("a dirty worktree must be kept");
        };
        assert!(why.contains("3 uncommitted"), "{why}");
    }

    #[test]
    fn unpushed_commits_keep_the_worktree_and_name_the_branch() {
        let CleanupDecision::Keep(why) = cleanup_decision(&info(), &facts(0, 2)) else {
            panic!("unpushed work must be kept");
        };
        assert!(why.contains("2 commit(s) on branch fix"), "{why}");
        let CleanupDecision::Keep(both) = cleanup_decision(&info(), &facts(1, 1)) else {
            panic!("dirty and unpushed work must be kept");
        };
        assert!(both.contains("uncommitted") && both.contains("commit(s)"));
    }

    #[test]
    fn a_worktree_hangar_did_not_create_is_never_removed() {
        let mut i = info();
        i.created_by_hangar = false;
        assert_eq!(cleanup_decision(&i, &facts(0, 0)), CleanupDecision::NotOurs);
    }

    #[test]
    fn a_worktree_deleted_by_hand_is_already_gone() {
        let gone = WorktreeFacts::default();
        assert_eq!(
            cleanup_decision(&info(), &gone),
            CleanupDecision::AlreadyGone
        );
    }

    #[test]
    fn branch_slugs_are_lowercase_dashed_and_never_empty() {
        assert_eq!(branch_slug("Fix the API: v2!"), "fix-the-api-v2");
        assert_eq!(branch_slug("  --weird__name--  "), "weird-name");
        assert_eq!(branch_slug("日本語"), "agent");
        assert_eq!(branch_slug(""), "agent");
        assert!(branch_slug(&"x".repeat(200)).len() <= MAX_SLUG);
    }

    #[test]
    fn unique_branch_appends_the_first_free_number() {
        let taken = ["fix", "fix-2"];
        assert_eq!(unique_branch("fix", |n| taken.contains(&n)), "fix-3");
        assert_eq!(unique_branch("new", |n| taken.contains(&n)), "new");
    }

    #[test]
    fn worktree_folders_default_to_repo_then_branch_and_accept_a_template() {
        assert_eq!(
            worktree_folder("/h/worktrees/", "api", "feature/login"),
            "/h/worktrees/api/feature-login"
        );
        assert_eq!(
            worktree_folder("/src/{repo}-wt/{branch}", "api", "fix"),
            "/src/api-wt/fix"
        );
    }
}
