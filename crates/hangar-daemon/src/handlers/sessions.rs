//! Requests about sessions themselves: new, ls, send, close (and the close
//! path every other closer shares: evict, close-idle, agents' close tools).
//!
//! Each one edits the model through `hangar-core`, persists it before
//! answering (one store transaction), and only then starts or stops
//! processes. The rules themselves (what a close cascades to, where an
//! unburied pane goes) live in `hangar-core`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hangar_core::new_session::{
    NewSessionTab, new_session_cwd, new_session_tab, new_session_title,
};
use hangar_core::placement::PanePosition;
use hangar_core::{Direction, Provider, SessionId, SessionMeta, Tab, TabId};
use hangar_protocol::message::{self as msg, codes};
use serde_json::{Value, json};

use crate::Daemon;
use crate::delivery::Submitted;
use crate::errors::ApiError;
use crate::journal::{Caller, CloseCause, Event};
use crate::sessions::RunState;
use crate::spawn::short;
use hangar_providers::launch::{LaunchEnv, resolve_program};

/// The gap between typing a prompt and pressing Enter, so a TUI that treats
/// a fast burst as a paste does not swallow the Enter.
const ENTER_DELAY: Duration = Duration::from_millis(30);

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
fn default_provider(daemon: &Daemon) -> Provider {
    let var = |k: &str| std::env::var(k).ok();
    let env = LaunchEnv {
        providers: &daemon.config.providers,
        var: &var,
        dangerous: false,
        mint: &new_id,
    };
    hangar_core::new_session::default_provider(|p| resolve_program(p, &env).is_ok())
}

pub async fn new(daemon: &Arc<Daemon>, req: msg::NewSession) -> Result<Value, ApiError> {
    let provider = match req.provider.as_deref().map(str::trim) {
        None | Some("") => default_provider(daemon),
        Some(p) => {
            let provider = Provider::from_name(p);
            if let Provider::Custom(name) = &provider
                && !daemon.config.providers.contains_key(name)
            {
                return Err(ApiError::invalid(format!(
                    "unknown provider {name:?}: use claude, codex, opencode, shell, or define [providers.{name}] in config.toml"
                )));
            }
            provider
        }
    };
    let direction = parse_direction(req.direction.as_deref())?;
    let now = crate::now_ms();
    let worktree_title = req.title.as_deref().filter(|t| !t.trim().is_empty());
    let prepared = daemon
        .prepare_worktree(&req, worktree_title.unwrap_or(provider.name()))
        .await?;
    let (id, parked) = {
        daemon.sessions.edit(|st| {
            let tab_id = match new_session_tab(
                &st.ws,
                req.tab.as_deref(),
                req.cwd.as_deref(),
                req.fallback_cwd.as_deref(),
            )? {
                NewSessionTab::Existing(t) => t,
                NewSessionTab::Create { title, cwd } => {
                    let mut tab = Tab::new(TabId::new(new_id()), title);
                    tab.cwd = cwd;
                    let id = tab.id.clone();
                    st.ws.add_tab(tab)?;
                    id
                }
            };
            let cwd = new_session_cwd(
                req.cwd.as_deref(),
                st.ws.tab(&tab_id).and_then(|t| t.cwd.as_deref()),
                req.fallback_cwd.as_deref(),
            )
            .ok_or_else(|| ApiError::invalid("no folder given for the new session (--cwd)"))?;
            if !Path::new(&cwd).is_dir() {
                return Err(ApiError::invalid(format!(
                    "folder {cwd} does not exist; pass an existing --cwd"
                )));
            }
            let id = SessionId::new(new_id());
            let mut meta = SessionMeta::new(id.clone(), provider.clone(), cwd);
            meta.title = new_session_title(req.title.as_deref(), &provider);
            meta.created_at_ms = now;
            meta.last_active_ms = now;
            meta.capture = !req.no_capture;
            meta.mcp = !req.no_mcp;
            meta.dangerous = st.ws.settings.dangerous;
            if let Some(p) = &prepared {
                p.apply(&mut meta);
            }
            if req.parked {
                st.ws.add_parked_session(meta, &tab_id, now)?;
            } else {
                let position = match &req.split {
                    Some(target) => PanePosition::Split {
                        target: st.resolve_session(target)?,
                        direction,
                    },
                    None => PanePosition::Auto,
                };
                st.ws.add_pane_session(meta, &tab_id, position)?;
                st.ws.active_tab = Some(tab_id);
            }
            st.save(&[])?;
            Ok::<_, ApiError>((id, req.parked))
        })?
    };
    if let Some(failed) = daemon.adopt_worktree(&id, prepared) {
        return Ok(json!({"id": id.to_string(), "state": failed.name()}));
    }
    let state = if parked {
        RunState::Hibernated
    } else {
        daemon.wake_as(&id, Caller::New).await?
    };
    Ok(json!({"id": id.to_string(), "state": state.name()}))
}

pub fn list(daemon: &Daemon) -> Value {
    let rows: Vec<_> = daemon.sessions.read(|st| st.ordered_session_views());
    let rows: Vec<_> = rows
        .into_iter()
        .map(|mut row| {
            row.usage = daemon.proxy.usage_view(&row.id);
            row
        })
        .collect();
    // Activity is read off the state lock: a hibernated session's
    // transcript may be read (never woken).
    let rows: Vec<_> = rows
        .into_iter()
        .map(|mut row| {
            let (activity, since) = daemon.activity_of(&SessionId::from(row.id.as_str()));
            row.activity = activity.name().to_owned();
            row.activity_since = (since > 0).then_some(since);
            row
        })
        .collect();
    serde_json::to_value(rows).unwrap_or(Value::Null)
}

pub(super) fn touch(daemon: &Daemon, id: &SessionId) {
    daemon.sessions.edit(|st| {
        if let Some(m) = st.ws.sessions.get_mut(id) {
            m.last_active_ms = crate::now_ms();
        }
    })
}

pub async fn send(daemon: &Arc<Daemon>, req: msg::Send) -> Result<Value, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    let state = daemon.wake_as(&id, Caller::Send).await?;
    if let RunState::Failed(reason) = state {
        return Err(ApiError::new(codes::FAILED, reason));
    }
    let live = daemon.sessions.process(&id).ok_or_else(|| {
        ApiError::new(
            codes::FAILED,
            format!("session {} is not running", short(&id)),
        )
    })?;
    let write = |e: std::io::Error| {
        ApiError::new(
            codes::FAILED,
            format!("cannot type into {}: {e}", short(&id)),
        )
    };
    let _typing = live.typing().await;
    // Only a prompt typed into an agent ready for one starts a turn
    // hangar can watch for; anything else (a bare Enter too) is typed
    // and Entered once.
    let before = if req.enter && !req.text.trim().is_empty() && daemon.expects_turn(&id) {
        daemon.before_prompt(&id).await
    } else {
        None
    };
    let screen_before = live.text();
    if live.bracketed_paste() {
        let mut bytes = b"\x1b[200~".to_vec();
        bytes.extend_from_slice(req.text.as_bytes());
        bytes.extend_from_slice(b"\x1b[201~");
        live.write(&bytes).await.map_err(write)?;
    } else {
        live.write(req.text.as_bytes()).await.map_err(write)?;
    }
    let mut delivery = None;
    if req.enter {
        daemon.wait_echo(&live, &screen_before).await;
        tokio::time::sleep(ENTER_DELAY).await;
        match &before {
            Some(before) => {
                // The time is taken before the first Enter, so the
                // agent's reply is never older.
                let submitted = daemon
                    .submit(&id, &live, before, |at| daemon.note_input(&id, at))
                    .await
                    .map_err(write)?;
                delivery = Some(submitted);
            }
            None => {
                let typed_at = crate::now_ms();
                live.write(b"\r").await.map_err(write)?;
                daemon.note_input(&id, typed_at);
            }
        }
        daemon.note_typed(&id, &req.text);
    }
    touch(daemon, &id);
    // The text is typed: a last-use time the disk cannot take (full,
    // read-only) must not turn a delivered send into an error.
    if let Err(e) = daemon.sessions.edit(|st| st.save_observed(&[])) {
        tracing::warn!("cannot store the last use of {id}: {}", e.message);
    }
    let (confirmed, enters) = match delivery {
        Some(Submitted::NotDelivered { enters }) => {
            let mut err = ApiError::new(
                codes::FAILED,
                format!(
                    "the prompt was typed into {} but no turn started after {enters} Enters; \
                     it is probably still in its input box. `hangar attach {}` shows it",
                    short(&id),
                    short(&id)
                ),
            );
            err.detail = json!({"id": id.to_string(), "delivered": false, "enters": enters});
            return Err(err);
        }
        Some(Submitted::Confirmed { enters }) => (Some(true), Some(enters)),
        Some(Submitted::Unconfirmed) => (Some(false), Some(1)),
        None => (None, req.enter.then_some(1)),
    };
    Ok(json!({
        "id": id.to_string(),
        "sent": req.text.len(),
        "confirmed": confirmed,
        "enters": enters,
    }))
}

/// Stop every process of `ids` and remove them from the model, then
/// remove their clean worktrees. Returns the worktrees kept (they hold
/// work) and removed, for the reply. Every close path goes through here
/// (close, tab close, evict, close-idle, an agent's close), so none
/// leaves a worktree behind; each closed session is journaled with
/// `cause` when it is one of `named`, as `cascade` otherwise.
pub(crate) async fn close_sessions(
    daemon: &Arc<Daemon>,
    ids: &[SessionId],
    delete_branch: bool,
    cause: CloseCause,
    named: &[SessionId],
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let worktrees: Vec<_> = {
        daemon.sessions.read(|st| {
            ids.iter()
                .filter_map(|id| Some((id.clone(), st.ws.sessions.get(id)?.worktree.clone()?)))
                .collect()
        })
    };
    daemon.stop_and_remove(ids).await?;
    for id in ids {
        daemon.journal.record(Event::Close {
            session: id.to_string(),
            cause: if named.contains(id) {
                cause
            } else {
                CloseCause::Cascade
            },
        });
    }
    Ok(daemon.clean_up_worktrees(worktrees, delete_branch).await)
}

pub async fn close(daemon: &Arc<Daemon>, req: msg::Close) -> Result<Value, ApiError> {
    let cascade = {
        daemon.sessions.read(|st| {
            let id = st.resolve_session(&req.session)?;
            Ok::<_, ApiError>(st.ws.close_cascade(&id))
        })?
    };
    if cascade.len() > 1 && !req.yes {
        return Err(needs_confirmation(
            format!(
                "closing {} also closes {} linked session(s): {}; pass --yes to close them all",
                short(&cascade[0]),
                cascade.len() - 1,
                cascade[1..]
                    .iter()
                    .map(short)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &cascade,
        ));
    }
    let (kept, removed) = close_sessions(
        daemon,
        &cascade,
        req.delete_branch,
        CloseCause::User,
        &cascade[..1],
    )
    .await?;
    Ok(json!({
        "closed": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        "kept_worktrees": kept,
        "removed_worktrees": removed,
    }))
}

pub(super) fn needs_confirmation(message: String, cascade: &[SessionId]) -> ApiError {
    ApiError {
        code: codes::NEEDS_CONFIRMATION,
        message,
        detail: json!({"would_close": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>()}),
    }
}
