//! `search`: lines matching a query in every session's history, screen and
//! transcript (`hangar search`, the TUI's search dialog).
//!
//! Read-only by construction: a live session's text comes from its
//! server-side terminal, a stopped one's from the screen and history saved
//! in the store (as `hangar screen --scrollback` reads them), and a
//! transcript from the provider's own files through hangar-providers'
//! readers. It must never wake a session, start a process or run a CLI: a
//! search over 40 hibernated agents costs file reads, not 40 spawns. The
//! rule (smart case, order, caps, clean excerpts) is
//! `hangar_core::search`'s.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use hangar_core::search::{self, Query, SessionMatches, SessionText};
use hangar_core::{Provider, SessionId};
use hangar_protocol::message as msg;
use hangar_protocol::view::{SearchMatchView, SearchUnreadable, SearchView};
use hangar_providers::transcript::discovery::{self, TranscriptIndex};
use hangar_providers::transcript::messages;

use crate::Daemon;
use crate::errors::ApiError;
use crate::pty::LiveProcess;

/// What is read of one session, gathered under the sessions lock and
/// searched outside it.
struct Subject {
    id: SessionId,
    title: String,
    tab: Option<String>,
    state: String,
    provider: Provider,
    cwd: String,
    provider_session_id: Option<String>,
    /// Where its transcripts are (a sandboxed session's own folder).
    transcript_root: Option<std::path::PathBuf>,
    text: Text,
}

enum Text {
    Live(Arc<LiveProcess>),
    /// The saved form of its terminal (`None`: nothing was ever saved).
    Saved(Option<Vec<u8>>),
}

pub async fn search(daemon: &Daemon, req: msg::Search) -> Result<SearchView, ApiError> {
    let query = Query::new(&req.query).ok_or_else(|| {
        ApiError::invalid(
            "nothing to search for: the query is empty (or only control characters)".to_owned(),
        )
    })?;
    let per_session = req.per_session.unwrap_or(search::DEFAULT_PER_SESSION);
    let total = req.total.unwrap_or(search::DEFAULT_TOTAL);
    let mut subjects: Vec<Subject> = daemon
        .sessions
        .facts_of(req.session.as_deref())?
        .into_iter()
        .map(|f| Subject {
            transcript_root: discovery::session_transcript_root(&f.meta, &discovery::env_var),
            title: f.meta.title,
            tab: f.tab.map(|t| t.to_string()),
            state: f.shown_state.name().to_owned(),
            provider: f.meta.provider,
            cwd: f.meta.cwd,
            provider_session_id: f.meta.provider_session.map(|p| p.id),
            text: match f.process {
                Some(l) => Text::Live(l),
                None => Text::Saved(None),
            },
            id: f.id,
        })
        .collect();
    let mut unreadable = Vec::new();
    // One short lock per saved screen: a search over thousands of stopped
    // sessions must not hold every other request behind it.
    for s in &mut subjects {
        if let Text::Saved(saved) = &mut s.text {
            match daemon.sessions.load_screen(&s.id) {
                Ok(screen) => *saved = screen,
                Err(e) => unreadable.push(SearchUnreadable {
                    session: s.id.to_string(),
                    reason: format!("cannot read its saved screen: {e}"),
                }),
            }
        }
    }
    let model = daemon.config.snapshot().terminal.model();
    let query_text = req.query.clone();
    let view = tokio::task::spawn_blocking(move || {
        let mut found = Vec::with_capacity(subjects.len());
        // Codex's sessions/ folder is walked once per search, not per session.
        let mut indexes = Indexes::new();
        for s in &subjects {
            let (text, problem) = session_text(s, model, &mut indexes);
            if let Some(reason) = problem {
                unreadable.push(SearchUnreadable {
                    session: s.id.to_string(),
                    reason,
                });
            }
            let m: SessionMatches = search::session_matches(&query, &text, per_session);
            if !m.found.is_empty() || m.capped {
                found.push((s, m));
            }
        }
        let combined = search::combine(found, total);
        SearchView {
            query: query_text,
            case_sensitive: query.case_sensitive(),
            matches: combined
                .matches
                .into_iter()
                .map(|(s, f)| SearchMatchView {
                    session: s.id.to_string(),
                    title: s.title.clone(),
                    tab: s.tab.clone(),
                    source: f.source.name().to_owned(),
                    line: f.line,
                    text: f.text,
                    column: f.column,
                    length: f.length,
                    state: s.state.clone(),
                })
                .collect(),
            truncated: combined.truncated,
            unreadable,
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("search failed: {e}")))?;
    Ok(view)
}

/// One search's transcript indexes, by CLI and transcript folder (a
/// sandboxed session's CLI keeps its own folder); `None` for a CLI that
/// finds a transcript without a walk.
type Indexes = HashMap<(Provider, PathBuf), Option<TranscriptIndex>>;

/// A session's screen, history and transcript, and why part of it could
/// not be read (a transcript that does not exist yet is not a problem).
fn session_text(
    s: &Subject,
    model: hangar_terminal::Config,
    indexes: &mut Indexes,
) -> (SessionText, Option<String>) {
    let (screen, history) = match &s.text {
        Text::Live(live) => (
            live.text().lines().map(str::to_owned).collect(),
            live.scrollback(usize::MAX),
        ),
        Text::Saved(Some(saved)) => {
            let mut t = hangar_terminal::Terminal::restore(saved, model);
            (t.screen_lines(), t.scrollback(usize::MAX))
        }
        Text::Saved(None) => (Vec::new(), Vec::new()),
    };
    let (transcript, problem) = match transcript_messages(s, indexes) {
        Ok(m) => (m, None),
        Err(reason) => (Vec::new(), Some(reason)),
    };
    (
        SessionText {
            screen,
            history,
            transcript,
        },
        problem,
    )
}

/// The session's transcript messages, oldest first, as `hangar transcript`
/// reads them; none for a provider without transcripts or a session whose
/// conversation has no file yet. A CLI whose search is a walk (codex) is
/// looked up in its index of that folder (`indexes`), built on first use.
fn transcript_messages(s: &Subject, indexes: &mut Indexes) -> Result<Vec<String>, String> {
    let (Some(root), Some(psid)) = (s.transcript_root.clone(), s.provider_session_id.as_deref())
    else {
        return Ok(Vec::new());
    };
    let adapter = hangar_providers::adapter(&s.provider);
    let index = indexes
        .entry((s.provider.clone(), root.clone()))
        .or_insert_with(|| adapter.transcript_index(&root));
    let path = match index {
        Some(index) => index.get(psid).map(|p| p.to_path_buf()),
        None => discovery::find_transcript(&s.provider, &root, &s.cwd, psid),
    };
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    messages::read_tail(&s.provider, &path, usize::MAX)
        .map(|m| m.into_iter().map(|m| m.text).collect())
        .map_err(|e| format!("cannot read its transcript {}: {e}", path.display()))
}
