//! How a fork's start is made (`hangar fork`, issue 30), for any CLI: the
//! per-CLI facts (the arguments, what names the old conversation, when the
//! new one exists) are each CLI's adapter's (`Adapter::fork_args`,
//! `fork_source`, `conversation_exists`), pinned by
//! `crates/hangar/tests/it/real_cli_fork.rs`. The rule they serve is
//! `hangar_core::fork`'s: a fork starts from its origin only until its own
//! conversation exists, and never takes the origin's id as its own.

use std::path::Path;

use hangar_core::SessionMeta;

use crate::adapter::adapter;

/// Whether the fork `meta`'s own conversation exists, so its next start
/// resumes it rather than forking again (`root`: its CLI's transcript
/// root).
pub fn own_conversation_exists(meta: &SessionMeta, root: Option<&Path>) -> bool {
    let Some(own) = meta.durable_provider_id() else {
        return false;
    };
    if hangar_core::fork::refuses_origin(meta, own) {
        return false;
    }
    adapter(&meta.provider).conversation_exists(root, &meta.cwd, own)
}

/// What the next start of `meta` forks from, as its CLI is to be given it:
/// `None` when it is not a fork, or its own conversation exists (it resumes
/// that one).
pub fn fork_start(meta: &SessionMeta, root: Option<&Path>) -> Option<String> {
    let own_exists = meta.forked_from.is_some() && own_conversation_exists(meta, root);
    hangar_core::fork::fork_start_from(meta, own_exists)
        .map(|from| adapter(&meta.provider).fork_source(root, &meta.cwd, from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::discovery;
    use hangar_core::{IdSource, Provider, ProviderSessionId, SessionId};

    #[test]
    fn a_claude_forks_own_conversation_exists_once_its_transcript_does() {
        let root = tempfile::TempDir::new().unwrap();
        let cwd = root.path().join("w");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd = discovery::canonical_cwd(&cwd.display().to_string());
        let mut parent = SessionMeta::new(SessionId::from("p"), Provider::Claude, cwd.clone());
        parent.provider_session = Some(ProviderSessionId::new("old", IdSource::Transcript));
        let mut fork = SessionMeta::new(SessionId::from("f"), Provider::Claude, cwd.clone());
        fork.forked_from = Some(Box::new(
            hangar_core::fork::plan_fork(&parent, &Provider::Claude, 1).unwrap(),
        ));
        assert!(!own_conversation_exists(&fork, Some(root.path())));
        assert_eq!(fork_start(&fork, Some(root.path())).as_deref(), Some("old"));
        fork.provider_session = Some(ProviderSessionId::new("new", IdSource::ResumeRequest));
        assert!(!own_conversation_exists(&fork, Some(root.path())));
        let dir = root
            .path()
            .join("projects")
            .join(discovery::claude_slug(&cwd));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("new.jsonl"), "{}\n").unwrap();
        assert!(own_conversation_exists(&fork, Some(root.path())));
        assert_eq!(fork_start(&fork, Some(root.path())), None);
        // The origin's id is never the fork's own, even when recorded.
        fork.provider_session = Some(ProviderSessionId::new("old", IdSource::Transcript));
        std::fs::write(dir.join("old.jsonl"), "{}\n").unwrap();
        assert!(!own_conversation_exists(&fork, Some(root.path())));
    }

    #[test]
    fn a_codex_fork_resumes_its_own_once_it_has_a_durable_id_of_its_own() {
        let mut parent = SessionMeta::new(SessionId::from("p"), Provider::Codex, "/tmp");
        parent.provider_session = Some(ProviderSessionId::new("t-old", IdSource::Transcript));
        let mut fork = SessionMeta::new(SessionId::from("f"), Provider::Codex, "/tmp");
        fork.forked_from = Some(Box::new(
            hangar_core::fork::plan_fork(&parent, &Provider::Codex, 1).unwrap(),
        ));
        assert_eq!(fork_start(&fork, None).as_deref(), Some("t-old"));
        fork.provider_session = Some(ProviderSessionId::new("t-new", IdSource::Transcript));
        assert_eq!(fork_start(&fork, None), None);
    }
}
