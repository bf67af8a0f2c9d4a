//! Which OpenCode conversation is a session's own (DESIGN.md rule 10).
//!
//! OpenCode keeps its conversations in SQLite (`ses_...` ids, no transcript
//! file per conversation, nothing a process holds open per conversation),
//! and refuses `--session <id>` for an id it does not have, so hangar can
//! neither choose the id at start nor see it in a file the process holds.
//! The proof it uses instead: a conversation is this session's when, in
//! the session's folder and created after its process started, its user
//! messages hold a prompt hangar itself typed into this session's terminal.
//! A conversation that merely appears in the same folder (a person's own
//! `opencode`, another session's) never matches, and one already recorded
//! for another session is never taken.

/// One top-level conversation read from OpenCode's database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpencodeConversation {
    pub id: String,
    /// The folder OpenCode ran in (`session.directory`).
    pub directory: String,
    pub created_ms: u64,
    /// The text parts of its user messages.
    pub user_texts: Vec<String>,
}

/// What hangar knows about the session it is looking for.
pub struct OwnSession<'a> {
    /// The session's folder, as the kernel reports it (symlinks resolved).
    pub cwd: &'a str,
    /// When the session's current process started (ms since the epoch).
    pub started_ms: u64,
    /// Prompts hangar typed into the session's terminal since then, oldest
    /// first.
    pub typed: &'a [String],
    /// The conversation the session already has, if any.
    pub current: Option<&'a str>,
}

/// The conversation that is the session's own, if the proof above holds
/// for one. Among several, the one holding the latest prompt typed wins
/// (a `/new` in the same process, then a prompt, moves on to the new
/// conversation); on a tie the session's current one stays, else the
/// newest. The tie rule is what keeps a forked copy off its parent:
/// OpenCode's `--fork` copies the parent's messages, prompts hangar typed
/// into the parent included, into a newer conversation. `claimed(id)` says
/// whether another session already holds an id.
pub fn own_conversation<'c>(
    conversations: &'c [OpencodeConversation],
    me: &OwnSession<'_>,
    claimed: &dyn Fn(&str) -> bool,
) -> Option<&'c OpencodeConversation> {
    let typed: Vec<&str> = me
        .typed
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    if typed.is_empty() {
        return None;
    }
    // The latest typed prompt a conversation holds (its index in `typed`).
    let latest_held = |c: &OpencodeConversation| {
        typed
            .iter()
            .rposition(|t| c.user_texts.iter().any(|u| u.trim() == *t))
    };
    conversations
        .iter()
        .filter(|c| c.directory == me.cwd)
        .filter(|c| c.created_ms >= me.started_ms || me.current == Some(c.id.as_str()))
        .filter(|c| !claimed(&c.id))
        .filter_map(|c| latest_held(c).map(|held| (held, c)))
        .max_by_key(|(held, c)| {
            (
                *held,
                me.current == Some(c.id.as_str()),
                c.created_ms,
                c.id.clone(),
            )
        })
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(id: &str, dir: &str, at: u64, texts: &[&str]) -> OpencodeConversation {
        OpencodeConversation {
            id: id.into(),
            directory: dir.into(),
            created_ms: at,
            user_texts: texts.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn only_the_conversation_holding_a_prompt_hangar_typed_is_adopted() {
        let all = vec![
            // A person's own opencode in the same folder, after our start.
            conv("ses_outside", "/p", 2_000, &["their own question"]),
            conv("ses_mine", "/p", 1_500, &["my question"]),
        ];
        let typed = vec!["my question\n".to_owned()];
        let me = OwnSession {
            cwd: "/p",
            started_ms: 1_000,
            typed: &typed,
            current: None,
        };
        assert_eq!(
            own_conversation(&all, &me, &|_| false).map(|c| c.id.as_str()),
            Some("ses_mine")
        );
    }

    #[test]
    fn nothing_is_adopted_without_a_typed_prompt_or_from_before_the_start_or_elsewhere() {
        let all = vec![
            conv("ses_old", "/p", 500, &["q"]),
            conv("ses_other_dir", "/q", 2_000, &["q"]),
        ];
        let typed = vec!["q".to_owned()];
        let me = OwnSession {
            cwd: "/p",
            started_ms: 1_000,
            typed: &typed,
            current: None,
        };
        assert!(own_conversation(&all, &me, &|_| false).is_none());
        let none: Vec<String> = Vec::new();
        let me = OwnSession {
            cwd: "/p",
            started_ms: 0,
            typed: &none,
            current: None,
        };
        assert!(own_conversation(&all, &me, &|_| false).is_none());
    }

    #[test]
    fn a_conversation_another_session_holds_is_never_taken() {
        let all = vec![conv("ses_theirs", "/p", 2_000, &["same words"])];
        let typed = vec!["same words".to_owned()];
        let me = OwnSession {
            cwd: "/p",
            started_ms: 1_000,
            typed: &typed,
            current: None,
        };
        assert!(own_conversation(&all, &me, &|id| id == "ses_theirs").is_none());
    }

    #[test]
    fn a_forked_copy_holding_the_parents_prompts_never_takes_the_parents_place() {
        // OpenCode's `--fork` copied the parent's messages into a newer
        // conversation in the same folder.
        let all = vec![
            conv("ses_parent", "/p", 1_500, &["first", "second"]),
            conv("ses_fork", "/p", 3_000, &["first", "second"]),
        ];
        let typed = vec!["first".to_owned(), "second".to_owned()];
        let me = OwnSession {
            cwd: "/p",
            started_ms: 1_000,
            typed: &typed,
            current: Some("ses_parent"),
        };
        assert_eq!(
            own_conversation(&all, &me, &|_| false).map(|c| c.id.as_str()),
            Some("ses_parent")
        );
        // A prompt typed after a `/new` moves the session on.
        let all = vec![
            conv("ses_parent", "/p", 1_500, &["first"]),
            conv("ses_new", "/p", 3_000, &["third"]),
        ];
        let typed = vec!["first".to_owned(), "third".to_owned()];
        let me = OwnSession {
            typed: &typed,
            ..me
        };
        assert_eq!(
            own_conversation(&all, &me, &|_| false).map(|c| c.id.as_str()),
            Some("ses_new")
        );
    }

    #[test]
    fn the_newest_match_wins_when_one_process_started_several() {
        let all = vec![
            conv("ses_a", "/p", 2_000, &["again"]),
            conv("ses_b", "/p", 3_000, &["again"]),
        ];
        let typed = vec!["again".to_owned()];
        let me = OwnSession {
            cwd: "/p",
            started_ms: 1_000,
            typed: &typed,
            current: None,
        };
        assert_eq!(
            own_conversation(&all, &me, &|_| false).map(|c| c.id.as_str()),
            Some("ses_b")
        );
    }
}
