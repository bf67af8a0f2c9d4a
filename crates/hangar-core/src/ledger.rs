//! The resume ledger: which provider session id a session resumes, when an
//! observed id replaces it, which transcript is a session's own, and when two
//! sessions claim one conversation.
//!
//! Every rule here is a pure function over facts the daemon gathered (files
//! read, clocks, the live set). Nothing here reads a transcript or decides on
//! a process; it must never weaken a durable id with a provisional one, and
//! never adopt an id whose transcript ran in another folder (that would make
//! a later wake resume somebody else's conversation).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{IdSource, Provider, ProviderSessionId, SessionId, SessionMeta, Workspace};

/// How many id changes a session keeps; older ones are dropped first, so a
/// session that `/clear`s all day cannot grow its record without bound.
pub const HISTORY_LIMIT: usize = 32;

pub use crate::model::IdChange;

/// A provider session id seen somewhere: in a transcript, a proxied request,
/// or asked for by hangar itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    pub id: String,
    pub source: IdSource,
    /// The folder the transcript says the conversation ran in. Required for
    /// `transcript` observations.
    pub cwd: Option<String>,
}

/// Why an observed id was not adopted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdRefusal {
    #[error("its transcript ran in {transcript_cwd}, not in the session's folder {session_cwd}")]
    CwdMismatch {
        session_cwd: String,
        transcript_cwd: String,
    },
    #[error("its transcript does not say which folder it ran in")]
    CwdUnknown,
    #[error("a provisional proxy-header id never replaces a durable one")]
    ProvisionalOverDurable,
    #[error("the id is empty")]
    Empty,
    #[error("it is the conversation this session was forked from, which stays its parent's")]
    ForkOrigin,
}

/// What to do with an observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdDecision {
    /// Already known from an equal or better source: nothing to record.
    Keep,
    /// The same id, now confirmed by a better source: only the source changes.
    Confirm(ProviderSessionId),
    /// A different id replaces the current one; `change` is what the history
    /// records (`None` for a provisional id, which is never resumed).
    Replace {
        new: ProviderSessionId,
        change: Option<IdChange>,
    },
    Refuse(IdRefusal),
}

/// Whether two folders are the same, ignoring trailing slashes. The caller
/// resolves symlinks on its side first: transcripts record the folder as the
/// kernel sees it.
pub fn cwd_matches(session_cwd: &str, transcript_cwd: &str) -> bool {
    fn norm(p: &str) -> &str {
        let t = p.trim_end_matches('/');
        if t.is_empty() && p.starts_with('/') {
            "/"
        } else {
            t
        }
    }
    norm(session_cwd) == norm(transcript_cwd)
}

/// How much an id source is worth as evidence that the provider really holds
/// this conversation. A transcript beats a request hangar made (the provider
/// wrote it), which beats an imported id of unknown origin only in wording:
/// both are durable.
fn strength(source: Option<IdSource>) -> u8 {
    match source {
        Some(IdSource::ProxyHeader) => 0,
        None => 1,
        Some(IdSource::ResumeRequest) => 2,
        Some(IdSource::Transcript) => 3,
    }
}

/// Decide what an observed id does to a session whose current id is
/// `current` and whose folder is `session_cwd`.
pub fn decide(
    current: Option<&ProviderSessionId>,
    observed: &Observation,
    session_cwd: &str,
    now_ms: u64,
) -> IdDecision {
    if observed.id.trim().is_empty() {
        return IdDecision::Refuse(IdRefusal::Empty);
    }
    if observed.source == IdSource::Transcript {
        match &observed.cwd {
            None => return IdDecision::Refuse(IdRefusal::CwdUnknown),
            Some(t) if !cwd_matches(session_cwd, t) => {
                return IdDecision::Refuse(IdRefusal::CwdMismatch {
                    session_cwd: session_cwd.to_owned(),
                    transcript_cwd: t.clone(),
                });
            }
            Some(_) => {}
        }
    }
    let new = ProviderSessionId::new(observed.id.clone(), observed.source);
    let Some(current) = current else {
        let change = new.is_durable().then(|| IdChange {
            from: None,
            to: Some(new.id.clone()),
            source: Some(observed.source),
            at_ms: now_ms,
            account_move: None,
        });
        return IdDecision::Replace { new, change };
    };
    if current.id == observed.id {
        return if strength(Some(observed.source)) > strength(current.source) {
            IdDecision::Confirm(new)
        } else {
            IdDecision::Keep
        };
    }
    if !new.is_durable() {
        return if current.is_durable() {
            IdDecision::Refuse(IdRefusal::ProvisionalOverDurable)
        } else {
            IdDecision::Replace { new, change: None }
        };
    }
    IdDecision::Replace {
        change: Some(IdChange {
            from: Some(current.id.clone()),
            to: Some(new.id.clone()),
            source: Some(observed.source),
            at_ms: now_ms,
            account_move: None,
        }),
        new,
    }
}

/// [`decide`] for `meta` itself: a forked session never takes the
/// conversation it was forked from (`crate::fork::refuses_origin`), however
/// the observation came (its process reading the parent's file, a hook).
pub fn decide_for(
    meta: &SessionMeta,
    observed: &Observation,
    session_cwd: &str,
    now_ms: u64,
) -> IdDecision {
    if crate::fork::refuses_origin(meta, &observed.id) {
        return IdDecision::Refuse(IdRefusal::ForkOrigin);
    }
    decide(
        meta.provider_session.as_ref(),
        observed,
        session_cwd,
        now_ms,
    )
}

/// Carry a decision out on `meta`. Returns whether anything changed.
pub fn apply(meta: &mut SessionMeta, decision: IdDecision) -> bool {
    match decision {
        IdDecision::Keep | IdDecision::Refuse(_) => false,
        IdDecision::Confirm(new) => {
            meta.provider_session = Some(new);
            true
        }
        IdDecision::Replace { new, change } => {
            meta.provider_session = Some(new);
            if let Some(change) = change {
                push_history(meta, change);
            }
            true
        }
    }
}

/// Forget a session's provider id so its next wake starts a fresh
/// conversation (the "fork" fix for a duplicate). Returns the forgotten id.
pub fn forget_provider_id(meta: &mut SessionMeta, now_ms: u64) -> Option<String> {
    let old = meta.provider_session.take()?;
    push_history(
        meta,
        IdChange {
            from: Some(old.id.clone()),
            to: None,
            source: None,
            at_ms: now_ms,
            account_move: None,
        },
    );
    Some(old.id)
}

/// Move a session to account `to` (`None`: the provider's own login),
/// whose CLI keeps its state in `folder` (`None`: the daemon's folder),
/// once its conversation was carried there. The ledger records the move
/// under its id, which stays the one it resumes: a move never starts a
/// new conversation nor drops one.
pub fn move_to_account(
    meta: &mut SessionMeta,
    to: Option<String>,
    folder: Option<&str>,
    now_ms: u64,
) {
    let from = std::mem::replace(&mut meta.account, to.clone());
    meta.state_folder = folder.map(Box::from);
    if from == to {
        return;
    }
    if let Some(id) = meta.durable_provider_id().map(str::to_owned) {
        push_history(
            meta,
            IdChange {
                from: Some(id.clone()),
                to: Some(id),
                source: None,
                at_ms: now_ms,
                account_move: Some(Box::new(crate::model::AccountMove { from, to })),
            },
        );
    }
}

fn push_history(meta: &mut SessionMeta, change: IdChange) {
    meta.provider_id_history.push(change);
    let excess = meta.provider_id_history.len().saturating_sub(HISTORY_LIMIT);
    meta.provider_id_history.drain(..excess);
}

/// What is known about one transcript file, read by the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptFacts {
    pub id: String,
    pub cwd: Option<String>,
    /// Last modification, milliseconds since the epoch.
    pub modified_ms: u64,
}

/// The facts about a live session a transcript is matched against.
#[derive(Clone, Debug)]
pub struct TranscriptMatch<'a> {
    pub session_cwd: &'a str,
    /// The session's current durable id.
    pub current: Option<&'a str>,
    /// Durable ids other sessions hold: never adopted (it would make two
    /// sessions resume one conversation).
    pub held_by_others: &'a BTreeSet<String>,
    /// Ids of the transcripts this session's process tree holds open right
    /// now (codex keeps its rollout open for the whole session): proof that
    /// the session's own process writes them (DESIGN.md rule 10).
    pub open_by_self: &'a BTreeSet<String>,
    /// Ids of the transcripts the processes of other live sessions hold
    /// open: written by someone else, so never this session's.
    pub open_by_others: &'a BTreeSet<String>,
}

/// The transcript that is this session's own right now.
///
/// Only proof counts (DESIGN.md rule 10): a transcript the session's own
/// process tree holds open, the newest of them when there are several, or
/// the transcript of the id the session already has (which confirms it). A
/// transcript that merely appeared in the session's folder, however new, is
/// never picked: it may be a person's own `claude` or `codex` in another
/// terminal. A transcript another session holds as its id, or that another
/// session's process holds open, is never picked, nor one that ran in
/// another folder. `None` when nothing qualifies.
pub fn pick_transcript<'t>(
    candidates: &'t [TranscriptFacts],
    m: &TranscriptMatch<'_>,
) -> Option<&'t TranscriptFacts> {
    let own_folder = |t: &&TranscriptFacts| {
        t.cwd
            .as_deref()
            .is_some_and(|c| cwd_matches(m.session_cwd, c))
    };
    let not_someone_elses = |t: &&TranscriptFacts| {
        !m.held_by_others.contains(&t.id)
            && (!m.open_by_others.contains(&t.id) || m.open_by_self.contains(&t.id))
    };
    // Newest first; on a tie the current id stays.
    let rank = |t: &TranscriptFacts| (t.modified_ms, m.current == Some(t.id.as_str()));
    let newest = |mut v: Vec<&'t TranscriptFacts>| {
        v.sort_by_key(|t| std::cmp::Reverse(rank(t)));
        v.first().copied()
    };
    let written_by_self: Vec<&TranscriptFacts> = candidates
        .iter()
        .filter(|t| m.open_by_self.contains(&t.id))
        .filter(own_folder)
        .filter(not_someone_elses)
        .collect();
    if !written_by_self.is_empty() {
        return newest(written_by_self);
    }
    candidates
        .iter()
        .filter(|t| m.current == Some(t.id.as_str()))
        .filter(own_folder)
        .find(not_someone_elses)
}

/// Sessions sharing one durable provider session id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DuplicateGroup {
    pub provider: Provider,
    pub provider_session_id: String,
    /// In id order; always two or more.
    pub sessions: Vec<SessionId>,
}

/// Every group of two or more sessions of one provider holding one durable
/// provider session id. Two processes writing one conversation corrupt it.
pub fn duplicate_groups(ws: &Workspace) -> Vec<DuplicateGroup> {
    let mut by_id: BTreeMap<(String, String), Vec<SessionId>> = BTreeMap::new();
    for (id, meta) in &ws.sessions {
        if let Some(pid) = meta.durable_provider_id() {
            by_id
                .entry((meta.provider.name().to_owned(), pid.to_owned()))
                .or_default()
                .push(id.clone());
        }
    }
    by_id
        .into_iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|((provider, pid), sessions)| DuplicateGroup {
            provider: Provider::from_name(&provider),
            provider_session_id: pid,
            sessions,
        })
        .collect()
}

/// The other sessions holding `id`'s durable provider session id.
pub fn duplicates_of(ws: &Workspace, id: &SessionId) -> Vec<SessionId> {
    let Some(meta) = ws.sessions.get(id) else {
        return Vec::new();
    };
    let Some(pid) = meta.durable_provider_id() else {
        return Vec::new();
    };
    ws.sessions
        .iter()
        .filter(|(other, m)| {
            *other != id && m.provider == meta.provider && m.durable_provider_id() == Some(pid)
        })
        .map(|(other, _)| other.clone())
        .collect()
}

/// Why a wake was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "session {session} resumes provider session {provider_session_id}, which live session {live} \
     is already running; two processes writing one conversation corrupt it. Hibernate {live} first, \
     or run `hangar doctor --fork {session}` to start {session} as a fresh conversation"
)]
pub struct WakeRefused {
    pub session: SessionId,
    pub live: SessionId,
    pub provider_session_id: String,
}

/// The duplicate-wake rule: whether `id` may be woken while the sessions
/// `is_live` accepts run (live or spawning). A session that runs already
/// may (the wake finds it live or joins its spawn); any other not while
/// another running session holds its durable provider session id: two
/// processes writing one conversation corrupt it.
pub fn may_wake(
    ws: &Workspace,
    id: &SessionId,
    is_live: impl Fn(&SessionId) -> bool,
) -> Result<(), WakeRefused> {
    if is_live(id) {
        return Ok(());
    }
    let Some(pid) = ws.sessions.get(id).and_then(|m| m.durable_provider_id()) else {
        return Ok(());
    };
    match duplicates_of(ws, id).into_iter().find(|o| is_live(o)) {
        Some(live) => Err(WakeRefused {
            session: id.clone(),
            live,
            provider_session_id: pid.to_owned(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn psid(id: &str, source: Option<IdSource>) -> ProviderSessionId {
        ProviderSessionId {
            id: id.into(),
            source,
        }
    }

    fn seen(id: &str, source: IdSource, cwd: Option<&str>) -> Observation {
        Observation {
            id: id.into(),
            source,
            cwd: cwd.map(str::to_owned),
        }
    }

    #[test]
    fn a_new_durable_id_after_clear_replaces_the_old_and_records_both_with_the_time() {
        let cur = psid("old", Some(IdSource::ResumeRequest));
        let d = decide(
            Some(&cur),
            &seen("new", IdSource::Transcript, Some("/w")),
            "/w",
            77,
        );
        let mut meta = SessionMeta::new("s".into(), Provider::Claude, "/w");
        meta.provider_session = Some(cur);
        assert!(apply(&mut meta, d));
        assert_eq!(
            meta.provider_session,
            Some(psid("new", Some(IdSource::Transcript)))
        );
        assert_eq!(
            meta.provider_id_history,
            vec![IdChange {
                from: Some("old".into()),
                to: Some("new".into()),
                source: Some(IdSource::Transcript),
                at_ms: 77,
                account_move: None,
            }]
        );
    }

    #[test]
    fn an_account_move_keeps_the_conversation_and_records_where_it_went() {
        let mut meta = SessionMeta::new("s".into(), Provider::Claude, "/w");
        meta.provider_session = Some(psid("c1", Some(IdSource::Transcript)));
        meta.account = Some("work".into());
        move_to_account(&mut meta, Some("home".into()), Some("/h/.claude-home"), 90);
        assert_eq!(
            meta.durable_provider_id(),
            Some("c1"),
            "the same conversation"
        );
        assert_eq!(meta.account.as_deref(), Some("home"));
        assert_eq!(meta.state_folder.as_deref(), Some("/h/.claude-home"));
        assert_eq!(
            meta.provider_id_history,
            vec![IdChange {
                from: Some("c1".into()),
                to: Some("c1".into()),
                source: None,
                at_ms: 90,
                account_move: Some(Box::new(crate::model::AccountMove {
                    from: Some("work".into()),
                    to: Some("home".into()),
                })),
            }]
        );
        // Back to the provider's own login, in the daemon's folder.
        move_to_account(&mut meta, None, None, 91);
        assert_eq!(meta.state_folder, None);
        assert_eq!(meta.provider_id_history.len(), 2);
        // The same account again records nothing.
        move_to_account(&mut meta, None, None, 92);
        assert_eq!(meta.provider_id_history.len(), 2);
    }

    #[test]
    fn a_fork_never_adopts_the_conversation_it_was_forked_from() {
        let mut parent = SessionMeta::new("p".into(), Provider::Codex, "/w");
        parent.provider_session = Some(psid("old", Some(IdSource::Transcript)));
        let mut fork = SessionMeta::new("f".into(), Provider::Codex, "/w");
        fork.forked_from = Some(Box::new(
            crate::fork::plan_fork(&parent, &Provider::Codex, 1).expect("forkable"),
        ));
        let d = decide_for(
            &fork,
            &seen("old", IdSource::Transcript, Some("/w")),
            "/w",
            2,
        );
        assert_eq!(d, IdDecision::Refuse(IdRefusal::ForkOrigin));
        // Its own new conversation is adopted as usual.
        let d = decide_for(
            &fork,
            &seen("new", IdSource::Transcript, Some("/w")),
            "/w",
            2,
        );
        assert!(apply(&mut fork, d));
        assert_eq!(fork.durable_provider_id(), Some("new"));
    }

    #[test]
    fn a_transcript_from_another_folder_is_refused() {
        let d = decide(
            None,
            &seen("x", IdSource::Transcript, Some("/elsewhere")),
            "/w",
            1,
        );
        assert!(matches!(
            d,
            IdDecision::Refuse(IdRefusal::CwdMismatch { .. })
        ));
        let d = decide(None, &seen("x", IdSource::Transcript, None), "/w", 1);
        assert_eq!(d, IdDecision::Refuse(IdRefusal::CwdUnknown));
    }

    #[test]
    fn trailing_slashes_do_not_make_folders_differ() {
        assert!(cwd_matches("/w/", "/w"));
        assert!(cwd_matches("/", "/"));
        assert!(!cwd_matches("/w", "/w2"));
    }

    #[test]
    fn a_proxy_header_id_never_replaces_a_durable_one_but_fills_an_empty_slot_unrecorded() {
        let cur = psid("d", None);
        let d = decide(Some(&cur), &seen("p", IdSource::ProxyHeader, None), "/w", 1);
        assert_eq!(d, IdDecision::Refuse(IdRefusal::ProvisionalOverDurable));
        let d = decide(None, &seen("p", IdSource::ProxyHeader, None), "/w", 1);
        assert_eq!(
            d,
            IdDecision::Replace {
                new: psid("p", Some(IdSource::ProxyHeader)),
                change: None
            }
        );
    }

    #[test]
    fn the_transcript_confirming_a_requested_id_upgrades_its_source_without_history() {
        let cur = psid("a", Some(IdSource::ResumeRequest));
        let d = decide(
            Some(&cur),
            &seen("a", IdSource::Transcript, Some("/w")),
            "/w",
            1,
        );
        assert_eq!(
            d,
            IdDecision::Confirm(psid("a", Some(IdSource::Transcript)))
        );
        let cur = psid("a", Some(IdSource::Transcript));
        let d = decide(
            Some(&cur),
            &seen("a", IdSource::ResumeRequest, None),
            "/w",
            1,
        );
        assert_eq!(d, IdDecision::Keep);
    }

    #[test]
    fn a_durable_id_replaces_a_provisional_one_and_is_recorded() {
        let cur = psid("p", Some(IdSource::ProxyHeader));
        let d = decide(
            Some(&cur),
            &seen("t", IdSource::Transcript, Some("/w")),
            "/w",
            5,
        );
        let IdDecision::Replace { change, .. } = d else {
            panic!("{d:?}")
        };
        assert_eq!(change.unwrap().from.as_deref(), Some("p"));
    }

    #[test]
    fn history_is_bounded_and_keeps_the_newest_changes() {
        let mut meta = SessionMeta::new("s".into(), Provider::Claude, "/w");
        for i in 0..(HISTORY_LIMIT as u64 + 5) {
            let d = decide(
                meta.provider_session.as_ref(),
                &seen(&format!("id{i}"), IdSource::Transcript, Some("/w")),
                "/w",
                i,
            );
            apply(&mut meta, d);
        }
        assert_eq!(meta.provider_id_history.len(), HISTORY_LIMIT);
        assert_eq!(
            meta.provider_id_history.last().unwrap().at_ms,
            HISTORY_LIMIT as u64 + 4
        );
    }

    #[test]
    fn forgetting_an_id_records_the_fork_and_leaves_no_id_to_resume() {
        let mut meta = SessionMeta::new("s".into(), Provider::Claude, "/w");
        meta.provider_session = Some(psid("a", None));
        assert_eq!(forget_provider_id(&mut meta, 9).as_deref(), Some("a"));
        assert_eq!(meta.durable_provider_id(), None);
        assert_eq!(meta.provider_id_history[0].to, None);
        assert_eq!(forget_provider_id(&mut meta, 10), None);
    }

    fn facts(id: &str, cwd: &str, at: u64) -> TranscriptFacts {
        TranscriptFacts {
            id: id.into(),
            cwd: Some(cwd.into()),
            modified_ms: at,
        }
    }

    static NONE: BTreeSet<String> = BTreeSet::new();

    fn ids(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn matching<'a>(current: Option<&'a str>, mine: &'a BTreeSet<String>) -> TranscriptMatch<'a> {
        TranscriptMatch {
            session_cwd: "/w",
            current,
            held_by_others: &NONE,
            open_by_self: mine,
            open_by_others: &NONE,
        }
    }

    #[test]
    fn a_newer_transcript_in_the_folder_that_the_session_does_not_write_is_never_adopted() {
        // A person's own claude in another terminal, same folder, newer file:
        // rule 10 says it is not this session's, with or without an id yet.
        let c = vec![facts("mine", "/w", 5), facts("outside", "/w", 9)];
        assert_eq!(
            pick_transcript(&c, &matching(Some("mine"), &NONE))
                .unwrap()
                .id,
            "mine"
        );
        assert_eq!(pick_transcript(&c, &matching(None, &NONE)), None);
        let c = vec![facts("outside", "/w", 9)];
        assert_eq!(pick_transcript(&c, &matching(Some("mine"), &NONE)), None);
    }

    #[test]
    fn the_current_ids_transcript_confirms_it_only_when_it_ran_in_the_sessions_folder() {
        let c = vec![facts("a", "/w", 5)];
        assert_eq!(
            pick_transcript(&c, &matching(Some("a"), &NONE)).unwrap().id,
            "a"
        );
        let c = vec![facts("a", "/x", 5)];
        assert_eq!(pick_transcript(&c, &matching(Some("a"), &NONE)), None);
    }

    #[test]
    fn a_transcript_another_session_holds_is_never_picked() {
        let held: BTreeSet<String> = ["b".to_owned()].into();
        let mine = ids(&["b"]);
        let m = TranscriptMatch {
            held_by_others: &held,
            ..matching(Some("a"), &mine)
        };
        let c = vec![facts("a", "/w", 5), facts("b", "/w", 9)];
        assert_eq!(pick_transcript(&c, &m).unwrap().id, "a");
    }

    #[test]
    fn in_a_shared_folder_the_transcript_a_session_holds_open_is_its_own_even_without_an_id() {
        // Two fresh codex sessions in one folder: neither has an id yet.
        let (mine, theirs) = (ids(&["a"]), ids(&["b"]));
        let m = TranscriptMatch {
            open_by_others: &theirs,
            ..matching(None, &mine)
        };
        let c = vec![facts("a", "/w", 5), facts("b", "/w", 9)];
        assert_eq!(pick_transcript(&c, &m).unwrap().id, "a");
        // Without the open files nothing proves either is its own.
        assert_eq!(pick_transcript(&c, &matching(None, &NONE)), None);
    }

    #[test]
    fn a_transcript_another_sessions_process_holds_open_is_never_adopted_even_alone_in_the_folder()
    {
        let theirs = ids(&["a"]);
        let m = TranscriptMatch {
            open_by_others: &theirs,
            ..matching(Some("a"), &NONE)
        };
        let c = vec![facts("a", "/w", 9)];
        assert_eq!(pick_transcript(&c, &m), None);
    }

    #[test]
    fn a_session_whose_process_holds_its_transcript_open_ignores_newer_ones_it_does_not_write() {
        let mine = ids(&["b"]);
        // "b" is older (a resumed rollout) but open by the session's process;
        // "a" is newer and in the folder: not its own.
        let c = vec![facts("b", "/w", 10), facts("a", "/w", 101_000)];
        assert_eq!(pick_transcript(&c, &matching(None, &mine)).unwrap().id, "b");
        // An open file from another folder is not adopted (the cwd rule holds).
        let c = vec![facts("b", "/x", 101_000)];
        assert_eq!(pick_transcript(&c, &matching(None, &mine)), None);
    }

    #[test]
    fn of_two_open_transcripts_the_newest_wins_and_a_tie_keeps_the_current_id() {
        let mine = ids(&["a", "a2"]);
        let c = vec![facts("a", "/w", 5), facts("a2", "/w", 9)];
        assert_eq!(
            pick_transcript(&c, &matching(Some("a"), &mine)).unwrap().id,
            "a2"
        );
        let c = vec![facts("a", "/w", 9), facts("a2", "/w", 9)];
        assert_eq!(
            pick_transcript(&c, &matching(Some("a"), &mine)).unwrap().id,
            "a"
        );
    }

    fn ws_with(ids: &[(&str, Provider, Option<ProviderSessionId>)]) -> Workspace {
        let mut ws = Workspace::default();
        for (id, p, psid) in ids {
            let mut m = SessionMeta::new((*id).into(), p.clone(), "/w");
            m.provider_session = psid.clone();
            ws.sessions.insert(m.id.clone(), m);
        }
        ws
    }

    #[test]
    fn two_sessions_with_one_durable_id_are_a_duplicate_but_a_provisional_one_is_not() {
        let ws = ws_with(&[
            ("a", Provider::Claude, Some(psid("x", None))),
            (
                "b",
                Provider::Claude,
                Some(psid("x", Some(IdSource::Transcript))),
            ),
            (
                "c",
                Provider::Claude,
                Some(psid("x", Some(IdSource::ProxyHeader))),
            ),
            ("d", Provider::Codex, Some(psid("x", None))),
            ("e", Provider::Claude, None),
        ]);
        assert_eq!(
            duplicate_groups(&ws),
            vec![DuplicateGroup {
                provider: Provider::Claude,
                provider_session_id: "x".into(),
                sessions: vec!["a".into(), "b".into()],
            }]
        );
        assert_eq!(duplicates_of(&ws, &"a".into()), vec![SessionId::from("b")]);
        assert!(duplicates_of(&ws, &"c".into()).is_empty());
        assert!(duplicates_of(&ws, &"d".into()).is_empty());
    }

    #[test]
    fn waking_the_second_of_a_duplicate_while_the_first_is_live_is_refused() {
        let ws = ws_with(&[
            ("a", Provider::Claude, Some(psid("x", None))),
            ("b", Provider::Claude, Some(psid("x", None))),
        ]);
        let live_a = |s: &SessionId| s.as_str() == "a";
        let e = may_wake(&ws, &"b".into(), live_a).unwrap_err();
        assert_eq!(e.live, SessionId::from("a"));
        assert!(e.to_string().contains("hangar doctor --fork b"), "{e}");
        assert!(may_wake(&ws, &"b".into(), |_| false).is_ok());
        assert!(may_wake(&ws, &"a".into(), live_a).is_ok());
    }

    #[test]
    fn a_running_session_may_be_woken_again_even_while_its_duplicate_runs() {
        // Both running (an old daemon's leftover, say): waking either one
        // joins what runs rather than being refused.
        let ws = ws_with(&[
            ("a", Provider::Claude, Some(psid("x", None))),
            ("b", Provider::Claude, Some(psid("x", None))),
        ]);
        assert!(may_wake(&ws, &"a".into(), |_| true).is_ok());
        assert!(may_wake(&ws, &"b".into(), |_| true).is_ok());
    }

    #[test]
    fn a_session_without_a_durable_id_is_never_refused_a_wake() {
        let ws = ws_with(&[
            (
                "a",
                Provider::Claude,
                Some(psid("x", Some(IdSource::ProxyHeader))),
            ),
            (
                "b",
                Provider::Claude,
                Some(psid("x", Some(IdSource::ProxyHeader))),
            ),
            ("c", Provider::Claude, None),
        ]);
        let others_live = |s: &SessionId| s.as_str() != "b" && s.as_str() != "c";
        assert!(may_wake(&ws, &"b".into(), others_live).is_ok());
        assert!(may_wake(&ws, &"c".into(), others_live).is_ok());
    }
}
