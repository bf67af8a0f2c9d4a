//! Requests about sessions themselves: new, ls, send, close. The close
//! path every closer shares is the governor's `close_sessions`; typing and
//! confirming a prompt is `Delivery::send`.
//!
//! Each one edits the model through `hangar-core`, persists it before
//! answering (one store transaction), and only then starts or stops
//! processes. The rules themselves (what a close cascades to, where an
//! unburied pane goes) live in `hangar-core`.

use std::path::Path;

use hangar_core::activity::StandingLimit;
use hangar_core::{Direction, Provider, SessionId, SessionMeta};
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply;
use hangar_protocol::view::SessionView;
use serde_json::json;

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::{Caller, CloseCause};
use crate::sessions::{Added, NewPlace, NewSession, RunState};
use hangar_providers::launch::{LaunchEnv, resolve_program};

pub(super) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub(super) fn parse_direction(d: Option<&str>) -> Result<Direction, ApiError> {
    match d.unwrap_or("vertical") {
        "vertical" | "v" => Ok(Direction::Vertical),
        "horizontal" | "h" => Ok(Direction::Horizontal),
        other => Err(ApiError::invalid(format!(
            "direction must be vertical or horizontal, not {other:?}"
        ))),
    }
}

/// The provider `new` uses when none is named: the first agent CLI whose
/// program is found, else the shell.
fn default_provider(providers: &hangar_providers::ProvidersConfig) -> Provider {
    let var = |k: &str| std::env::var(k).ok();
    let env = LaunchEnv {
        providers,
        var: &var,
        dangerous: false,
        mint: &new_id,
        fork_from: None,
    };
    hangar_core::new_session::default_provider(|p| resolve_program(p, &env).is_ok())
}

pub async fn new(daemon: &Daemon, req: msg::NewSession) -> Result<reply::Created, ApiError> {
    let config = daemon.config.snapshot();
    let provider = match req.provider.as_deref().map(str::trim) {
        None | Some("") => default_provider(&config.providers),
        Some(p) => {
            let provider = Provider::from_name(p);
            if let Provider::Custom(name) = &provider
                && !config.providers.contains_key(name)
            {
                return Err(ApiError::invalid(format!(
                    "unknown provider {name:?}: use claude, codex, opencode, shell, or define [providers.{name}] in config.toml"
                )));
            }
            provider
        }
    };
    let direction = parse_direction(req.direction.as_deref())?;
    let sandboxed = daemon.sandbox.wanted(
        req.sandbox,
        config
            .providers
            .get(provider.name())
            .is_some_and(|p| p.sandbox),
    );
    let engine = match req.engine.as_deref().map(str::trim) {
        None | Some("") => {
            if req.image.is_some() {
                return Err(ApiError::invalid("--image needs --engine NAME"));
            }
            None
        }
        Some(name) => {
            daemon
                .engines
                .check_new(name)
                .map_err(|e| ApiError::invalid(e.0))?;
            Some(hangar_core::engine::EngineBinding {
                name: name.to_owned(),
                image: req.image.clone().filter(|i| !i.trim().is_empty()),
            })
        }
    };
    // `[sandbox] enabled` (or a provider's `sandbox = true`) with an engine
    // is the engine's walls; only asking for both at once is refused.
    if req.sandbox && engine.is_some() {
        return Err(ApiError::invalid(
            "--sandbox and --engine cannot be combined: an engine's container is the session's walls",
        ));
    }
    let now = daemon.os.now_ms();
    let worktree_title = req.title.as_deref().filter(|t| !t.trim().is_empty());
    let prepared = daemon
        .worktrees
        .prepare_worktree(
            &req,
            worktree_title.unwrap_or(provider.name()),
            &config.worktree,
        )
        .await?;
    let new = NewSession {
        place: NewPlace {
            tab: req.tab.as_deref(),
            cwd: req.cwd.as_deref(),
            fallback_cwd: req.fallback_cwd.as_deref(),
        },
        provider: provider.clone(),
        title: req.title.as_deref(),
        now_ms: now,
        capture: !req.no_capture,
        mcp: !req.no_mcp,
        parked: req.parked,
        split: req.split.as_deref().map(|target| (target, direction)),
    };
    // The folder is looked at on disk before the lock; should the tab's
    // folder change meanwhile, the new one is looked at and the add asked
    // again.
    let mut cwd = daemon.sessions.new_session_folder(&new.place)?;
    let id = loop {
        if !Path::new(&cwd).is_dir() {
            return Err(ApiError::invalid(format!(
                "folder {cwd} does not exist; pass an existing --cwd"
            )));
        }
        // Where its git work starts, for `hangar diff` (issue 30).
        let git_base = {
            let wt = prepared.as_ref().map(|p| p.info.clone());
            let dir = std::path::PathBuf::from(&cwd);
            let os = daemon.os.clone();
            crate::worktree::blocking(move || {
                crate::review::start_base(os.as_ref(), wt.as_ref(), &dir)
            })
            .await
            .ok()
            .flatten()
        };
        let finish = |meta: &mut SessionMeta| {
            if let Some(p) = &prepared {
                p.apply(meta);
            }
            if sandboxed || engine.is_some() {
                // Its own state folder (and its own socket back to hangar
                // for its hooks and MCP server, made at each start); an
                // engine's container gets the same (`Sandbox::walls`).
                meta.sandbox = Some(daemon.sandbox.folder_for(&meta.id));
            }
            meta.git_base = git_base.clone().map(Box::new);
            meta.engine = engine.clone().map(Box::new);
        };
        match daemon.sessions.add_session(&new, &cwd, finish)? {
            Added::Session(id) => break id,
            Added::Recheck(other) => cwd = other,
        }
    };
    let parked = req.parked;
    if let Some(failed) = daemon.worktrees.adopt_worktree(&id, prepared) {
        return Ok(reply::Created {
            id: id.to_string(),
            state: failed.name().to_owned(),
        });
    }
    let state = if parked {
        RunState::Hibernated
    } else {
        daemon.governor.wake_as(&id, Caller::New).await?
    };
    Ok(reply::Created {
        id: id.to_string(),
        state: state.name().to_owned(),
    })
}

pub fn list(daemon: &Daemon) -> Vec<SessionView> {
    let rows = daemon.sessions.views();
    let rows: Vec<_> = rows
        .into_iter()
        .map(|mut row| {
            row.usage = daemon.proxy.usage_view(&row.id);
            // Where it runs: its sandbox's walls, its engine.
            let place = daemon
                .sessions
                .meta(&SessionId::from(row.id.as_str()))
                .map(|m| daemon.places.inspect(&m))
                .unwrap_or_default();
            row.sandbox = place.sandbox;
            row.engine = place.engine;
            row
        })
        .collect();
    // Activity is read off the state lock: a hibernated session's
    // transcript may be read (never woken).
    rows.into_iter()
        .map(|mut row| {
            let (activity, since) = daemon
                .monitor
                .activity_of(&SessionId::from(row.id.as_str()));
            row.activity = activity.name().to_owned();
            row.activity_since = (since > 0).then_some(since);
            row.limit = daemon.usage.limit_view(&row.id);
            row.goal = daemon.goals.view_of(&row.id);
            // Limited above whatever the agent's own retries look like
            // (`hangar_core::activity::shown`).
            let standing = row.limit.as_ref().map(|l| StandingLimit {
                resets_at: l.resets_at,
            });
            let shown = hangar_core::activity::shown(activity, standing, daemon.usage.now());
            row.activity = shown.name().to_owned();
            if row.state == "hibernated" && row.reason.is_none() {
                row.reason = daemon
                    .usage
                    .budget_hibernated_why(&row.id)
                    .map(|why| format!("hibernated: its cost budget is spent ({why})"));
            }
            row
        })
        .collect()
}

pub(super) fn touch(daemon: &Daemon, id: &SessionId) {
    daemon.sessions.touch(id, daemon.os.now_ms());
}

pub async fn send(daemon: &Daemon, req: msg::Send) -> Result<reply::Sent, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    // A person's words: a limit's continuation stands down after them.
    daemon.usage.person_typed(&id);
    let state = daemon.governor.wake_as(&id, Caller::Send).await?;
    if let RunState::Failed(reason) = state {
        return Err(ApiError::new(codes::FAILED, reason));
    }
    daemon.delivery.send(&id, &req.text, req.enter).await
}

pub async fn close(daemon: &Daemon, req: msg::Close) -> Result<reply::Closed, ApiError> {
    let cascade = daemon.sessions.close_cascade(&req.session)?;
    if cascade.len() > 1 && !req.yes {
        return Err(needs_confirmation(
            format!(
                "closing {} also closes {} linked session(s): {}; pass --yes to close them all",
                cascade[0].short(),
                cascade.len() - 1,
                cascade[1..]
                    .iter()
                    .map(SessionId::short)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &cascade,
        ));
    }
    let (kept, removed) = daemon
        .governor
        .close_sessions(&cascade, req.delete_branch, CloseCause::User, &cascade[..1])
        .await?;
    Ok(reply::Closed {
        closed: cascade.iter().map(|s| s.to_string()).collect(),
        kept_worktrees: kept,
        removed_worktrees: removed,
    })
}

pub(super) fn needs_confirmation(message: String, cascade: &[SessionId]) -> ApiError {
    ApiError {
        code: codes::NEEDS_CONFIRMATION,
        message,
        detail: json!({"would_close": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>()}),
    }
}
