//! Forks (issue 30): a new session that carries on another session's
//! conversation, the original untouched.
//!
//! Same CLI: the CLI's own fork (claude `--fork-session`, `codex fork`,
//! opencode `--fork`) makes a new conversation holding the old one's
//! messages; the fork resumes that new conversation from then on. Another
//! CLI: conversations do not move between CLIs, so the new agent starts
//! fresh and is told where things stand by a handoff prompt built here from
//! the parent's transcript.
//!
//! What this module must never allow: a fork that takes its parent's
//! conversation as its own (two processes writing one conversation corrupt
//! it, and the parent's would no longer be untouched). A fork starts from
//! its origin's id only until its own conversation exists, and never
//! adopts the origin's id ([`refuses_origin`]).

pub use crate::model::ForkOrigin;
use crate::model::{Provider, SessionMeta};

/// Why a fork cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForkRefusal {
    #[error(
        "session {session} has no conversation to fork yet (no {provider} session id: it never had a turn); \
         send it a prompt first, or start a new session"
    )]
    NoConversation { session: String, provider: String },
    #[error(
        "session {session} runs {provider}, which has no conversation to fork; `hangar fork --provider P` \
         starts an agent with a handoff prompt instead"
    )]
    NotAnAgent { session: String, provider: String },
    #[error("{0} sessions cannot be forked into: name claude, codex or opencode")]
    TargetNotAnAgent(String),
}

/// What a fork of `parent` into `target` (its own provider unless another
/// is named) starts from: the origin record the new session keeps.
pub fn plan_fork(
    parent: &SessionMeta,
    target: &Provider,
    now_ms: u64,
) -> Result<ForkOrigin, ForkRefusal> {
    let handoff = *target != parent.provider;
    if !handoff && !parent.provider.is_agent() {
        return Err(ForkRefusal::NotAnAgent {
            session: parent.id.short().to_owned(),
            provider: parent.provider.name().to_owned(),
        });
    }
    if !target.is_agent() {
        return Err(ForkRefusal::TargetNotAnAgent(target.name().to_owned()));
    }
    let provider_session_id = if handoff {
        None
    } else {
        Some(
            parent
                .durable_provider_id()
                .ok_or_else(|| ForkRefusal::NoConversation {
                    session: parent.id.short().to_owned(),
                    provider: parent.provider.name().to_owned(),
                })?
                .to_owned(),
        )
    };
    Ok(ForkOrigin {
        session: parent.id.clone(),
        provider: parent.provider.clone(),
        provider_session_id,
        handoff,
        pending_prompt: None,
        at_ms: now_ms,
    })
}

/// The conversation the next start of `meta` forks from: its origin's id,
/// while the fork's own conversation does not exist yet (`own_exists`, as
/// the daemon found it on disk). `None`: start as usual (resume its own
/// id, or fresh).
pub fn fork_start_from(meta: &SessionMeta, own_exists: bool) -> Option<&str> {
    let origin = meta.forked_from.as_ref()?;
    if origin.handoff || own_exists {
        return None;
    }
    origin.provider_session_id.as_deref()
}

/// Whether `observed` is the conversation `meta` was forked from: never
/// the fork's own, whatever file or process seems to say so.
pub fn refuses_origin(meta: &SessionMeta, observed: &str) -> bool {
    meta.forked_from
        .as_ref()
        .and_then(|o| o.provider_session_id.as_deref())
        .is_some_and(|origin| origin == observed)
}

/// One message of the parent's transcript, for a handoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandoffMessage {
    /// `user` or `assistant`.
    pub role: String,
    pub text: String,
}

/// What a handoff prompt is made of, read by the daemon.
#[derive(Clone, Debug, Default)]
pub struct HandoffFacts<'a> {
    pub parent: &'a str,
    pub parent_provider: &'a str,
    pub parent_title: &'a str,
    /// The parent's transcript, oldest first.
    pub messages: &'a [HandoffMessage],
    /// `git diff --stat`-like lines of what the parent changed so far.
    pub changed_files: &'a [String],
}

/// The longest a quoted message may be in a handoff prompt (characters).
const MESSAGE_CHARS: usize = 1_500;
/// How many of the parent's last messages a handoff quotes.
const LAST_MESSAGES: usize = 6;
/// How many changed files it names.
const CHANGED_FILES: usize = 40;

/// The prompt that hands the parent's task over to an agent of another
/// CLI: its task (the first thing the person asked), its last messages and
/// the files changed so far. One line: its text is the transcript's
/// (rule 11), and a newline or control character typed into a terminal
/// agent could submit it early or act as a key, so every control
/// character becomes a space.
pub fn handoff_prompt(f: &HandoffFacts<'_>) -> String {
    let clean = |s: &str, max: usize| -> String {
        let flat: String = s
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        if flat.chars().count() > max {
            let cut: String = flat.chars().take(max).collect();
            format!("{cut}...")
        } else {
            flat
        }
    };
    let title = if f.parent_title.trim().is_empty() {
        String::new()
    } else {
        format!(" ({})", clean(f.parent_title, 200))
    };
    let mut out = format!(
        "You are taking over a task from another coding agent ({} session {}{title}) working in this same folder; \
         its conversation cannot move here, so here is where it stands.",
        clean(f.parent_provider, 40),
        clean(f.parent, 40),
    );
    let task = f
        .messages
        .iter()
        .position(|m| m.role == "user" && !m.text.trim().is_empty());
    match task {
        Some(t) => out.push_str(&format!(
            " The task: {}",
            clean(&f.messages[t].text, MESSAGE_CHARS * 2)
        )),
        None => out.push_str(" Its transcript holds no task."),
    }
    let last: Vec<&HandoffMessage> = f
        .messages
        .iter()
        .enumerate()
        .filter(|(i, m)| Some(*i) != task && !m.text.trim().is_empty())
        .map(|(_, m)| m)
        .collect();
    let last = &last[last.len().saturating_sub(LAST_MESSAGES)..];
    if !last.is_empty() {
        out.push_str(" Its last messages:");
        for m in last {
            let who = if m.role == "assistant" {
                "agent"
            } else {
                "person"
            };
            out.push_str(&format!(" [{who}] {}", clean(&m.text, MESSAGE_CHARS)));
        }
    }
    if f.changed_files.is_empty() {
        out.push_str(" No files are changed yet.");
    } else {
        let shown: Vec<String> = f
            .changed_files
            .iter()
            .take(CHANGED_FILES)
            .map(|l| clean(l, 200))
            .collect();
        out.push_str(&format!(" Files changed so far: {}", shown.join("; ")));
        if f.changed_files.len() > CHANGED_FILES {
            out.push_str(&format!(
                "; and {} more",
                f.changed_files.len() - CHANGED_FILES
            ));
        }
        out.push_str(" (`git diff` and `git status` show them).");
    }
    out.push_str(" Carry on with the task from here.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IdSource, ProviderSessionId, SessionId};

    fn claude_with(id: Option<(&str, IdSource)>) -> SessionMeta {
        let mut m = SessionMeta::new(SessionId::from("parent-1"), Provider::Claude, "/w");
        m.provider_session = id.map(|(i, s)| ProviderSessionId::new(i, s));
        m
    }

    #[test]
    fn a_same_cli_fork_starts_from_the_parents_durable_conversation() {
        let parent = claude_with(Some(("c-old", IdSource::Transcript)));
        let origin = plan_fork(&parent, &Provider::Claude, 5).unwrap();
        assert_eq!(origin.provider_session_id.as_deref(), Some("c-old"));
        assert!(!origin.handoff);
        assert_eq!(origin.session, SessionId::from("parent-1"));
    }

    #[test]
    fn a_parent_without_a_durable_conversation_cannot_be_forked_in_its_own_cli() {
        let parent = claude_with(Some(("c-prov", IdSource::ProxyHeader)));
        assert!(matches!(
            plan_fork(&parent, &Provider::Claude, 5),
            Err(ForkRefusal::NoConversation { .. })
        ));
        // ... but can hand its task to another CLI.
        let origin = plan_fork(&parent, &Provider::Codex, 5).unwrap();
        assert!(origin.handoff);
        assert_eq!(origin.provider_session_id, None);
    }

    #[test]
    fn shells_are_neither_forked_nor_forked_into() {
        let shell = SessionMeta::new(SessionId::from("s"), Provider::Shell, "/w");
        assert!(matches!(
            plan_fork(&shell, &Provider::Shell, 1),
            Err(ForkRefusal::NotAnAgent { .. })
        ));
        let parent = claude_with(Some(("c", IdSource::Transcript)));
        assert!(plan_fork(&parent, &Provider::Shell, 1).is_err());
        // A shell's work can still be handed to an agent.
        assert!(plan_fork(&shell, &Provider::Claude, 1).unwrap().handoff);
    }

    #[test]
    fn a_fork_starts_from_its_origin_only_until_its_own_conversation_exists() {
        let parent = claude_with(Some(("c-old", IdSource::Transcript)));
        let mut fork = SessionMeta::new(SessionId::from("f"), Provider::Claude, "/w");
        fork.forked_from = Some(Box::new(plan_fork(&parent, &Provider::Claude, 1).unwrap()));
        assert_eq!(fork_start_from(&fork, false), Some("c-old"));
        assert_eq!(fork_start_from(&fork, true), None);
        let plain = SessionMeta::new(SessionId::from("p"), Provider::Claude, "/w");
        assert_eq!(fork_start_from(&plain, false), None);
        let mut handoff = fork.clone();
        handoff.forked_from.as_mut().unwrap().handoff = true;
        assert_eq!(fork_start_from(&handoff, false), None);
    }

    #[test]
    fn the_origins_conversation_is_never_the_forks_own() {
        let parent = claude_with(Some(("c-old", IdSource::Transcript)));
        let mut fork = SessionMeta::new(SessionId::from("f"), Provider::Claude, "/w");
        fork.forked_from = Some(Box::new(plan_fork(&parent, &Provider::Claude, 1).unwrap()));
        assert!(refuses_origin(&fork, "c-old"));
        assert!(!refuses_origin(&fork, "c-new"));
        assert!(!refuses_origin(&parent, "c-old"));
    }

    fn msg(role: &str, text: &str) -> HandoffMessage {
        HandoffMessage {
            role: role.into(),
            text: text.into(),
        }
    }

    #[test]
    fn a_handoff_names_the_task_the_last_messages_and_the_changed_files_on_one_line() {
        let messages = vec![
            msg("user", "make the parser\nstrict"),
            msg("assistant", "done with step one"),
            msg("user", "now the tests"),
            msg("assistant", "tests \x1b[31mwritten\x07"),
        ];
        let files = vec!["src/parse.rs | +10 -2".to_owned()];
        let p = handoff_prompt(&HandoffFacts {
            parent: "ab12",
            parent_provider: "claude",
            parent_title: "parser",
            messages: &messages,
            changed_files: &files,
        });
        assert!(!p.chars().any(char::is_control), "{p:?}");
        assert!(p.contains("The task: make the parser strict"), "{p}");
        assert!(p.contains("[agent] done with step one"));
        assert!(p.contains("[person] now the tests"));
        assert!(p.contains("[agent] tests [31mwritten"));
        assert!(p.contains("src/parse.rs | +10 -2"));
        assert!(p.contains("claude session ab12 (parser)"));
        // The task is not quoted twice.
        assert_eq!(p.matches("make the parser").count(), 1);
    }

    #[test]
    fn a_handoff_keeps_only_the_last_messages_and_cuts_long_ones() {
        let long = "x".repeat(10_000);
        let mut messages = vec![msg("user", "task")];
        for i in 0..20 {
            messages.push(msg("assistant", &format!("step {i} {long}")));
        }
        let p = handoff_prompt(&HandoffFacts {
            parent: "p",
            parent_provider: "codex",
            messages: &messages,
            ..Default::default()
        });
        assert!(!p.contains("step 13 "));
        assert!(p.contains("step 14 "));
        assert!(p.contains("step 19 "));
        assert!(p.len() < 12_000, "{}", p.len());
        assert!(p.contains("No files are changed yet."));
    }
}
