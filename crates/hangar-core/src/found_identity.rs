//! Which conversation a CLI recorded in a session file is a session's own,
//! for a CLI described in a file whose id hangar cannot choose (`found`
//! ids: issue 45; DESIGN.md rule 10).
//!
//! A session file found under the CLI's state folder is only a candidate: a
//! person's own run of the same CLI in the same folder writes one just like
//! it. It is adopted only when the file itself proves which process made
//! it:
//!
//! - it was started in the session's folder, no earlier than the session's
//!   process (a file that names no folder proves nothing), and no other
//!   session holds its id; and
//! - it names a process of the session's own process tree (its `pid`
//!   field), or, for a CLI whose file names no process, a user prompt in it
//!   is one hangar itself typed into this session's terminal since that
//!   process started, and into no other live session of the same CLI in
//!   the same folder (two sessions typed the same words prove neither).
//!
//! This module never reads a file: the daemon's identity watch reads the
//! candidates with `hangar_providers::described` and asks here.

/// What one session file of the CLI says of its conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoundFile {
    /// The conversation id the file holds.
    pub id: String,
    /// The folder the CLI ran in, when the file names it.
    pub cwd: Option<String>,
    /// The process that wrote it, when the file names it.
    pub pid: Option<u32>,
    /// When the conversation started (ms since the epoch): the file's own
    /// field, else the file's creation time as the caller read it.
    pub started_ms: u64,
    /// The text of its user prompts, oldest first.
    pub prompts: Vec<String>,
}

/// A live session of the CLI, as the daemon knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claimant {
    /// The session's folder, as the kernel reports it (symlinks resolved).
    pub cwd: String,
    /// The session's process and its descendants.
    pub tree: Vec<u32>,
    /// When the session's current process started (ms since the epoch).
    pub started_ms: u64,
    /// Prompts hangar typed into its terminal since then, oldest first.
    pub typed: Vec<String>,
}

/// The answer for one candidate file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The file is the session's own conversation.
    Own,
    /// It is not, or it cannot be proven; why (for the daemon's log).
    NotProven(&'static str),
}

/// Whether `file` is the conversation of `me`. `others`: every other live
/// session of the same CLI; `claimed(id)`: whether another session already
/// holds that id.
pub fn prove(
    file: &FoundFile,
    me: &Claimant,
    others: &[Claimant],
    claimed: &dyn Fn(&str) -> bool,
) -> Verdict {
    if claimed(&file.id) {
        return Verdict::NotProven("another session holds this conversation");
    }
    match &file.cwd {
        None => return Verdict::NotProven("the file names no folder"),
        Some(cwd) if cwd != &me.cwd => return Verdict::NotProven("started in another folder"),
        Some(_) => {}
    }
    if file.started_ms < me.started_ms {
        return Verdict::NotProven("started before the session's process");
    }
    if let Some(pid) = file.pid {
        // A file that names its process is proven by that alone; naming
        // another process disproves it, whatever prompts it holds.
        return if me.tree.contains(&pid) {
            Verdict::Own
        } else {
            Verdict::NotProven("written by a process outside the session")
        };
    }
    let typed_by = |c: &Claimant, prompt: &str| {
        c.typed.iter().any(|t| {
            let t = t.trim();
            !t.is_empty() && t == prompt
        })
    };
    let mine = file
        .prompts
        .iter()
        .map(|p| p.trim())
        .filter(|p| typed_by(me, p))
        .collect::<Vec<_>>();
    if mine.is_empty() {
        return Verdict::NotProven("holds no prompt hangar typed into the session");
    }
    let shared = others.iter().any(|o| {
        o.cwd == me.cwd && o.started_ms <= file.started_ms && mine.iter().any(|p| typed_by(o, p))
    });
    if shared {
        return Verdict::NotProven("another session in the folder was typed the same prompt");
    }
    Verdict::Own
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Claimant {
        Claimant {
            cwd: "/w".into(),
            tree: vec![100, 101],
            started_ms: 1_000,
            typed: vec!["fix the build".into()],
        }
    }

    fn file(pid: Option<u32>, prompts: &[&str]) -> FoundFile {
        FoundFile {
            id: "c-1".into(),
            cwd: Some("/w".into()),
            pid,
            started_ms: 2_000,
            prompts: prompts.iter().map(|p| p.to_string()).collect(),
        }
    }

    const NONE_CLAIMED: &dyn Fn(&str) -> bool = &|_| false;

    #[test]
    fn a_file_naming_a_process_of_the_sessions_tree_is_its_own() {
        assert_eq!(
            prove(&file(Some(101), &[]), &me(), &[], NONE_CLAIMED),
            Verdict::Own
        );
    }

    #[test]
    fn a_file_naming_an_outside_process_is_never_adopted_even_with_the_typed_prompt() {
        let v = prove(
            &file(Some(555), &["fix the build"]),
            &me(),
            &[],
            NONE_CLAIMED,
        );
        assert_eq!(
            v,
            Verdict::NotProven("written by a process outside the session")
        );
    }

    #[test]
    fn an_outside_run_in_the_same_folder_without_the_typed_prompt_is_never_adopted() {
        let v = prove(&file(None, &["something else"]), &me(), &[], NONE_CLAIMED);
        assert!(matches!(v, Verdict::NotProven(_)));
        let v = prove(&file(None, &[]), &me(), &[], NONE_CLAIMED);
        assert!(matches!(v, Verdict::NotProven(_)));
    }

    #[test]
    fn a_file_holding_a_prompt_typed_into_the_session_is_its_own() {
        assert_eq!(
            prove(
                &file(None, &["  fix the build\n"]),
                &me(),
                &[],
                NONE_CLAIMED
            ),
            Verdict::Own
        );
    }

    #[test]
    fn the_same_prompt_typed_into_another_session_in_the_folder_proves_neither() {
        let mut other = me();
        other.tree = vec![200];
        assert!(matches!(
            prove(
                &file(None, &["fix the build"]),
                &me(),
                &[other.clone()],
                NONE_CLAIMED
            ),
            Verdict::NotProven(_)
        ));
        // Another folder's session typing the same words does not matter.
        other.cwd = "/elsewhere".into();
        assert_eq!(
            prove(
                &file(None, &["fix the build"]),
                &me(),
                &[other],
                NONE_CLAIMED
            ),
            Verdict::Own
        );
    }

    #[test]
    fn another_folder_an_older_file_a_file_without_a_folder_or_a_claimed_id_is_refused() {
        let mut f = file(Some(100), &[]);
        f.cwd = Some("/other".into());
        assert_eq!(
            prove(&f, &me(), &[], NONE_CLAIMED),
            Verdict::NotProven("started in another folder")
        );
        let mut f = file(Some(100), &[]);
        f.started_ms = 999;
        assert_eq!(
            prove(&f, &me(), &[], NONE_CLAIMED),
            Verdict::NotProven("started before the session's process")
        );
        let mut f = file(Some(100), &[]);
        f.cwd = None;
        assert_eq!(
            prove(&f, &me(), &[], NONE_CLAIMED),
            Verdict::NotProven("the file names no folder")
        );
        assert_eq!(
            prove(&file(Some(100), &[]), &me(), &[], &|id| id == "c-1"),
            Verdict::NotProven("another session holds this conversation")
        );
    }
}
