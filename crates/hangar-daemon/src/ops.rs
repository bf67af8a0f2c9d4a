//! The workspace operations behind each request: new, park, bury, pin, close,
//! tabs, send, reload.
//!
//! Each one edits the model through `hangar-core`, persists it before
//! answering (one store transaction), and only then starts or stops
//! processes. The rules themselves (what a close cascades to, where an
//! unburied pane goes) live in `hangar-core`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hangar_core::placement::PanePosition;
use hangar_core::{Direction, Provider, SessionId, SessionMeta, Tab, TabId};
use hangar_protocol::message::{self as msg, codes};
use serde_json::{Value, json};

use crate::Daemon;
use crate::delivery::Submitted;
use crate::journal::{Caller, CloseCause, Event, HibernateReason};
use crate::lifecycle::short;
use crate::provider::{LaunchEnv, resolve_program};
use crate::state::{ApiError, RunState};

/// The gap between typing a prompt and pressing Enter, so a TUI that treats
/// a fast burst as a paste does not swallow the Enter.
const ENTER_DELAY: Duration = Duration::from_millis(30);

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn parse_direction(d: Option<&str>) -> Result<Direction, ApiError> {
    match d.unwrap_or("vertical") {
        "vertical" | "v" => Ok(Direction::Vertical),
        "horizontal" | "h" => Ok(Direction::Horizontal),
        other => Err(ApiError::invalid(format!(
            "direction must be vertical or horizontal, not {other:?}"
        ))),
    }
}

impl Daemon {
    /// The provider `new` uses when none is named: the first agent CLI whose
    /// program is found, else the shell.
    fn default_provider(&self) -> Provider {
        let var = |k: &str| std::env::var(k).ok();
        let env = LaunchEnv {
            config: &self.config,
            var: &var,
            dangerous: false,
            mint: &new_id,
        };
        [Provider::Claude, Provider::Codex, Provider::Opencode]
            .into_iter()
            .find(|p| resolve_program(p, &env).is_ok())
            .unwrap_or(Provider::Shell)
    }

    pub async fn op_new(self: &Arc<Self>, req: msg::NewSession) -> Result<Value, ApiError> {
        let provider = match req.provider.as_deref().map(str::trim) {
            None | Some("") => self.default_provider(),
            Some(p) => {
                let provider = Provider::from_name(p);
                if let Provider::Custom(name) = &provider
                    && !self.config.providers.contains_key(name)
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
        let prepared = self
            .prepare_worktree(&req, worktree_title.unwrap_or(provider.name()))
            .await?;
        let (id, parked) = {
            let mut st = self.lock();
            let tab_id = match &req.tab {
                Some(t) => st.resolve_tab(t)?,
                None => match st.ws.active_tab.clone() {
                    Some(t) => t,
                    None => {
                        let title = req
                            .cwd
                            .as_deref()
                            .or(req.fallback_cwd.as_deref())
                            .and_then(|c| Path::new(c).file_name())
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| "main".to_owned());
                        let mut tab = Tab::new(TabId::new(new_id()), title);
                        tab.cwd = req.cwd.clone().or_else(|| req.fallback_cwd.clone());
                        let id = tab.id.clone();
                        st.ws.add_tab(tab)?;
                        id
                    }
                },
            };
            let cwd = req
                .cwd
                .clone()
                .or_else(|| st.ws.tab(&tab_id).and_then(|t| t.cwd.clone()))
                .or_else(|| req.fallback_cwd.clone())
                .ok_or_else(|| ApiError::invalid("no folder given for the new session (--cwd)"))?;
            if !Path::new(&cwd).is_dir() {
                return Err(ApiError::invalid(format!(
                    "folder {cwd} does not exist; pass an existing --cwd"
                )));
            }
            let id = SessionId::new(new_id());
            let mut meta = SessionMeta::new(id.clone(), provider.clone(), cwd);
            meta.title = req
                .title
                .clone()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| provider.name().to_owned());
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
            (id, req.parked)
        };
        if let Some(failed) = self.adopt_worktree(&id, prepared) {
            return Ok(json!({"id": id.to_string(), "state": failed.name()}));
        }
        let state = if parked {
            RunState::Hibernated
        } else {
            self.wake_as(&id, Caller::New).await?
        };
        Ok(json!({"id": id.to_string(), "state": state.name()}))
    }

    pub fn op_list(&self) -> Value {
        let st = self.lock();
        let rows: Vec<_> = st
            .ordered_session_views()
            .into_iter()
            .map(|mut row| {
                row.usage = self.proxy.usage_view(&row.id);
                row
            })
            .collect();
        drop(st);
        // Activity is read off the state lock: a hibernated session's
        // transcript may be read (never woken).
        let rows: Vec<_> = rows
            .into_iter()
            .map(|mut row| {
                let (activity, since) = self.activity_of(&SessionId::from(row.id.as_str()));
                row.activity = activity.name().to_owned();
                row.activity_since = (since > 0).then_some(since);
                row
            })
            .collect();
        serde_json::to_value(rows).unwrap_or(Value::Null)
    }

    pub fn op_status(&self) -> Value {
        let st = self.lock();
        let view = hangar_protocol::view::StatusView {
            daemon: hangar_protocol::view::DaemonView {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                home: self.paths.home.display().to_string(),
            },
            sessions: st.counts(),
            restore: st.restore.view(),
            dangerous: st.ws.settings.dangerous,
            notices: st.notices.clone(),
            budget: hangar_protocol::view::BudgetView {
                max_live: self.config.governor.max_live,
                max_memory_bytes: self.config.governor.budget().max_memory_bytes,
                live: st
                    .runtimes
                    .iter()
                    .filter(|(id, r)| {
                        r.state == RunState::Live
                            && st
                                .ws
                                .sessions
                                .get(*id)
                                .is_some_and(|m| m.provider.is_agent())
                    })
                    .count(),
                memory_bytes: st.budget.memory_bytes,
                over_budget: st.budget.over_budget,
                reason: st.budget.reason.clone(),
            },
            wake_queue: {
                let q = self.queue.snapshot();
                hangar_protocol::view::WakeQueueView {
                    pending: q.pending,
                    running: q.running,
                    breaker: if q.breaker_open { "open" } else { "closed" }.to_owned(),
                    consecutive_auth_failures: q.consecutive_auth_failures,
                }
            },
            proxy: self.proxy.view(),
            failed: st.failed_views(),
        };
        serde_json::to_value(view).unwrap_or(Value::Null)
    }

    fn touch(&self, id: &SessionId) {
        let mut st = self.lock();
        if let Some(m) = st.ws.sessions.get_mut(id) {
            m.last_active_ms = crate::now_ms();
        }
    }

    pub async fn op_send(self: &Arc<Self>, req: msg::Send) -> Result<Value, ApiError> {
        let id = self.lock().resolve_session(&req.session)?;
        let state = self.wake_as(&id, Caller::Send).await?;
        if let RunState::Failed(reason) = state {
            return Err(ApiError::new(codes::FAILED, reason));
        }
        let live = self
            .lock()
            .runtimes
            .get(&id)
            .and_then(|r| r.proc.clone())
            .ok_or_else(|| {
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
        let before = if req.enter && !req.text.trim().is_empty() && self.expects_turn(&id) {
            self.before_prompt(&id).await
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
            self.wait_echo(&live, &screen_before).await;
            tokio::time::sleep(ENTER_DELAY).await;
            match &before {
                Some(before) => {
                    // The time is taken before the first Enter, so the
                    // agent's reply is never older.
                    let submitted = self
                        .submit(&id, &live, before, |at| self.note_input(&id, at))
                        .await
                        .map_err(write)?;
                    delivery = Some(submitted);
                }
                None => {
                    let typed_at = crate::now_ms();
                    live.write(b"\r").await.map_err(write)?;
                    self.note_input(&id, typed_at);
                }
            }
            self.note_typed(&id, &req.text);
        }
        self.touch(&id);
        // The text is typed: a last-use time the disk cannot take (full,
        // read-only) must not turn a delivered send into an error.
        if let Err(e) = self.lock().save_observed(&[]) {
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

    pub async fn op_park(self: &Arc<Self>, session: &str) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(session)?;
        let tab = st.ws.park(&id, crate::now_ms())?;
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "parked"}))
    }

    pub async fn op_unpark(self: &Arc<Self>, req: msg::Unpark) -> Result<Value, ApiError> {
        let (id, tab) = {
            let mut st = self.lock();
            let id = st.resolve_session(&req.session)?;
            let mut tab = req.tab.as_deref().map(|t| st.resolve_tab(t)).transpose()?;
            let position = match &req.split {
                Some(target) => {
                    let target = st.resolve_session(target)?;
                    if tab.is_none() {
                        tab = st.ws.pane_tab(&target).map(|t| t.id.clone());
                    }
                    PanePosition::Split {
                        target,
                        direction: parse_direction(req.direction.as_deref())?,
                    }
                }
                None => PanePosition::Auto,
            };
            let tab = st.ws.unpark(&id, tab.as_ref(), position)?;
            st.ws.active_tab = Some(tab.clone());
            st.save(&[])?;
            (id, tab)
        };
        let state = self.wake_as(&id, Caller::Unpark).await?;
        Ok(
            json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "pane", "state": state.name()}),
        )
    }

    pub async fn op_bury(self: &Arc<Self>, session: &str) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(session)?;
        let tab = st.ws.bury(&id, crate::now_ms())?;
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "buried"}))
    }

    pub async fn op_unbury(self: &Arc<Self>, session: &str) -> Result<Value, ApiError> {
        let (id, tab) = {
            let mut st = self.lock();
            let id = st.resolve_session(session)?;
            let tab = st
                .ws
                .unbury(&id, || Tab::new(TabId::new(new_id()), "main"))?;
            st.save(&[])?;
            (id, tab)
        };
        let state = self.wake_as(&id, Caller::Unbury).await?;
        Ok(
            json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "pane", "state": state.name()}),
        )
    }

    pub fn op_pin(&self, session: &str, pin: bool) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(session)?;
        if pin {
            st.ws.pin(&id)?;
        } else {
            st.ws.unpin(&id)?;
        }
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "pinned": pin}))
    }

    pub async fn op_wake(self: &Arc<Self>, session: &str) -> Result<Value, ApiError> {
        let id = self.lock().resolve_session(session)?;
        // A retry after the person fixed config.toml (as the failed reason
        // advises) must see the fix: read it again, cheaply, first.
        if matches!(self.lock().run_state(&id), RunState::Failed(_)) {
            self.reload_config()?;
        }
        let state = self.wake(&id).await?;
        self.touch(&id);
        let view = self.lock().session_view(&id);
        match state {
            RunState::Failed(reason) => Err(ApiError {
                code: codes::FAILED,
                message: reason,
                detail: serde_json::to_value(view).unwrap_or(Value::Null),
            }),
            _ => Ok(serde_json::to_value(view).unwrap_or(Value::Null)),
        }
    }

    pub async fn op_hibernate(self: &Arc<Self>, session: &str) -> Result<Value, ApiError> {
        let id = self.lock().resolve_session(session)?;
        self.hibernate_session(&id).await?;
        self.journal.record(Event::Hibernate {
            session: id.to_string(),
            reason: HibernateReason::User,
        });
        let children = self
            .hibernate_idle_children(&id, HibernateReason::User)
            .await;
        Ok(json!({"id": id.to_string(), "state": "hibernated",
            "also_hibernated": children.iter().map(|s| s.to_string()).collect::<Vec<_>>()}))
    }

    /// Stop every process of `ids` and remove them from the model, then
    /// remove their clean worktrees. Returns the worktrees kept (they hold
    /// work) and removed, for the reply. Every close path goes through here
    /// (close, tab close, evict, close-idle, an agent's close), so none
    /// leaves a worktree behind; each closed session is journaled with
    /// `cause` when it is one of `named`, as `cascade` otherwise.
    pub(crate) async fn close_sessions(
        self: &Arc<Self>,
        ids: &[SessionId],
        delete_branch: bool,
        cause: CloseCause,
        named: &[SessionId],
    ) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
        let worktrees: Vec<_> = {
            let st = self.lock();
            ids.iter()
                .filter_map(|id| Some((id.clone(), st.ws.sessions.get(id)?.worktree.clone()?)))
                .collect()
        };
        self.stop_and_remove(ids).await?;
        for id in ids {
            self.journal.record(Event::Close {
                session: id.to_string(),
                cause: if named.contains(id) {
                    cause
                } else {
                    CloseCause::Cascade
                },
            });
        }
        Ok(self.clean_up_worktrees(worktrees, delete_branch).await)
    }

    pub async fn op_close(self: &Arc<Self>, req: msg::Close) -> Result<Value, ApiError> {
        let cascade = {
            let st = self.lock();
            let id = st.resolve_session(&req.session)?;
            st.ws.close_cascade(&id)
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
        let (kept, removed) = self
            .close_sessions(&cascade, req.delete_branch, CloseCause::User, &cascade[..1])
            .await?;
        Ok(json!({
            "closed": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "kept_worktrees": kept,
            "removed_worktrees": removed,
        }))
    }

    pub fn op_tab_new(&self, req: msg::TabNew) -> Result<Value, ApiError> {
        if req.title.trim().is_empty() {
            return Err(ApiError::invalid("a tab needs a title"));
        }
        if let Some(cwd) = &req.cwd
            && !Path::new(cwd).is_dir()
        {
            return Err(ApiError::invalid(format!("folder {cwd} does not exist")));
        }
        let mut st = self.lock();
        let mut tab = Tab::new(TabId::new(new_id()), req.title.trim());
        tab.cwd = req.cwd;
        let id = tab.id.clone();
        st.ws.add_tab(tab)?;
        st.ws.active_tab = Some(id.clone());
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "title": req.title.trim()}))
    }

    pub fn op_tab_list(&self) -> Value {
        serde_json::to_value(self.lock().tab_views()).unwrap_or(Value::Null)
    }

    pub async fn op_tab_close(self: &Arc<Self>, req: msg::TabClose) -> Result<Value, ApiError> {
        let (tab, cascade) = {
            let st = self.lock();
            let tab = st.resolve_tab(&req.tab)?;
            let cascade = st.ws.tab_close_cascade(&tab)?;
            (tab, cascade)
        };
        if !cascade.is_empty() && !req.yes {
            return Err(needs_confirmation(
                format!(
                    "closing this tab closes {} session(s) (its panes and parked agents): {}; pass --yes to close them",
                    cascade.len(),
                    cascade.iter().map(short).collect::<Vec<_>>().join(", ")
                ),
                &cascade,
            ));
        }
        let (kept, removed) = self
            .close_sessions(&cascade, false, CloseCause::Tab, &cascade)
            .await?;
        let mut st = self.lock();
        st.ws.remove_tab(&tab)?;
        st.save(&[])?;
        Ok(
            json!({"tab": tab.to_string(), "closed": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "kept_worktrees": kept, "removed_worktrees": removed}),
        )
    }

    pub fn op_tab_rename(&self, req: msg::TabRename) -> Result<Value, ApiError> {
        if req.title.trim().is_empty() {
            return Err(ApiError::invalid("a tab needs a title"));
        }
        let mut st = self.lock();
        let tab = st.resolve_tab(&req.tab)?;
        if let Some(t) = st.ws.tab_mut(&tab) {
            t.title = req.title.trim().to_owned();
        }
        st.save(&[])?;
        Ok(json!({"id": tab.to_string(), "title": req.title.trim()}))
    }

    /// Store the setting, then restart live agent sessions one at a time
    /// under the same ids. Hibernated sessions pick it up when they wake.
    pub async fn op_reload(self: &Arc<Self>, req: msg::Reload) -> Result<Value, ApiError> {
        let config = self.reload_config()?;
        let live_agents: Vec<SessionId> = {
            let mut st = self.lock();
            if let Some(d) = req.dangerous {
                st.ws.settings.dangerous = d;
            }
            st.save(&[])?;
            st.ordered_sessions()
                .into_iter()
                .filter(|id| {
                    st.ws
                        .sessions
                        .get(id)
                        .is_some_and(|m| self.restarts_on_reload(&m.provider))
                        && matches!(st.run_state(id), RunState::Live | RunState::Spawning)
                })
                .collect()
        };
        let mut restarted = Vec::new();
        let mut failed = Vec::new();
        for id in live_agents {
            self.hibernate_session(&id).await?;
            self.journal.record(Event::Hibernate {
                session: id.to_string(),
                reason: HibernateReason::Reload,
            });
            match self.wake_as(&id, Caller::Reload).await? {
                RunState::Failed(reason) => {
                    failed.push(json!({"id": id.to_string(), "reason": reason}))
                }
                _ => restarted.push(id.to_string()),
            }
        }
        let dangerous = self.lock().ws.settings.dangerous;
        self.journal.record(Event::Reload {
            dangerous,
            restarted: restarted.len(),
            failed: failed.len(),
        });
        Ok(
            json!({"dangerous": dangerous, "restarted": restarted, "failed": failed,
            "config": {"changed": config.changed, "needs_restart": config.needs_restart}}),
        )
    }

    pub fn op_screen(&self, session: &str, scrollback: Option<u32>) -> Result<Value, ApiError> {
        let st = self.lock();
        let id = st.resolve_session(session)?;
        let live = st.runtimes.get(&id).and_then(|r| r.proc.clone());
        let lines = scrollback.map(|n| n as usize);
        let (text, history, source) = match live {
            Some(l) => (l.text(), lines.map(|n| l.scrollback(n)), "live"),
            None => {
                let saved = st.store.load_screen(&id)?.unwrap_or_default();
                let t = hangar_terminal::Terminal::restore(&saved, self.config.terminal.model());
                (t.screen_text(), lines.map(|n| t.scrollback(n)), "saved")
            }
        };
        let mut reply = json!({"id": id.to_string(), "screen": text, "source": source});
        if let Some(history) = history {
            reply["history"] = json!(history);
        }
        Ok(reply)
    }
}

fn needs_confirmation(message: String, cascade: &[SessionId]) -> ApiError {
    ApiError {
        code: codes::NEEDS_CONFIRMATION,
        message,
        detail: json!({"would_close": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>()}),
    }
}
